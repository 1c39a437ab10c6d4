//! OPH sketches of one parameter set held as columns: what an in-memory self-join keeps of
//! every record instead of one [`OphSketch`] (two allocations, bins as u32) per record.

use super::densify::densify_into;
use super::error::SketchError;
use super::oph::{OphSketch, check_parts, densify_key, oph_value};
use super::params::{SketchKind, SketchParams};

/// The bins of n sketches, t per sketch, row-major, in the narrowest type holding the
/// parameters' `bits` (8, 16 or 32).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bins {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

/// `$body` with `$v` bound to the bin column, whatever its type.
macro_rules! with_bins {
    ($bins:expr, $v:ident => $body:expr) => {
        match $bins {
            Bins::U8($v) => $body,
            Bins::U16($v) => $body,
            Bins::U32($v) => $body,
        }
    };
}

/// OPH sketches of one parameter set in three columns: the bins (1, 2 or 4 bytes each for 8,
/// 16 or 32 bits), the empty-bin bitmaps (t / 64 words, rounded up, per sketch) and the
/// cardinalities. 512 bins of 8 bits take 512 + 64 + 8 bytes per sketch where an
/// [`OphSketch`] holds 2 KB of bins and a bitmap in two allocations.
///
/// Invariant: every row is an [`OphSketch`] of `params` (it was pushed from one), so its
/// values fit the bin type, its empty bins hold 0 and its cardinality is 0 exactly when all
/// its bins are empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OphColumn {
    params: SketchParams,
    bins: Bins,
    empty: Vec<u64>,
    cards: Vec<u64>,
}

impl OphColumn {
    /// An empty column for sketches of `params` (an OPH parameter set).
    pub(crate) fn new(params: SketchParams) -> Result<OphColumn, SketchError> {
        params.validate()?;
        if params.kind() != SketchKind::Oph {
            return Err(SketchError::incompatible("kind", SketchKind::Oph, params.kind()));
        }
        let bins = match params.bits() {
            8 => Bins::U8(Vec::new()),
            16 => Bins::U16(Vec::new()),
            _ => Bins::U32(Vec::new()),
        };
        Ok(OphColumn { params, bins, empty: Vec::new(), cards: Vec::new() })
    }

    /// The parameters of every sketch held.
    pub(crate) fn params(&self) -> &SketchParams {
        &self.params
    }

    /// Sketches held.
    pub(crate) fn len(&self) -> usize {
        self.cards.len()
    }

    fn slots(&self) -> usize {
        self.params.slots()
    }

    fn words(&self) -> usize {
        self.slots().div_ceil(64)
    }

    /// Appends `s` as the next row; a sketch of other parameters is refused.
    pub(crate) fn push(&mut self, s: &OphSketch) -> Result<(), SketchError> {
        self.params.check_compatible(s.params())?;
        // A sketch of these parameters holds valid parts.
        self.append_row(s.bins(), s.empty_bitmap(), s.cardinality());
        Ok(())
    }

    /// Appends a row whose parts are those of a valid OPH sketch of the column's parameters.
    fn append_row(&mut self, bins: &[u32], empty: &[u64], cardinality: u64) {
        // The values fit: they are below 2^bits, the type's width.
        match &mut self.bins {
            Bins::U8(v) => v.extend(bins.iter().map(|&b| b as u8)),
            Bins::U16(v) => v.extend(bins.iter().map(|&b| b as u16)),
            Bins::U32(v) => v.extend_from_slice(bins),
        }
        self.empty.extend_from_slice(empty);
        self.cards.push(cardinality);
    }

    /// Appends the row whose parts are `bins`, `empty` and `cardinality`, checked as
    /// [`OphSketch::from_parts`] checks them (the same error for the same parts): a row read
    /// from storage without an [`OphSketch`] in between.
    pub(crate) fn push_parts(&mut self, bins: &[u32], empty: &[u64], cardinality: u64) -> Result<(), SketchError> {
        check_parts(&self.params, bins, empty, cardinality)?;
        self.append_row(bins, empty, cardinality);
        Ok(())
    }

    /// Refuses a row position past the end.
    fn check_row(&self, i: usize) -> Result<(), SketchError> {
        if i >= self.len() {
            return Err(SketchError::invalid("OPH column row", i, "a row below the number held"));
        }
        Ok(())
    }

    fn empty_of(&self, i: usize) -> &[u64] {
        let w = self.words();
        &self.empty[i * w..(i + 1) * w]
    }

    /// `Sketch::similarity_value` of rows `i` and `j`, bit for bit (the same count and
    /// estimate, over the rows' slices).
    /// Row `j` is of `other`, a column of the same parameters (or this one).
    pub(crate) fn similarity_value_with(&self, i: usize, other: &OphColumn, j: usize) -> Result<f64, SketchError> {
        self.params.check_compatible(&other.params)?;
        self.check_row(i)?;
        other.check_row(j)?;
        let (t, bits) = (self.slots(), self.params.bits());
        let (ei, ej) = (self.empty_of(i), other.empty_of(j));
        let (a, b) = (i * t..(i + 1) * t, j * t..(j + 1) * t);
        match (&self.bins, &other.bins) {
            (Bins::U8(x), Bins::U8(y)) => oph_value(&x[a], ei, &y[b], ej, bits),
            (Bins::U16(x), Bins::U16(y)) => oph_value(&x[a], ei, &y[b], ej, bits),
            (Bins::U32(x), Bins::U32(y)) => oph_value(&x[a], ei, &y[b], ej, bits),
            // Equal parameters have equal bits, so one bin type: not reached.
            _ => Err(SketchError::incompatible("bits", self.params.bits(), other.params.bits())),
        }
    }

