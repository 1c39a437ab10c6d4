//! One row of columns <-> a [`Sketch`].
//!
//! Encoding reads the sketch through its public accessors; decoding always goes through the
//! kind's `from_parts`, so a corrupt value is an error, never a wrong sketch.

use super::error::CodecError;
use super::layout::ColumnLayout;
use super::page::PageView;
use super::page_builder::PageBuilder;
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
    let cells = page.begin_row_cells(key)?;
    encode_cells(sketch, &layout, cells);
    Ok(row_id)
}

/// Writes `sketch`'s cells into `out` in signature order (see [`super::signature`]):
/// `layout`'s value columns, then its word columns, then the cardinality, each cut to its
/// column's width. `out` is `layout.record_width()` bytes (cells past its end are dropped).
/// The one place that maps a sketch to its cells; every stored record is written through it
/// (a page stages its rows in this order), so it runs once per insert.
pub(crate) fn encode_cells(sketch: &Sketch, layout: &ColumnLayout, out: &mut [u8]) {
    let w = usize::from(layout.value_width);
    let (values, rest) = out.split_at_mut(layout.words_prefix().min(out.len()));
    match sketch {
        Sketch::MinHash(s) => {
            put_values(values, w, s.values());
            put_values(rest, 8, &[s.cardinality()]);
        }
        Sketch::BBit(s) => {
            put_values(values, w, s.words());
            put_values(rest, 8, &[s.cardinality()]);
        }
        Sketch::Oph(s) => {
            put_values(values, w, s.bins());
            let words = s.empty_bitmap();
            put_values(rest, 8, words);
            put_values(rest.get_mut(8 * words.len()..).unwrap_or_default(), 8, &[s.cardinality()]);
        }
        Sketch::SimHash(s) => {
            let v = s.value();
            put_values(values, w, &[v as u64, (v >> 64) as u64]);
        }
    }
}

/// Writes `vals` into consecutive `w`-byte little-endian cells of `out` (each value cut to
/// `w` bytes), as many as both hold.
fn put_values<T: Copy + Into<u64>>(out: &mut [u8], w: usize, vals: &[T]) {
    fn cells<const W: usize, T: Copy + Into<u64>>(out: &mut [u8], vals: &[T]) {
        for (d, &v) in out.chunks_exact_mut(W).zip(vals) {
            d.copy_from_slice(&v.into().to_le_bytes()[..W]);
        }
    }
    match w {
        // One byte a cell (8-bit bins): a plain narrowing loop, which vectorizes.
        1 => out.iter_mut().zip(vals).for_each(|(d, &v)| *d = v.into() as u8),
        2 => cells::<2, T>(out, vals),
        4 => cells::<4, T>(out, vals),
        _ => cells::<8, T>(out, vals),
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
