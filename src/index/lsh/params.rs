//! Choosing an LSH banding (b bands of r rows, b * r <= k) for a similarity threshold, and
//! the candidate probability curve it implies.
//!
//! A pair of similarity s agrees on one row with probability p(s) and becomes a candidate
//! when all r rows of at least one band agree: P(s) = 1 - (1 - p(s)^r)^b. With exact row
//! values p(s) = s ([`CollisionModel::Exact`]); with values of `w` bits two different minima
//! still agree with probability 2^-w, so p(s) = s + (1 - s) 2^-w ([`CollisionModel::Bits`]).
//!
//! For a threshold t the false-positive area is FP = ∫_0^t P(s) ds and the false-negative
//! area FN = ∫_t^1 (1 - P(s)) ds; [`optimal_lsh_params`] minimises
//! `w_fp * FP + w_fn * FN` over every (b, r) with b * r <= k (the scheme of Leskovec,
//! Rajaraman and Ullman, Mining of Massive Datasets, ch. 3, as in datasketch).

use rayon::prelude::*;

use crate::codec::wire::{LshParamsWire, Wire};
use crate::index::error::IndexError;

/// An LSH banding: `bands` bands of `rows` rows each (using `bands * rows` slots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LshParams {
    /// The number of bands b.
    pub bands: u32,
    /// Rows per band r.
    pub rows: u32,
}

impl From<LshParams> for LshParamsWire {
    fn from(p: LshParams) -> Self {
        LshParamsWire { bands: p.bands, rows: p.rows }
    }
}

impl From<LshParamsWire> for LshParams {
    fn from(w: LshParamsWire) -> Self {
        LshParams { bands: w.bands, rows: w.rows }
    }
}

impl Wire for LshParams {
    type Wire = LshParamsWire;
}

/// How often the row values of two sets agree at similarity s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CollisionModel {
    /// Values agree exactly when the minima do: p(s) = s (64-bit minima; 32-bit is within
    /// 2^-32).
    #[default]
    Exact,
    /// Values keep `w` bits (b-bit MinHash, 8/16-bit OPH), so different minima also agree
    /// with probability 2^-w: p(s) = s + (1 - s) 2^-w. `w` must be 1..=64.
    Bits(u8),
}

impl CollisionModel {
    /// The per-row agreement probability p(s).
    #[inline]
    pub fn row_match(self, s: f64) -> f64 {
        match self {
            CollisionModel::Exact => s,
            CollisionModel::Bits(w) => s + (1.0 - s) * (-f64::from(w)).exp2(),
        }
    }

    fn validate(self) -> Result<(), IndexError> {
        match self {
            CollisionModel::Bits(w) if !(1..=64).contains(&w) => {
                Err(IndexError::invalid("collision bits", w, "1..=64 bits per value"))
            }
            _ => Ok(()),
        }
    }
}

/// The weights of the false-positive and false-negative areas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LshWeights {
    /// Weight of FP (default 0.5).
    pub false_positive: f64,
    /// Weight of FN (default 0.5).
    pub false_negative: f64,
}

impl Default for LshWeights {
    fn default() -> Self {
        LshWeights { false_positive: 0.5, false_negative: 0.5 }
    }
}

/// A chosen banding with its error areas at the threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LshChoice {
    /// The banding.
    pub params: LshParams,
    /// FP = ∫_0^t P(s) ds.
    pub false_positive: f64,
    /// FN = ∫_t^1 (1 - P(s)) ds.
    pub false_negative: f64,
}

/// (1 - p^r)^b, computed as exp(b ln(1 - p^r)) so large b keeps precision.
#[inline]
fn miss(p: f64, params: LshParams) -> f64 {
    let pr = p.powi(params.rows.min(i32::MAX as u32) as i32);
    (f64::from(params.bands) * (-pr).ln_1p()).exp()
}

/// P(s) = 1 - (1 - s^r)^b: the probability that a pair of (exact-row) similarity s becomes
/// a candidate. `s` is clamped to [0, 1].
pub fn candidate_probability(s: f64, params: LshParams) -> f64 {
    candidate_probability_with(s, params, CollisionModel::Exact)
}

