//! Many rows of one page at once: the sketches [`decode_row`] gives row by row, read column by
//! column. A page stores each slot's values of all its rows together, so reading a slot for a
//! run of rows is one sequential pass where row-by-row decoding strides over every column.

use super::error::CodecError;
use super::layout::ColumnLayout;
use super::page::{PageView, read_le};
use super::record::decode_row;
use crate::sketch::bbit::BBitMinHash;
use crate::sketch::error::SketchError;
use crate::sketch::minhash::MinHash;
use crate::sketch::oph::OphSketch;
use crate::sketch::oph_column::OphColumn;
use crate::sketch::params::{SketchKind, SketchParams};
use crate::sketch::sketcher::Sketch;

const WHAT: &str = "record";

/// Entry `i` of a column of `width`-byte little-endian entries (0 out of range, as
/// [`PageView::value`]).
#[inline(always)]
fn entry(col: &[u8], width: usize, i: usize) -> u64 {
    match width {
        1 => col.get(i).map_or(0, |&b| u64::from(b)),
        2 => col.get(i * 2..i * 2 + 2).map_or(0, |b| u64::from(u16::from_le_bytes([b[0], b[1]]))),
        4 => col.get(i * 4..i * 4 + 4).map_or(0, |b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        _ => col.get(i * width..i * width + width).map_or(0, read_le),
    }
}

/// The sketches of the rows `rows` of `page`, in the order given: each equal to
/// `decode_row(page, rows[n], params)`. On failure, the position in `rows` of the first row
/// that fails and its error (the error `decode_row` gives for it).
pub(crate) fn decode_rows(
    page: &PageView<'_>,
    rows: &[usize],
    params: &SketchParams,
) -> Result<Vec<Sketch>, (usize, CodecError)> {
    let layout = ColumnLayout::for_params(params);
    if !column_wise(page, rows, &layout) {
        return rows.iter().enumerate().map(|(n, &i)| decode_row(page, i, params).map_err(|e| (n, e))).collect();
    }
    let k = usize::from(layout.value_cols);
    let words = usize::from(layout.word_cols);
    let sketch_err = |n: usize| move |source| (n, CodecError::Sketch { what: WHAT, source });
    let mut out = Vec::with_capacity(rows.len());
    match params.kind() {
        SketchKind::MinHash | SketchKind::BBitMinHash => {
            let mut values: Vec<Vec<u64>> = rows.iter().map(|_| vec![0; k]).collect();
            gather(page, rows, &mut values, |x| x);
            for (n, (&i, v)) in rows.iter().zip(values).enumerate() {
                let cardinality = page.cardinality(i).unwrap_or(0);
                out.push(if params.kind() == SketchKind::MinHash {
                    Sketch::MinHash(MinHash::from_parts(*params, v, cardinality).map_err(sketch_err(n))?)
                } else {
                    Sketch::BBit(BBitMinHash::from_parts(*params, v, cardinality).map_err(sketch_err(n))?)
                });
            }
        }
        SketchKind::Oph => {
            let mut bins: Vec<Vec<u32>> = rows.iter().map(|_| vec![0; k]).collect();
            gather(page, rows, &mut bins, |x| u32::try_from(x).unwrap_or(u32::MAX));
            for (n, (&i, bins)) in rows.iter().zip(bins).enumerate() {
                let cardinality = page.cardinality(i).unwrap_or(0);
                let empty = (0..words).map(|j| page.word(j, i)).collect();
                out.push(Sketch::Oph(OphSketch::from_parts(*params, bins, empty, cardinality).map_err(sketch_err(n))?));
            }
        }
        // One or two value columns: nothing to gain over the row's own decoding.
        SketchKind::SimHash => {
            for (n, &i) in rows.iter().enumerate() {
                out.push(decode_row(page, i, params).map_err(|e| (n, e))?);
            }
        }
    }
    Ok(out)
}

/// Whether `rows` of `page` can be read down its columns as `layout`'s: the page has that
/// layout and holds every row (else each row is decoded on its own, for `decode_row`'s error).
fn column_wise(page: &PageView<'_>, rows: &[usize], layout: &ColumnLayout) -> bool {
    layout == page.layout() && rows.iter().all(|&i| page.check_row(i).is_ok())
}

/// The OPH rows `rows` of `page` appended to `column` (a column of the page's parameters), in
/// the order given, each the sketch `decode_row(page, rows[n], column.params())` gives, with
/// no [`OphSketch`] built per row: the bins are gathered into `scratch` (one vector per row,
/// reused from call to call) and checked as [`OphSketch::from_parts`] checks them. On
/// failure, the position in `rows` of the first row that fails and the error `decode_rows`
/// gives for it; the rows before it are appended.
pub(crate) fn decode_oph_rows_into(
    page: &PageView<'_>,
    rows: &[usize],
    column: &mut OphColumn,
    scratch: &mut Vec<Vec<u32>>,
) -> Result<(), (usize, CodecError)> {
    let params = *column.params();
    let layout = ColumnLayout::for_params(&params);
    let sketch_err = |n: usize| move |source| (n, CodecError::Sketch { what: WHAT, source });
    if !column_wise(page, rows, &layout) {
        for (n, &i) in rows.iter().enumerate() {
            match decode_row(page, i, &params).map_err(|e| (n, e))? {
                Sketch::Oph(s) => column.push(&s).map_err(sketch_err(n))?,
                other => {
                    let e = SketchError::incompatible("kind", SketchKind::Oph, other.kind());
                    return Err(sketch_err(n)(e));
                }
            }
        }
        return Ok(());
    }
    let k = usize::from(layout.value_cols);
    scratch.resize_with(rows.len(), Vec::new);
    let bins = &mut scratch[..rows.len()];
    bins.iter_mut().for_each(|b| b.resize(k, 0));
    gather(page, rows, bins, |x| u32::try_from(x).unwrap_or(u32::MAX));
    let mut empty = vec![0u64; usize::from(layout.word_cols)];
    for (n, (&i, bins)) in rows.iter().zip(bins.iter()).enumerate() {
        let cardinality = page.cardinality(i).unwrap_or(0);
        empty.iter_mut().enumerate().for_each(|(j, w)| *w = page.word(j, i));
        column.push_parts(bins, &empty, cardinality).map_err(sketch_err(n))?;
    }
    Ok(())
}

/// Sets `out[n][j]` to entry `rows[n]` of value column `j` of `page`, converted by `conv`,
/// for every `j` below `out[n].len()` (the layout's value columns): one pass down each
/// column, the entry width fixed per loop.
fn gather<T>(page: &PageView<'_>, rows: &[usize], out: &mut [Vec<T>], conv: impl Fn(u64) -> T + Copy) {
    match usize::from(page.layout().value_width) {
        1 => gather_width::<1, T>(page, rows, out, conv),
        2 => gather_width::<2, T>(page, rows, out, conv),
        4 => gather_width::<4, T>(page, rows, out, conv),
        8 => gather_width::<8, T>(page, rows, out, conv),
        _ => gather_width::<0, T>(page, rows, out, conv),
    }
}

/// [`gather`] of `W`-byte entries (`W = 0`: the layout's width, whatever it is).
#[inline(always)]
fn gather_width<const W: usize, T>(page: &PageView<'_>, rows: &[usize], out: &mut [Vec<T>], conv: impl Fn(u64) -> T) {
    let width = if W == 0 { usize::from(page.layout().value_width) } else { W };
    let k = out.first().map_or(0, Vec::len);
    for j in 0..k {
        let col = page.value_column(j);
        for (o, &i) in out.iter_mut().zip(rows) {
            o[j] = conv(entry(col, width, i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::page::PageSpec;
    use crate::codec::page_builder::PageBuilder;
    use crate::codec::record::push_sketch;
    use crate::sketch::sketcher::Sketcher;
    use crate::sketch::tokens::TokenSet;

    /// Every kind and width: `decode_rows` equals `decode_row` row by row for any subset of
    /// the rows in any order, and a row past the end fails at its own position with
    /// `decode_row`'s error.
    #[test]
    fn equals_row_by_row_for_every_kind() {
        let mut all = vec![];
        for bits in [32, 64] {
            all.push(SketchParams::minhash(128, bits, 7).unwrap());
        }
        for b in [1, 2, 4, 8, 16, 32] {
            all.push(SketchParams::bbit(100, b, 7).unwrap());
        }
        for bits in [8, 16, 32] {
            all.push(SketchParams::oph(200, bits, 7).unwrap());
            all.push(SketchParams::oph(64, bits, 7).unwrap());
        }
        all.push(SketchParams::simhash(128, 7).unwrap());
        for params in all {
            let spec = PageSpec { collection_id: 9, layout: ColumnLayout::for_params(&params), capacity: 40 };
            let s = Sketcher::new(params).unwrap();
            let mut b = PageBuilder::new(spec, 3);
            for i in 0..31u64 {
                let tokens = (0..1 + (i * 7) % 300).map(|t| t * 1_000_003 + i).collect();
                push_sketch(&mut b, format!("k{i}").as_bytes(), &s.sketch(&TokenSet::from_unsorted(tokens)).unwrap())
                    .unwrap();
            }
            let bytes = b.finish();
            let view = PageView::parse_expected(&bytes, &spec, 3).unwrap();
            for rows in [(0..31).collect::<Vec<_>>(), vec![30, 2, 2, 17], vec![], vec![5]] {
                let want: Vec<Sketch> = rows.iter().map(|&i| decode_row(&view, i, &params).unwrap()).collect();
                assert_eq!(decode_rows(&view, &rows, &params).unwrap(), want, "{params} rows {rows:?}");
            }
            let (at, e) = decode_rows(&view, &[1, 4, 31, 2], &params).unwrap_err();
            assert_eq!(at, 2, "{params}");
            assert!(matches!(e, CodecError::RowOutOfRange { index: 31, rows: 31 }), "{params}: {e:?}");
            if params.kind() == SketchKind::Oph {
                oph_rows_into_a_column_equal_the_decoded_rows(&view, &params);
            }
        }
    }

    /// `decode_oph_rows_into` holds the rows `decode_rows` gives, across calls sharing one
    /// scratch (a shorter call after a longer one), and stops at the first bad row.
    fn oph_rows_into_a_column_equal_the_decoded_rows(view: &PageView<'_>, params: &SketchParams) {
        let mut scratch = Vec::new();
        let mut column = OphColumn::new(*params).unwrap();
        let calls = [(0..16).collect::<Vec<_>>(), vec![30, 2, 2], vec![], (16..31).collect()];
        let mut want = vec![];
        for rows in &calls {
            decode_oph_rows_into(view, rows, &mut column, &mut scratch).unwrap();
            want.extend(decode_rows(view, rows, params).unwrap());
        }
        assert_eq!(column.len(), want.len(), "{params}");
        for (i, w) in want.iter().enumerate() {
            assert_eq!(&Sketch::Oph(column.sketch(i).unwrap()), w, "{params} row {i}");
        }
        let (at, e) = decode_oph_rows_into(view, &[1, 31], &mut column, &mut scratch).unwrap_err();
        assert_eq!(at, 1, "{params}");
        assert!(matches!(e, CodecError::RowOutOfRange { index: 31, rows: 31 }), "{params}: {e:?}");
        assert_eq!(column.len(), want.len() + 1, "{params}: the row before the bad one is appended");
    }
}
