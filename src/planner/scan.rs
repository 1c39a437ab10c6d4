//! The OPH bin-matching column scan.
//!
//! For one page it counts, per row, the query's non-empty bins whose stored value equals the
//! query's, one value column at a time (a byte compare the compiler vectorises), in stages.
//! After each stage rows that cannot reach the threshold are dropped:
//!
//! * exact bound: even if every remaining query bin matched, N_mat / t_q (an upper bound of
//!   the estimate, since m >= t_q) stays below the threshold;
//! * confidence (optional): the Clopper-Pearson upper bound of the match rate seen so far is
//!   below the threshold at the query's level.
//!
//! Both reduce to a per-stage minimum count computed once per query, so pruning is an integer
//! compare. When few rows remain the scan switches from whole columns to the survivors.
//! One-byte bins are counted stage by stage in u8 lanes (64 rows per AVX-512 compare) and
//! widened into u16 totals once per stage. With a threshold, a row whose total stays below
//! the exact bound is never scored, with or without early termination (every bin has been
//! compared by then; the bound only spares the estimator). Survivors are finished with the
//! bitmap columns (N_emp, bins non-empty in both, and the
//! stored zeros of empty bins that equal a query zero) and scored by
//! [`crate::sketch::oph::oph_estimate`], the estimator every access path shares.

use crate::sketch::error::{SketchError, defined};
use crate::sketch::estimate::{Estimate, clopper_pearson, proportion};
use crate::sketch::minhash::MinHash;
use crate::sketch::oph::{OphCounts, OphSketch, oph_estimate, oph_point};

use super::plan::EarlyStop;

/// Read access to one page's OPH columns.
pub(crate) trait BinColumns {
    /// Rows in the page.
    fn rows(&self) -> usize;
    /// Whether row i is deleted.
    fn is_deleted(&self, i: usize) -> bool;
    /// Bin j's values for every row: `rows * width` little-endian bytes.
    fn bin_column(&self, j: usize) -> &[u8];
    /// Word w of row i's empty-bin bitmap.
    fn empty_word(&self, w: usize, i: usize) -> u64;
    /// Row i's cardinality.
    fn cardinality(&self, i: usize) -> u64;
}

/// Which estimator scores a scanned row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scorer {
    /// OPH: N_mat / (t - N_emp) with the b-bit correction ([`oph_estimate`]).
    Oph,
    /// 32-bit MinHash: matching slots / k with Clopper-Pearson ([`proportion`]).
    MinHash,
}

/// A query prepared for scanning: an OPH sketch, or a 32-bit MinHash (its k value columns are
/// compared the same way; it has no empty slots).
pub(crate) struct OphProbe {
    scorer: Scorer,
    bins: Vec<u32>,
    empty: Vec<u64>,
    /// Query bins that are not empty, in scan order.
    nonempty: Vec<usize>,
    /// Query bins that are non-empty and hold 0: an empty stored bin (stored as 0) would
    /// count as a match there and is subtracted at the end.
    zero_mask: Vec<u64>,
    width: usize,
    bits: u8,
    cardinality: u64,
}

impl OphProbe {
    pub(crate) fn new(q: &OphSketch) -> OphProbe {
        let t = q.bins().len();
        let nonempty: Vec<usize> = (0..t).filter(|&j| !q.is_empty_bin(j)).collect();
        let mut zero_mask = vec![0u64; t.div_ceil(64)];
        for &j in &nonempty {
            if q.bins()[j] == 0 {
                zero_mask[j / 64] |= 1 << (j % 64);
            }
        }
        OphProbe {
            bins: q.bins().to_vec(),
            empty: q.empty_bitmap().to_vec(),
            nonempty,
            zero_mask,
            width: usize::from(q.params().bits() / 8),
            bits: q.params().bits(),
            cardinality: q.cardinality(),
            scorer: Scorer::Oph,
        }
    }

    /// A probe for a 32-bit MinHash (None for 64-bit minima, which scans do not compare).
    pub(crate) fn for_minhash(q: &MinHash) -> Option<OphProbe> {
        if q.params().bits() != 32 {
            return None;
        }
        let k = q.values().len();
        Some(OphProbe {
            bins: q.values().iter().map(|&v| v as u32).collect(),
            empty: Vec::new(),
            nonempty: (0..k).collect(),
            zero_mask: Vec::new(),
            width: 4,
            bits: 32,
            cardinality: q.cardinality(),
            scorer: Scorer::MinHash,
        })
    }
}

/// Counters reported by EXPLAIN ANALYZE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanCounters {
    /// Rows read (live and deleted).
    pub rows: u64,
    /// Bin values compared.
    pub bins_compared: u64,
    /// Rows dropped by early termination.
    pub pruned: u64,
    /// Rows scored with the estimator.
    pub scored: u64,
}