/// P(s) = 1 - (1 - p(s)^r)^b with the model's per-row agreement p(s) (b-bit values: the
/// effective collision probability s + (1 - s) 2^-w). `s` is clamped to [0, 1].
pub fn candidate_probability_with(s: f64, params: LshParams, model: CollisionModel) -> f64 {
    let s = if s.is_nan() { 0.0 } else { s.clamp(0.0, 1.0) };
    1.0 - miss(model.row_match(s), params)
}

/// The expected recall of a banding for a threshold query at `t`: the candidate probability
/// averaged over similarities uniform in `[t, 1]`, `(1 / (1 - t)) * ∫_t^1 P(s) ds`. At least
/// `P(t)` (P increases with s), and the planner's measure of an LSH plan's recall: the pairs a
/// threshold query must return lie anywhere above t, not only at it. 1 for `t >= 1`.
///
/// Pure; the last 64 answers are kept, since the planner asks the same question
/// (the index's banding at the query's threshold) for every query.
pub fn expected_recall_above(t: f64, params: LshParams, model: CollisionModel) -> f64 {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    if t >= 1.0 - 1e-12 {
        return 1.0;
    }
    let key = (t.to_bits(), params, model);
    if let Some(&(_, v)) = RECALLS.lock().iter().find(|(k, _)| *k == key) {
        return v;
    }
    let area = integrate(&|s| candidate_probability_with(s, params, model), t, 1.0);
    let v = (area / (1.0 - t)).clamp(0.0, 1.0);
    let mut memo = RECALLS.lock();
    if memo.len() >= RECALL_MEMO {
        memo.remove(0);
    }
    memo.push((key, v));
    v
}

/// Answers of [`expected_recall_above`] kept.
const RECALL_MEMO: usize = 64;
/// ((t bits, banding, model), recall), oldest first.
#[allow(clippy::type_complexity)]
static RECALLS: parking_lot::Mutex<Vec<((u64, LshParams, CollisionModel), f64)>> = parking_lot::Mutex::new(Vec::new());

/// Panels of the composite rule; each is then refined adaptively.
const PANELS: usize = 16;
/// Absolute tolerance per panel (the total error stays far below 1e-6).
const PANEL_TOL: f64 = 1e-10;
const MAX_DEPTH: u32 = 40;

/// ∫_a^b g(s) ds by adaptive Simpson (with Richardson correction) on [`PANELS`] equal panels.
/// Accurate to ~1e-9 for the smooth, bounded, monotone integrands here, well inside the 1e-6
/// required (checked against closed forms and fine grids in the tests). k = 4096 slots take
/// about 0.5 s for all ~36 000 bandings, split over the rayon pool.
pub(crate) fn integrate(g: &impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let h = (b - a) / PANELS as f64;
    (0..PANELS)
        .map(|i| {
            let (lo, hi) = (a + h * i as f64, if i + 1 == PANELS { b } else { a + h * (i + 1) as f64 });
            let (flo, fhi, fmid) = (g(lo), g(hi), g(0.5 * (lo + hi)));
            let whole = (hi - lo) / 6.0 * (flo + 4.0 * fmid + fhi);
            adaptive(g, lo, hi, flo, fmid, fhi, whole, PANEL_TOL, MAX_DEPTH)
        })
        .sum()
}

#[allow(clippy::too_many_arguments)]
fn adaptive(
    g: &impl Fn(f64) -> f64,
    a: f64,
    b: f64,
    fa: f64,
    fm: f64,
    fb: f64,
    whole: f64,
    tol: f64,
    depth: u32,
) -> f64 {
    let m = 0.5 * (a + b);
    let (lm, rm) = (0.5 * (a + m), 0.5 * (m + b));
    let (flm, frm) = (g(lm), g(rm));
    let left = (m - a) / 6.0 * (fa + 4.0 * flm + fm);
    let right = (b - m) / 6.0 * (fm + 4.0 * frm + fb);
    let delta = left + right - whole;
    if depth == 0 || delta.abs() <= 15.0 * tol {
        return left + right + delta / 15.0;
    }
    adaptive(g, a, m, fa, flm, fm, left, tol / 2.0, depth - 1)
        + adaptive(g, m, b, fm, frm, fb, right, tol / 2.0, depth - 1)
}

