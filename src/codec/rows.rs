//! Many rows of one page at once: the sketches [`decode_row`] gives row by row, read column by
//! column. A page stores each slot's values of all its rows together, so reading a slot for a
//! run of rows is one sequential pass where row-by-row decoding strides over every column.

use super::error::CodecError;
use super::layout::ColumnLayout;
use super::page::{PageView, read_le};
use super::record::decode_row;
use crate::sketch::bbit::BBitMinHash;
use crate::sketch::minhash::MinHash;
use crate::sketch::oph::OphSketch;
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
    if &layout != page.layout() || rows.iter().any(|&i| page.check_row(i).is_err()) {
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
        }
    }
}