    /// `OphSketch::densify` of row `i`, written into `out` (cleared first): `EmptySet` for a
    /// sketch of the empty set, which has no filled bin to copy from.
    pub(crate) fn densify_into(&self, i: usize, out: &mut Vec<u32>) -> Result<(), SketchError> {
        self.check_row(i)?;
        if self.cards[i] == 0 {
            return Err(SketchError::EmptySet);
        }
        let (t, key, empty) = (self.slots(), densify_key(&self.params), self.empty_of(i));
        with_bins!(&self.bins, v => densify_into(&v[i * t..(i + 1) * t], empty, key, out));
        Ok(())
    }

    /// Row `i` as the sketch it was pushed from.
    pub(crate) fn sketch(&self, i: usize) -> Result<OphSketch, SketchError> {
        self.check_row(i)?;
        let t = self.slots();
        // The same widening for every bin type (a no-op for the u32 column).
        #[allow(clippy::useless_conversion)]
        let bins = with_bins!(&self.bins, v => v[i * t..(i + 1) * t].iter().map(|&b| u32::from(b)).collect());
        OphSketch::from_parts(self.params, bins, self.empty_of(i).to_vec(), self.cards[i])
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::sketch::hash::fmix64;
    use crate::sketch::sketcher::Sketch;

    /// A valid OPH sketch of `params` from `state`: bins empty with probability `hole`
    /// (all of them for `hole` = 1, a sketch of the empty set), values from a few so that
    /// equal bins are common, and sometimes the top value.
    fn random(params: SketchParams, hole: f64, state: &mut u64) -> OphSketch {
        let mut next = || {
            *state = fmix64(state.wrapping_add(0x9E37_79B9_7F4A_7C15));
            *state
        };
        let t = params.slots();
        let top = ((1u64 << params.bits()) - 1) as u32;
        let mut empty = vec![0u64; t.div_ceil(64)];
        let bins = (0..t)
            .map(|j| {
                if (next() >> 11) as f64 / (1u64 << 53) as f64 >= 1.0 - hole {
                    empty[j / 64] |= 1 << (j % 64);
                    0
                } else if next() % 5 == 0 {
                    top
                } else {
                    (next() % 3) as u32
                }
            })
            .collect();
        let all_empty = empty.iter().map(|w| w.count_ones() as usize).sum::<usize>() == t;
        OphSketch::from_parts(params, bins, empty, if all_empty { 0 } else { 1 + next() % 100 }).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Every pair's column similarity is `Sketch::similarity_value`'s bit for bit (errors
        /// where it errs: two sketches of the empty set), the densified rows are
        /// `OphSketch::densify`'s, and each row reads back as the sketch pushed, for every bin
        /// width, t not a multiple of 64, and fills from none to all bins.
        #[test]
        fn column_rows_compare_and_densify_as_their_sketches(
            t in prop::sample::select(vec![1u32, 63, 64, 100, 512]),
            bits in prop::sample::select(vec![8u8, 16, 32]),
            seed in any::<u64>(),
        ) {
            let params = SketchParams::oph(t, bits, 9).unwrap();
            let mut state = seed;
            let holes = [0.0, 0.3, 0.9, 1.0, 0.5, 0.99, 1.0, 0.1];
            let sketches: Vec<OphSketch> = holes.iter().map(|&h| random(params, h, &mut state)).collect();
            let mut column = OphColumn::new(params).unwrap();
            for s in &sketches {
                column.push(s).unwrap();
            }
            // A second column holding the last five: rows compared across columns too.
            let mut rest = OphColumn::new(params).unwrap();
            for s in &sketches[3..] {
                rest.push(s).unwrap();
            }
            prop_assert_eq!(column.len(), sketches.len());
            let mut out = Vec::new();
            for (i, x) in sketches.iter().enumerate() {
                prop_assert_eq!(&column.sketch(i).unwrap(), x);
                match x.densify() {
                    Ok(want) => {
                        column.densify_into(i, &mut out).unwrap();
                        prop_assert_eq!(&out, &want);
                    }
                    Err(e) => prop_assert_eq!(column.densify_into(i, &mut out).unwrap_err(), e),
                }
                for (j, y) in sketches.iter().enumerate() {
                    let want = Sketch::Oph(x.clone()).similarity_value(&Sketch::Oph(y.clone()));
                    let mut got = vec![column.similarity_value_with(i, &column, j)];
                    if j >= 3 {
                        got.push(column.similarity_value_with(i, &rest, j - 3));
                    }
                    for got in got {
                        match (got, &want) {
                            (Ok(got), Ok(want)) => prop_assert_eq!(got.to_bits(), want.to_bits(), "rows {} {}", i, j),
                            (Err(got), Err(want)) => prop_assert_eq!(&got, want),
                            (got, want) => prop_assert!(false, "rows {i} {j}: {got:?} against {want:?}"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn other_parameters_and_rows_past_the_end_are_refused() {
        let params = SketchParams::oph(64, 8, 9).unwrap();
        assert!(OphColumn::new(SketchParams::minhash(64, 32, 9).unwrap()).is_err());
        let mut column = OphColumn::new(params).unwrap();
        let mut state = 1;
        let other = random(SketchParams::oph(64, 16, 9).unwrap(), 0.5, &mut state);
        assert!(column.push(&other).is_err());
        column.push(&random(params, 0.5, &mut state)).unwrap();
        assert!(column.similarity_value_with(0, &column, 1).is_err());
        assert!(column.sketch(1).is_err());
        assert!(column.densify_into(1, &mut Vec::new()).is_err());
        let mut wider = OphColumn::new(SketchParams::oph(64, 16, 9).unwrap()).unwrap();
        wider.push(&other).unwrap();
        assert!(column.similarity_value_with(0, &wider, 0).is_err());
    }
}