fn check_threshold(threshold: f64) -> Result<(), IndexError> {
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(IndexError::invalid("threshold", threshold, "a similarity strictly between 0 and 1"));
    }
    Ok(())
}

fn check_params(params: LshParams) -> Result<(), IndexError> {
    if params.bands == 0 || params.rows == 0 {
        return Err(IndexError::invalid(
            "bands/rows",
            format!("{}x{}", params.bands, params.rows),
            "b >= 1 and r >= 1",
        ));
    }
    Ok(())
}

/// FP = ∫_0^t P(s) ds: the area of candidates below the threshold.
pub fn false_positive_area(threshold: f64, params: LshParams, model: CollisionModel) -> Result<f64, IndexError> {
    check_threshold(threshold)?;
    check_params(params)?;
    model.validate()?;
    Ok(integrate(&|s| 1.0 - miss(model.row_match(s), params), 0.0, threshold))
}

/// FN = ∫_t^1 (1 - P(s)) ds: the area of missed pairs above the threshold.
pub fn false_negative_area(threshold: f64, params: LshParams, model: CollisionModel) -> Result<f64, IndexError> {
    check_threshold(threshold)?;
    check_params(params)?;
    model.validate()?;
    Ok(integrate(&|s| miss(model.row_match(s), params), threshold, 1.0))
}

