//! A signature's fixed-width bytes: one record's cells in column order, each at its column's
//! width, little-endian. These are exactly the bytes a collection stores for the record
//! (spread over its page's columns), so a signature computed anywhere (an Arrow kernel, a
//! Spark executor) is byte-identical to the stored one and decodes through the same
//! `from_parts` checks.
//!
//! ```text
//! bytes = value_0 .. value_{V-1}   (V values of `value_width` bytes: 1, 2, 4 or 8)
//!      ++ word_0 .. word_{W-1}     (W u64 words: OPH's empty-bin bitmap)
//!      ++ cardinality              (u64; set sketches only, not SimHash)
//! ```

use super::error::CodecError;
use super::layout::ColumnLayout;
use super::record::{RowColumns, decode_row, encode_cells};
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::Sketch;

const WHAT: &str = "signature";

/// The bytes of one signature of sketches with `params` (the collection's record width).
pub fn width(params: &SketchParams) -> usize {
    ColumnLayout::for_params(params).record_width()
}

/// Writes `sketch`'s signature bytes into `out`, which must be exactly [`width`] bytes.
pub fn encode_into(sketch: &Sketch, out: &mut [u8]) -> Result<(), CodecError> {
    let layout = ColumnLayout::for_params(sketch.params());
    if out.len() != layout.record_width() {
        return Err(CodecError::field(WHAT, "length", out.len(), layout.record_width()));
    }
    encode_cells(sketch, &layout, out);
    Ok(())
}

/// `sketch`'s signature bytes ([`width`] of its parameters).
pub fn encode(sketch: &Sketch) -> Vec<u8> {
    let mut out = vec![0u8; width(sketch.params())];
    // The buffer has the layout's width, the only failure of `encode_into`.
    let _ = encode_into(sketch, &mut out);
    out
}

/// The sketch with `params` whose signature bytes are `bytes`: a wrong length or a value
/// `from_parts` refuses is an error, never a wrong sketch.
pub fn decode(params: &SketchParams, bytes: &[u8]) -> Result<Sketch, CodecError> {
    let layout = ColumnLayout::for_params(params);
    if bytes.len() != layout.record_width() {
        return Err(CodecError::field(WHAT, "length", bytes.len(), layout.record_width()));
    }
    decode_row(&OneRow { layout, bytes }, 0, params)
}

/// One signature's bytes read as a page of one row.
struct OneRow<'a> {
    layout: ColumnLayout,
    bytes: &'a [u8],
}

impl OneRow<'_> {
    fn read(&self, at: usize, width: usize) -> u64 {
        let mut b = [0u8; 8];
        if let Some(s) = self.bytes.get(at..at + width) {
            b[..width].copy_from_slice(s);
        }
        u64::from_le_bytes(b)
    }
}

impl RowColumns for OneRow<'_> {
    fn layout(&self) -> &ColumnLayout {
        &self.layout
    }
    fn check_row(&self, i: usize) -> Result<(), CodecError> {
        if i != 0 {
            return Err(CodecError::RowOutOfRange { index: i, rows: 1 });
        }
        Ok(())
    }
    fn value(&self, j: usize, _i: usize) -> u64 {
        let w = usize::from(self.layout.value_width);
        self.read(j * w, w)
    }
    fn word(&self, j: usize, _i: usize) -> u64 {
        self.read(self.layout.words_prefix() + 8 * j, 8)
    }
    fn cardinality(&self, _i: usize) -> Option<u64> {
        self.layout.has_cardinality.then(|| self.read(self.layout.cardinality_prefix(), 8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::page::{PageSpec, PageView};
    use crate::codec::page_builder::PageBuilder;
    use crate::codec::record::push_sketch;
    use crate::sketch::sketcher::Sketcher;

    fn all_params() -> Vec<SketchParams> {
        let mut v = Vec::new();
        for bits in [32, 64] {
            v.push(SketchParams::minhash(37, bits, 9).unwrap());
        }
        for b in [1, 2, 4, 8, 16, 32] {
            v.push(SketchParams::bbit(37, b, 9).unwrap());
        }
        for bits in [8, 16, 32] {
            v.push(SketchParams::oph(70, bits, 9).unwrap());
        }
        for bits in [64, 128] {
            v.push(SketchParams::simhash(bits, 9).unwrap());
        }
        v
    }

    /// Each row of a stored page, gathered from its columns, is the row's signature bytes;
    /// and the bytes decode to the sketch.
    #[test]
    fn signature_bytes_are_the_stored_cells_and_round_trip() {
        for params in all_params() {
            let sketcher = Sketcher::new(params).unwrap();
            let sketches: Vec<Sketch> = (0..5u64)
                .map(|i| sketcher.sketch_multiset(&(i * 7..i * 7 + 3 + 20 * i).collect::<Vec<_>>()).unwrap())
                .collect();
            let layout = ColumnLayout::for_params(&params);
            let spec = PageSpec { collection_id: 3, layout, capacity: 8 };
            let mut page = PageBuilder::new(spec, 0);
            for (i, s) in sketches.iter().enumerate() {
                push_sketch(&mut page, format!("k{i}").as_bytes(), s).unwrap();
            }
            let bytes = page.finish();
            let view = PageView::parse_expected(&bytes, &spec, 0).unwrap();
            for (i, s) in sketches.iter().enumerate() {
                let sig = encode(s);
                assert_eq!(sig.len(), width(&params));
                let w = usize::from(layout.value_width);
                let mut gathered = Vec::new();
                for j in 0..usize::from(layout.value_cols) {
                    gathered.extend_from_slice(&view.value(j, i).to_le_bytes()[..w]);
                }
                for j in 0..usize::from(layout.word_cols) {
                    gathered.extend_from_slice(&view.word(j, i).to_le_bytes());
                }
                if let Some(c) = view.cardinality(i) {
                    gathered.extend_from_slice(&c.to_le_bytes());
                }
                assert_eq!(sig, gathered, "{params:?} row {i}");
                assert_eq!(&decode(&params, &sig).unwrap(), s, "{params:?} row {i}");
            }
        }
    }

    #[test]
    fn bad_signature_bytes_are_errors() {
        let params = SketchParams::minhash(4, 32, 1).unwrap();
        assert!(decode(&params, &[0u8; 3]).is_err());
        assert!(encode_into(&Sketcher::new(params).unwrap().sketch_multiset(&[1, 2]).unwrap(), &mut [0u8; 5]).is_err());
        let oph = SketchParams::oph(64, 8, 1).unwrap();
        // A bin marked empty must hold 0: a non-zero empty bin is refused by `from_parts`.
        let mut sig = vec![0u8; width(&oph)];
        sig[0] = 7;
        sig[64] = 1;
        assert!(decode(&oph, &sig).is_err());
    }
}
