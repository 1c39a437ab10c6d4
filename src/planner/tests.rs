//! Unit tests of the planner's pure parts: the OPH column scan against decoded comparisons.

use proptest::prelude::*;

use super::kernels::scan_page;
use super::plan::EarlyStop;
use super::scan::{BinColumns, OphProbe, Pruning, ScanCounters};
use crate::sketch::oph::OphSketch;
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::{Sketch, Sketcher};
use crate::sketch::tokens::TokenSet;

/// An in-memory page in the storage layer's column layout.
struct MemPage {
    rows: usize,
    width: usize,
    bins: Vec<Vec<u8>>,
    empty: Vec<Vec<u64>>,
    card: Vec<u64>,
    deleted: Vec<bool>,
}

impl MemPage {
    fn new(sketches: &[OphSketch], deleted: Vec<bool>) -> MemPage {
        let t = sketches[0].bins().len();
        let width = usize::from(sketches[0].params().bits() / 8);
        let bins = (0..t)
            .map(|j| sketches.iter().flat_map(|s| s.bins()[j].to_le_bytes()[..width].to_vec()).collect())
            .collect();
        let empty = (0..t.div_ceil(64)).map(|w| sketches.iter().map(|s| s.empty_bitmap()[w]).collect()).collect();
        MemPage {
            rows: sketches.len(),
            width,
            bins,
            empty,
            card: sketches.iter().map(OphSketch::cardinality).collect(),
            deleted,
        }
    }
}

impl BinColumns for MemPage {
    fn rows(&self) -> usize {
        self.rows
    }
    fn is_deleted(&self, i: usize) -> bool {
        self.deleted[i]
    }
    fn bin_column(&self, j: usize) -> &[u8] {
        assert_eq!(self.bins[j].len(), self.rows * self.width);
        &self.bins[j]
    }
    fn empty_word(&self, w: usize, i: usize) -> u64 {
        self.empty[w][i]
    }
    fn cardinality(&self, i: usize) -> u64 {
        self.card[i]
    }
}

fn oph(s: Sketch) -> OphSketch {
    match s {
        Sketch::Oph(o) => o,
        _ => unreachable!(),
    }
}

/// Rows derived from a base set by replacing a varying share of it, so similarities spread
/// over [0, 1]; small sets leave many bins empty.
fn collection(seed: u64, rows: usize, t: u32, bits: u8) -> (OphSketch, Vec<OphSketch>) {
    let sk = Sketcher::new(SketchParams::oph(t, bits, 7).unwrap()).unwrap();
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::sketch::hash::fmix64(state)
    };
    let base: Vec<u64> = (0..(20 + next() % 300)).map(|_| next()).collect();
    let query = oph(sk.sketch(&TokenSet::from_unsorted(base.clone())).unwrap());
    let sketches = (0..rows)
        .map(|_| {
            let keep = (next() % 101) as usize;
            let mut s: Vec<u64> = base.iter().copied().filter(|_| (next() % 100) < keep as u64).collect();
            let extra = next() % 200;
            s.extend((0..extra).map(|_| next()));
            if s.is_empty() {
                s.push(next());
            }
            oph(sk.sketch(&TokenSet::from_unsorted(s)).unwrap())
        })
        .collect();
    (query, sketches)
}

fn run(query: &OphSketch, page: &MemPage, threshold: Option<f64>, early: EarlyStop) -> Vec<(usize, u64)> {
    let probe = OphProbe::new(query);
    let prune = Pruning::new(&probe, threshold, early);
    let mut out = Vec::new();
    let mut counters = ScanCounters::default();
    scan_page(&probe, page, &prune, threshold, 0.95, &mut counters, |i, e| out.push((i, e.value.to_bits()))).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn exact_scans_equal_decoded_comparisons(
        seed in any::<u64>(),
        rows in 1usize..300,
        t in prop::sample::select(vec![7u32, 64, 100, 128, 256]),
        bits in prop::sample::select(vec![8u8, 16, 32]),
        threshold in 0.0f64..1.0,
    ) {
        let (query, sketches) = collection(seed, rows, t, bits);
        let deleted: Vec<bool> = (0..rows).map(|i| (seed >> (i % 64)) & 1 == 1 && i % 5 == 0).collect();
        let page = MemPage::new(&sketches, deleted.clone());
        let want: Vec<(usize, u64)> = sketches
            .iter()
            .enumerate()
            .filter(|(i, _)| !deleted[*i])
            .map(|(i, s)| (i, query.jaccard(s, 0.95).unwrap()))
            .filter(|(_, e)| e.value >= threshold)
            .map(|(i, e)| (i, e.value.to_bits()))
            .collect();
        prop_assert_eq!(run(&query, &page, Some(threshold), EarlyStop::Never), want.clone());
        prop_assert_eq!(run(&query, &page, Some(threshold), EarlyStop::ExactBound), want.clone());
        // Confidence-based early stop returns a subset with the same estimates.
        let approx = run(&query, &page, Some(threshold), EarlyStop::Confidence(0.95));
        for r in &approx {
            prop_assert!(want.contains(r));
        }
        // Without a threshold every live row is scored.
        prop_assert_eq!(run(&query, &page, None, EarlyStop::ExactBound).len(), deleted.iter().filter(|d| !**d).count());
    }
}

#[test]
fn exact_bound_prunes_dissimilar_rows_and_keeps_the_answer() {
    let (query, sketches) = collection(42, 400, 128, 8);
    let page = MemPage::new(&sketches, vec![false; sketches.len()]);
    let probe = OphProbe::new(&query);
    for (threshold, early) in [(0.8, EarlyStop::ExactBound), (0.5, EarlyStop::Confidence(0.95))] {
        let prune = Pruning::new(&probe, Some(threshold), early);
        let mut counters = ScanCounters::default();
        let mut got = Vec::new();
        scan_page(&probe, &page, &prune, Some(threshold), 0.95, &mut counters, |i, _| got.push(i)).unwrap();
        assert!(counters.pruned > 100, "{early:?}: pruned only {}", counters.pruned);
        assert!(counters.bins_compared < 400 * 128, "{early:?}: compared {}", counters.bins_compared);
        let want: Vec<usize> =
            (0..sketches.len()).filter(|&i| query.jaccard(&sketches[i], 0.95).unwrap().value >= threshold).collect();
        if early == EarlyStop::ExactBound {
            assert_eq!(got, want);
        } else {
            assert!(got.iter().all(|i| want.contains(i)));
        }
    }
}