/// The banding (b, r) with b * r <= `slots` minimising `w_fp * FP + w_fn * FN` at
/// `threshold`, ties going to the first found in order of increasing r, then b.
///
/// Errors: `slots` = 0, a threshold outside (0, 1), negative or non-finite weights or both
/// zero, a `Bits` model outside 1..=64.
pub fn optimal_lsh_params(
    slots: u32,
    threshold: f64,
    weights: LshWeights,
    model: CollisionModel,
) -> Result<LshChoice, IndexError> {
    if slots == 0 {
        return Err(IndexError::invalid("k", slots, "at least one signature slot"));
    }
    check_threshold(threshold)?;
    model.validate()?;
    let (wfp, wfn) = (weights.false_positive, weights.false_negative);
    let ok = |w: f64| w.is_finite() && w >= 0.0;
    if !ok(wfp) || !ok(wfn) || wfp + wfn == 0.0 {
        return Err(IndexError::invalid(
            "weights",
            format!("{wfp}/{wfn}"),
            "finite, non-negative false-positive and false-negative weights, not both zero",
        ));
    }
    // Each r's best b in parallel, then the best over r (the lowest r on ties).
    let per_rows: Vec<(f64, LshChoice)> = (1..=slots)
        .into_par_iter()
        .filter_map(|rows| {
            let mut best: Option<(f64, LshChoice)> = None;
            for bands in 1..=slots / rows {
                let params = LshParams { bands, rows };
                let fp = integrate(&|s| 1.0 - miss(model.row_match(s), params), 0.0, threshold);
                let fnr = integrate(&|s| miss(model.row_match(s), params), threshold, 1.0);
                let cost = wfp * fp + wfn * fnr;
                if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                    best = Some((cost, LshChoice { params, false_positive: fp, false_negative: fnr }));
                }
            }
            best
        })
        .collect();
    let mut best: Option<(f64, LshChoice)> = None;
    for (cost, choice) in per_rows {
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, choice));
        }
    }
    best.map(|(_, c)| c).ok_or_else(|| IndexError::invalid("k", slots, "at least one signature slot"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn p(bands: u32, rows: u32) -> LshParams {
        LshParams { bands, rows }
    }

    /// The midpoint rule on a fine grid: the brute-force reference.
    fn grid(g: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
        let n = 400_000;
        let h = (b - a) / n as f64;
        (0..n).map(|i| g(a + h * (i as f64 + 0.5))).sum::<f64>() * h
    }

    #[test]
    fn closed_forms() {
        for t in [0.1, 0.5, 0.8, 0.95] {
            let fp = false_positive_area(t, p(1, 1), CollisionModel::Exact).expect("fp");
            let fnr = false_negative_area(t, p(1, 1), CollisionModel::Exact).expect("fn");
            assert!((fp - t * t / 2.0).abs() < 1e-9 && (fnr - (1.0 - t) * (1.0 - t) / 2.0).abs() < 1e-9);
            for b in [2u32, 7, 40] {
                // r = 1: FN = (1 - t)^(b+1) / (b + 1), FP = t - (1 - (1 - t)^(b+1)) / (b + 1).
                let bf = f64::from(b);
                let tail = (1.0 - t).powf(bf + 1.0) / (bf + 1.0);
                let fnr = false_negative_area(t, p(b, 1), CollisionModel::Exact).expect("fn");
                let fp = false_positive_area(t, p(b, 1), CollisionModel::Exact).expect("fp");
                assert!((fnr - tail).abs() < 1e-9, "b = {b}, t = {t}");
                assert!((fp - (t - (1.0 / (bf + 1.0) - tail))).abs() < 1e-9);
            }
            for r in [2u32, 9, 64] {
                // b = 1: FP = t^(r+1) / (r + 1).
                let rf = f64::from(r);
                let fp = false_positive_area(t, p(1, r), CollisionModel::Exact).expect("fp");
                assert!((fp - t.powf(rf + 1.0) / (rf + 1.0)).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn areas_match_a_fine_grid() {
        for (params, model) in [
            (p(20, 5), CollisionModel::Exact),
            (p(64, 2), CollisionModel::Exact),
            (p(8, 32), CollisionModel::Exact),
            (p(512, 8), CollisionModel::Exact),
            (p(16, 8), CollisionModel::Bits(1)),
            (p(32, 4), CollisionModel::Bits(4)),
        ] {
            for t in [0.3, 0.5, 0.85] {
                let fp = false_positive_area(t, params, model).expect("fp");
                let fnr = false_negative_area(t, params, model).expect("fn");
                let gfp = grid(|s| candidate_probability_with(s, params, model), 0.0, t);
                let gfn = grid(|s| 1.0 - candidate_probability_with(s, params, model), t, 1.0);
                assert!((fp - gfp).abs() < 1e-7, "{params:?} {model:?} t = {t}: {fp} vs {gfp}");
                assert!((fnr - gfn).abs() < 1e-7, "{params:?} {model:?} t = {t}: {fnr} vs {gfn}");
            }
        }
    }

    #[test]
    fn probability_is_monotone() {
        let mut last = -1.0;
        for i in 0..=1000 {
            let s = f64::from(i) / 1000.0;
            let v = candidate_probability(s, p(20, 5));
            assert!(v >= last && (0.0..=1.0).contains(&v));
            last = v;
            // More bands raise it, more rows lower it; b-bit collisions raise it.
            assert!(candidate_probability(s, p(21, 5)) >= v && candidate_probability(s, p(20, 6)) <= v);
            assert!(candidate_probability_with(s, p(20, 5), CollisionModel::Bits(2)) >= v);
        }
        assert_eq!(candidate_probability(0.0, p(20, 5)), 0.0);
        assert_eq!(candidate_probability(1.0, p(20, 5)), 1.0);
        let b1 = candidate_probability_with(0.0, p(1, 1), CollisionModel::Bits(1));
        assert!((b1 - 0.5).abs() < 1e-15);
        let b32 = candidate_probability_with(0.3, p(20, 5), CollisionModel::Bits(32));
        assert!((b32 - candidate_probability(0.3, p(20, 5))).abs() < 1e-8);
    }

    #[test]
    fn optimum_respects_the_budget_and_beats_every_other_banding() {
        for k in [1u32, 2, 7, 16, 33, 64] {
            for t in [0.2, 0.5, 0.9] {
                let c = optimal_lsh_params(k, t, LshWeights::default(), CollisionModel::Exact).expect("opt");
                assert!(c.params.bands * c.params.rows <= k && c.params.bands >= 1 && c.params.rows >= 1);
                if k == 16 {
                    let cost = |q: LshParams| {
                        let fp = grid(|s| candidate_probability(s, q), 0.0, t);
                        let fnr = grid(|s| 1.0 - candidate_probability(s, q), t, 1.0);
                        0.5 * fp + 0.5 * fnr
                    };
                    let best = cost(c.params);
                    for r in 1..=k {
                        for b in 1..=k / r {
                            assert!(best <= cost(p(b, r)) + 1e-7, "t = {t}: {:?} vs {b}x{r}", c.params);
                        }
                    }
                }
            }
        }
        // Raising the threshold never lowers rows per band at a fixed budget here.
        let r = |t| optimal_lsh_params(128, t, LshWeights::default(), CollisionModel::Exact).expect("opt").params.rows;
        assert!(r(0.3) <= r(0.6) && r(0.6) <= r(0.9));
        // Weighting false negatives heavily moves the curve left (more bands or fewer rows).
        let fnw = LshWeights { false_positive: 0.1, false_negative: 0.9 };
        let a = optimal_lsh_params(128, 0.5, LshWeights::default(), CollisionModel::Exact).expect("opt");
        let b = optimal_lsh_params(128, 0.5, fnw, CollisionModel::Exact).expect("opt");
        assert!(b.false_negative <= a.false_negative);
    }

    #[test]
    fn expected_recall_is_the_mean_collision_probability_above_t() {
        // b = r = 1: P(s) = s, so the mean over [t, 1] is (1 + t) / 2.
        for t in [0.0, 0.3, 0.5, 0.8, 0.95] {
            let r = expected_recall_above(t, p(1, 1), CollisionModel::Exact);
            assert!((r - (1.0 + t) / 2.0).abs() < 1e-9, "t={t}: {r}");
        }
        // Between P(t) and 1, and equal to a fine Riemann mean.
        let params = p(14, 9);
        for t in [0.5, 0.7, 0.8, 0.9] {
            let r = expected_recall_above(t, params, CollisionModel::Exact);
            assert!(r >= candidate_probability_with(t, params, CollisionModel::Exact) && r <= 1.0);
            let n = 200_000;
            let mean = (0..n)
                .map(|i| {
                    candidate_probability_with(
                        t + (1.0 - t) * (i as f64 + 0.5) / n as f64,
                        params,
                        CollisionModel::Exact,
                    )
                })
                .sum::<f64>()
                / n as f64;
            assert!((r - mean).abs() < 1e-6, "t={t}: {r} vs {mean}");
        }
        assert_eq!(expected_recall_above(1.0, params, CollisionModel::Exact), 1.0);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let w = LshWeights::default();
        let bad = |r: Result<LshChoice, IndexError>, name: &str| {
            assert!(matches!(r, Err(IndexError::InvalidParam { param, .. }) if param == name), "{name}");
        };
        for t in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            bad(optimal_lsh_params(64, t, w, CollisionModel::Exact), "threshold");
            assert!(false_positive_area(t, p(2, 2), CollisionModel::Exact).is_err());
        }
        bad(optimal_lsh_params(0, 0.5, w, CollisionModel::Exact), "k");
        bad(
            optimal_lsh_params(
                64,
                0.5,
                LshWeights { false_positive: -1.0, false_negative: 1.0 },
                CollisionModel::Exact,
            ),
            "weights",
        );
        bad(
            optimal_lsh_params(64, 0.5, LshWeights { false_positive: 0.0, false_negative: 0.0 }, CollisionModel::Exact),
            "weights",
        );
        bad(optimal_lsh_params(64, 0.5, w, CollisionModel::Bits(0)), "collision bits");
        assert!(false_negative_area(0.5, p(0, 3), CollisionModel::Exact).is_err());
    }
}
