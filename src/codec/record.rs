//! One row of columns <-> a [`Sketch`].
//!
//! Encoding reads the sketch through its public accessors; decoding always goes through the
//! kind's `from_parts`, so a corrupt value is an error, never a wrong sketch.

use super::error::CodecError;
use super::layout::ColumnLayout;
use super::page::{PageBuilder, PageView};
use crate::sketch::bbit::BBitMinHash;
use crate::sketch::minhash::MinHash;
use crate::sketch::oph::OphSketch;
use crate::sketch::params::{SketchKind, SketchParams};
use crate::sketch::simhash::SimHash;
use crate::sketch::sketcher::Sketch;

const WHAT: &str = "record";

/// Appends `sketch` with `key` as the next row of `page` and returns its row id. The sketch's
/// layout must be the page's (callers check parameter compatibility first, for a better
/// error).
pub(crate) fn push_sketch(page: &mut PageBuilder, key: &[u8], sketch: &Sketch) -> Result<u64, CodecError> {
    let layout = ColumnLayout::for_params(sketch.params());
    if layout != page.spec().layout {
        return Err(CodecError::field(WHAT, "layout", format!("{layout:?}"), format!("{:?}", page.spec().layout)));
    }
    let row_id = page.next_row();
    let i = page.begin_row(key)?;
    write_cells(sketch, |cell, v| match cell {
        Cell::Value(j) => page.set_value(j, i, v),
        Cell::Word(j) => page.set_word(j, i, v),
        Cell::Cardinality => page.set_cardinality(i, v),
    });
    Ok(row_id)
}

/// One cell of a record: value column `j`, word column `j`, or the cardinality.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cell {
    Value(usize),
    Word(usize),
    Cardinality,
}

/// Every cell of `sketch`'s record in column order, as `(cell, value)` (a value is cut to
/// the layout's width by whoever stores it). The one place that maps a sketch to its columns.
pub(crate) fn write_cells(sketch: &Sketch, mut put: impl FnMut(Cell, u64)) {
    match sketch {
        Sketch::MinHash(s) => {
            for (j, &v) in s.values().iter().enumerate() {
                put(Cell::Value(j), v);
            }
            put(Cell::Cardinality, s.cardinality());
        }
        Sketch::BBit(s) => {
            for (j, &w) in s.words().iter().enumerate() {
                put(Cell::Value(j), w);
            }
            put(Cell::Cardinality, s.cardinality());
        }
        Sketch::Oph(s) => {
            for (j, &v) in s.bins().iter().enumerate() {
                put(Cell::Value(j), u64::from(v));
            }
            for (j, &w) in s.empty_bitmap().iter().enumerate() {
                put(Cell::Word(j), w);
            }
            put(Cell::Cardinality, s.cardinality());
        }
        Sketch::SimHash(s) => {
            let v = s.value();
            put(Cell::Value(0), v as u64);
            if s.params().bits() > 64 {
                put(Cell::Value(1), (v >> 64) as u64);
            }
        }
    }
}

/// A page's columns as row decoding reads them: a stored page ([`PageView`]) or one being
/// built ([`PageBuilder`], whose rows a delete reads before tombstoning them).
pub(crate) trait RowColumns {
    /// The page's column layout.
    fn layout(&self) -> &ColumnLayout;
    /// Fails unless `i` is a row of the page.
    fn check_row(&self, i: usize) -> Result<(), CodecError>;
    /// Entry `i` of value column `j`, zero-extended.
    fn value(&self, j: usize, i: usize) -> u64;
    /// Entry `i` of word column `j`.
    fn word(&self, j: usize, i: usize) -> u64;
    /// Row `i`'s cardinality, if the layout has one.
    fn cardinality(&self, i: usize) -> Option<u64>;
}

impl RowColumns for PageView<'_> {
    fn layout(&self) -> &ColumnLayout {
        PageView::layout(self)
    }
    fn check_row(&self, i: usize) -> Result<(), CodecError> {
        PageView::check_row(self, i)
    }
    fn value(&self, j: usize, i: usize) -> u64 {
        PageView::value(self, j, i)
    }
    fn word(&self, j: usize, i: usize) -> u64 {
        PageView::word(self, j, i)
    }
    fn cardinality(&self, i: usize) -> Option<u64> {
        PageView::cardinality(self, i)
    }
}

impl RowColumns for PageBuilder {
    fn layout(&self) -> &ColumnLayout {
        &self.spec().layout
    }
    fn check_row(&self, i: usize) -> Result<(), CodecError> {
        if i >= self.row_count() {
            return Err(CodecError::RowOutOfRange { index: i, rows: self.row_count() });
        }
        Ok(())
    }
    fn value(&self, j: usize, i: usize) -> u64 {
        PageBuilder::value(self, j, i)
    }
    fn word(&self, j: usize, i: usize) -> u64 {
        PageBuilder::word(self, j, i)
    }
    fn cardinality(&self, i: usize) -> Option<u64> {
        PageBuilder::cardinality(self, i)
    }
}

/// Decodes row index `i` of `page` as a sketch with `params`.
pub(crate) fn decode_row(page: &impl RowColumns, i: usize, params: &SketchParams) -> Result<Sketch, CodecError> {
    page.check_row(i)?;
    let layout = ColumnLayout::for_params(params);
    if &layout != page.layout() {
        return Err(CodecError::field(WHAT, "layout", format!("{:?}", page.layout()), format!("{layout:?}")));
    }
    let values = || (0..usize::from(layout.value_cols)).map(|j| page.value(j, i)).collect::<Vec<u64>>();
    let cardinality = page.cardinality(i).unwrap_or(0);
    let sketch_err = |source| CodecError::Sketch { what: WHAT, source };
    let sketch = match params.kind() {
        SketchKind::MinHash => {
            Sketch::MinHash(MinHash::from_parts(*params, values(), cardinality).map_err(sketch_err)?)
        }
        SketchKind::BBitMinHash => {
            Sketch::BBit(BBitMinHash::from_parts(*params, values(), cardinality).map_err(sketch_err)?)
        }
        SketchKind::Oph => {
            let bins = (0..usize::from(layout.value_cols))
                .map(|j| u32::try_from(page.value(j, i)).unwrap_or(u32::MAX))
                .collect();
            let empty = (0..usize::from(layout.word_cols)).map(|j| page.word(j, i)).collect();
            Sketch::Oph(OphSketch::from_parts(*params, bins, empty, cardinality).map_err(sketch_err)?)
        }
        SketchKind::SimHash => {
            let lo = u128::from(page.value(0, i));
            let hi = if layout.value_cols > 1 { u128::from(page.value(1, i)) } else { 0 };
            Sketch::SimHash(SimHash::from_parts(*params, lo | hi << 64).map_err(sketch_err)?)
        }
    };
    Ok(sketch)
}