/// Per-stage minimum match counts; rows below are dropped after that stage.
pub(crate) struct Pruning {
    stage: usize,
    min_count: Vec<u32>,
    /// The exact bound once every bin is counted (0 without a threshold): a row counting
    /// fewer matches cannot qualify, so it is not scored. Not early termination: every bin
    /// of every row has been compared by then.
    final_min: u32,
}

impl Pruning {
    /// Pruning for `probe` at `threshold` (None: never prune).
    pub(crate) fn new(probe: &OphProbe, threshold: Option<f64>, early: EarlyStop) -> Pruning {
        let tq = probe.nonempty.len();
        let stage = (tq / 8).max(8);
        let stages = tq.div_ceil(stage);
        let Some(t) = threshold else {
            return Pruning { stage, min_count: vec![0; stages], final_min: 0 };
        };
        // N_mat / tq bounds the estimate's match rate from above (t - N_emp >= tq), so a
        // row needs N_mat >= t * tq * (1 - c) to reach t after the b-bit correction.
        let c = 1.0 / 2f64.powi(i32::from(probe.bits));
        let need = t * tq as f64 * (1.0 - c);
        let final_min = (need - 1e-9).ceil().max(0.0) as u32;
        if early == EarlyStop::Never {
            return Pruning { stage, min_count: vec![0; stages], final_min };
        }
        let min_count = (1..=stages)
            .map(|s| {
                let done = (s * stage).min(tq);
                let rem = (tq - done) as f64;
                // Exact: cur + rem >= need, with a little slack against rounding.
                let mut min = (need - rem - 1e-9).ceil().max(0.0) as u32;
                if let EarlyStop::Confidence(level) = early
                    && done < tq
                {
                    // Least x whose upper bound reaches t (done + 1 if none): the bound
                    // rises with x, so a binary search.
                    let (mut lo, mut hi) = (0u32, done as u32 + 1);
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        if clopper_pearson(f64::from(mid), done as f64, level).1 >= t { hi = mid } else { lo = mid + 1 }
                    }
                    min = min.max(lo);
                }
                min
            })
            .collect();
        Pruning { stage, min_count, final_min }
    }
}

/// Adds 1 to `counts[i]` where byte column `col` holds `q`: 64 rows per AVX-512 compare.
#[inline(always)]
fn count_column_u8(col: &[u8], q: u8, counts: &mut [u8]) {
    for (c, &v) in counts.iter_mut().zip(col) {
        *c = c.wrapping_add(u8::from(v == q));
    }
}

#[inline(always)]
fn count_column(col: &[u8], width: usize, q: u32, counts: &mut [u16]) {
    match width {
        1 => {
            let q = q as u8;
            for (c, &v) in counts.iter_mut().zip(col) {
                *c += u16::from(v == q);
            }
        }
        2 => {
            let q = q as u16;
            for (c, v) in counts.iter_mut().zip(col.chunks_exact(2)) {
                *c += u16::from(u16::from_le_bytes([v[0], v[1]]) == q);
            }
        }
        _ => {
            for (c, v) in counts.iter_mut().zip(col.chunks_exact(4)) {
                *c += u16::from(u32::from_le_bytes([v[0], v[1], v[2], v[3]]) == q);
            }
        }
    }
}

#[inline(always)]
fn value_at(col: &[u8], width: usize, i: usize) -> u32 {
    match width {
        1 => u32::from(col[i]),
        2 => u32::from(u16::from_le_bytes([col[2 * i], col[2 * i + 1]])),
        _ => u32::from_le_bytes([col[4 * i], col[4 * i + 1], col[4 * i + 2], col[4 * i + 3]]),
    }
}

