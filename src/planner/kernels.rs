//! The OPH bin scan's CPU dispatch: [`scan_page_portable`] run through
//! [`crate::simd::run_byte_compare`], which compiles it again for AVX-512BW or AVX2 (each
//! with POPCNT for the empty-bin bitmaps) and calls the widest variant the CPU supports.
//! Measured with `cargo run --release --example query_figures`.

use crate::simd::{Features, Kernel, run_byte_compare};
use crate::sketch::error::SketchError;
use crate::sketch::estimate::Estimate;

use super::scan::{BinColumns, OphProbe, Pruning, ScanCounters, scan_page_portable};

/// One call of [`scan_page_portable`], as a kernel.
struct ScanPage<'a, C, E> {
    probe: &'a OphProbe,
    page: &'a C,
    prune: &'a Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &'a mut ScanCounters,
    emit: E,
}

impl<C: BinColumns, E: FnMut(usize, Estimate)> Kernel for ScanPage<'_, C, E> {
    type Output = Result<(), SketchError>;
    #[inline(always)]
    fn run(self) -> Self::Output {
        scan_page_portable(self.probe, self.page, self.prune, self.threshold, self.level, self.counters, self.emit)
    }
}

/// Scans one page: calls `emit(row index, estimate)` for every live row whose estimate is
/// `>= threshold` (every live row when `threshold` is None), running the widest vector
/// variant of [`scan_page_portable`] the CPU supports.
pub(crate) fn scan_page<C: BinColumns>(
    probe: &OphProbe,
    page: &C,
    prune: &Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &mut ScanCounters,
    emit: impl FnMut(usize, Estimate),
) -> Result<(), SketchError> {
    run_byte_compare(Features::ALL, ScanPage { probe, page, prune, threshold, level, counters, emit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::plan::EarlyStop;
    use crate::simd::TEST_CAPS;
    use crate::sketch::hash::fmix64;
    use crate::sketch::oph::OphSketch;
    use crate::sketch::params::SketchParams;
    use crate::sketch::sketcher::{Sketch, Sketcher};
    use crate::sketch::tokens::TokenSet;

    struct Page {
        rows: usize,
        bins: Vec<Vec<u8>>,
        empty: Vec<Vec<u64>>,
        card: Vec<u64>,
        deleted: Vec<bool>,
    }

    impl BinColumns for Page {
        fn rows(&self) -> usize {
            self.rows
        }
        fn is_deleted(&self, i: usize) -> bool {
            self.deleted[i]
        }
        fn bin_column(&self, j: usize) -> &[u8] {
            &self.bins[j]
        }
        fn empty_word(&self, w: usize, i: usize) -> u64 {
            self.empty[w][i]
        }
        fn cardinality(&self, i: usize) -> u64 {
            self.card[i]
        }
    }

    /// Rows that copy each of the query's bins with a per-row probability, so estimates
    /// spread over [0, 1]; a few empty bits flipped (an empty bin stores 0), a few rows
    /// deleted.
    fn page(query: &OphSketch, rows: usize, width: usize, next: &mut impl FnMut() -> u64) -> Page {
        let t = query.bins().len();
        let share: Vec<u64> = (0..rows).map(|_| next() % 101).collect();
        let empty: Vec<Vec<u64>> = (0..t.div_ceil(64))
            .map(|w| (0..rows).map(|_| query.empty_bitmap()[w] ^ (next() & next() & next())).collect())
            .collect();
        let bins = (0..t)
            .map(|j| {
                (0..rows)
                    .flat_map(|i| {
                        let v = if (empty[j / 64][i] >> (j % 64)) & 1 == 1 {
                            0
                        } else if next() % 100 < share[i] {
                            u64::from(query.bins()[j])
                        } else {
                            next()
                        };
                        v.to_le_bytes()[..width].to_vec()
                    })
                    .collect()
            })
            .collect();
        let card = (0..rows).map(|_| 1 + next() % 1000).collect();
        let deleted = (0..rows).map(|_| next().is_multiple_of(7)).collect();
        Page { rows, bins, empty, card, deleted }
    }

    #[test]
    fn every_tier_scans_like_the_portable_body() {
        let mut state = 3u64;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            fmix64(state)
        };
        let mut scored = 0;
        for (t, bits) in [(7u32, 8u8), (64, 16), (100, 32), (128, 8), (256, 16)] {
            let sketcher = Sketcher::new(SketchParams::oph(t, bits, 7).unwrap()).unwrap();
            let tokens: Vec<u64> = (0..(t as u64 / 2 + 1)).map(|_| next()).collect();
            let Sketch::Oph(query) = sketcher.sketch(&TokenSet::from_unsorted(tokens)).unwrap() else { unreachable!() };
            let probe = OphProbe::new(&query);
            for rows in [1usize, 31, 33, 64, 257] {
                let page = page(&query, rows, usize::from(bits / 8), &mut next);
                for (threshold, early) in [
                    (None, EarlyStop::Never),
                    (Some(0.5), EarlyStop::ExactBound),
                    (Some(0.3), EarlyStop::Confidence(0.95)),
                ] {
                    let prune = Pruning::new(&probe, threshold, early);
                    let mut want_counters = ScanCounters::default();
                    let mut want = Vec::new();
                    scan_page_portable(&probe, &page, &prune, threshold, 0.95, &mut want_counters, |i, e| {
                        want.push((i, e.value.to_bits(), e.lower.to_bits(), e.upper.to_bits()))
                    })
                    .unwrap();
                    scored += want.len();
                    for cap in TEST_CAPS {
                        let mut counters = ScanCounters::default();
                        let mut got = Vec::new();
                        let emit = |i: usize, e: Estimate| {
                            got.push((i, e.value.to_bits(), e.lower.to_bits(), e.upper.to_bits()))
                        };
                        let kernel = ScanPage {
                            probe: &probe,
                            page: &page,
                            prune: &prune,
                            threshold,
                            level: 0.95,
                            counters: &mut counters,
                            emit,
                        };
                        run_byte_compare(cap, kernel).unwrap();
                        assert_eq!(got, want, "t={t} bits={bits} rows={rows} {early:?} cap={cap:?}");
                        assert_eq!(counters, want_counters);
                    }
                }
            }
        }
        assert!(scored > 1000, "the pages gave only {scored} hits");
    }
}