/// The portable body of [`super::kernels::scan_page`], compiled once per CPU feature level.
#[inline(always)]
pub(crate) fn scan_page_portable<C: BinColumns>(
    probe: &OphProbe,
    page: &C,
    prune: &Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &mut ScanCounters,
    mut emit: impl FnMut(usize, Estimate),
) -> Result<(), SketchError> {
    let n = page.rows();
    counters.rows += n as u64;
    let width = probe.width;
    let mut counts = vec![0u16; n];
    let mut stage_counts: Vec<u8> = Vec::new();
    // None: every row is still a candidate.
    let mut alive: Option<Vec<usize>> = None;
    for (s, stage_bins) in probe.nonempty.chunks(prune.stage).enumerate() {
        match alive.as_ref().filter(|a| a.len() * 4 <= n) {
            // One-byte bins: a stage counts into u8 lanes (it has fewer than 256 bins, so
            // they cannot wrap), then widens into the u16 totals once.
            None if width == 1 && stage_bins.len() < 256 => {
                stage_counts.clear();
                stage_counts.resize(n, 0);
                for &j in stage_bins {
                    count_column_u8(page.bin_column(j), probe.bins[j] as u8, &mut stage_counts);
                }
                for (c, &x) in counts.iter_mut().zip(&stage_counts) {
                    *c += u16::from(x);
                }
                counters.bins_compared += (n * stage_bins.len()) as u64;
            }
            None => {
                for &j in stage_bins {
                    count_column(page.bin_column(j), width, probe.bins[j], &mut counts);
                }
                counters.bins_compared += (n * stage_bins.len()) as u64;
            }
            Some(rows) => {
                for &j in stage_bins {
                    let col = page.bin_column(j);
                    let q = probe.bins[j];
                    for &i in rows {
                        counts[i] += u16::from(value_at(col, width, i) == q);
                    }
                }
                counters.bins_compared += (rows.len() * stage_bins.len()) as u64;
            }
        }
        let min = prune.min_count.get(s).copied().unwrap_or(0);
        if min > 0 {
            let before = alive.as_ref().map_or(n, Vec::len);
            let kept = match alive.take() {
                None => (0..n).filter(|&i| u32::from(counts[i]) >= min).collect(),
                Some(mut rows) => {
                    rows.retain(|&i| u32::from(counts[i]) >= min);
                    rows
                }
            };
            counters.pruned += (before - kept.len()) as u64;
            alive = Some(kept);
        }
    }
    let survivors = alive.unwrap_or_else(|| (0..n).collect());
    let t = probe.bins.len();
    let full_words = t / 64;
    for i in survivors {
        if u32::from(counts[i]) < prune.final_min || page.is_deleted(i) {
            continue;
        }
        let (mut n_emp, mut both, mut spurious) = (0usize, 0usize, 0usize);
        for w in 0..probe.empty.len() {
            let valid = if w < full_words { u64::MAX } else { (1u64 << (t % 64)) - 1 };
            let re = page.empty_word(w, i);
            let qe = probe.empty[w];
            n_emp += (re & qe).count_ones() as usize;
            both += (!re & !qe & valid).count_ones() as usize;
            spurious += (re & probe.zero_mask[w]).count_ones() as usize;
        }
        let n_mat = usize::from(counts[i]).saturating_sub(spurious);
        let c = OphCounts { bins: t, n_emp, n_mat, both };
        counters.scored += 1;
        if probe.scorer == Scorer::MinHash {
            let k = t as f64;
            if threshold.is_some_and(|th| (n_mat as f64 / k).clamp(0.0, 1.0) < th) {
                continue;
            }
            emit(i, proportion(n_mat as f64, k, level));
            continue;
        }
        // The interval costs an incomplete-beta inversion: only for rows that qualify. A row
        // without an estimate (it and the probe both sketch the empty set) is no match.
        match defined(oph_point(c, probe.bits))? {
            Some(v) if threshold.is_none_or(|th| v >= th) => {}
            _ => continue,
        }
        let e = oph_estimate(c, probe.bits, probe.cardinality, page.cardinality(i), level)?;
        emit(i, e);
    }
    Ok(())
}

#[cfg(test)]
mod pruning_tests {
    use super::*;
    use crate::sketch::params::SketchParams;
    use crate::sketch::sketcher::{Sketch, Sketcher};
    use crate::sketch::tokens::TokenSet;

    /// The confidence stage minimum is the least count whose upper bound reaches t (found by
    /// binary search); a linear search over every count must agree.
    #[test]
    fn confidence_minimums_equal_a_linear_search() {
        for (t_bins, tokens) in [(128u32, 40u64), (128, 5000), (512, 300)] {
            let sk = Sketcher::new(SketchParams::oph(t_bins, 8, 1).unwrap()).unwrap();
            let Sketch::Oph(q) = sk.sketch(&TokenSet::from_unsorted((0..tokens).collect())).unwrap() else {
                panic!("an OPH sketch")
            };
            let probe = OphProbe::new(&q);
            for t in [0.1, 0.5, 0.8, 0.97] {
                for level in [0.9, 0.99] {
                    let exact = Pruning::new(&probe, Some(t), EarlyStop::ExactBound);
                    let conf = Pruning::new(&probe, Some(t), EarlyStop::Confidence(level));
                    let tq = probe.nonempty.len();
                    for (s, (&m, &e)) in conf.min_count.iter().zip(&exact.min_count).enumerate() {
                        let done = ((s + 1) * conf.stage).min(tq);
                        let linear = if done < tq {
                            (0..=done as u32)
                                .find(|&x| clopper_pearson(f64::from(x), done as f64, level).1 >= t)
                                .unwrap_or(done as u32 + 1)
                        } else {
                            0
                        };
                        assert_eq!(m, e.max(linear), "t={t} level={level} stage={s}");
                    }
                }
            }
        }
    }
}
