//! Which rule chooses an LSH banding when neither bands nor rows are given: the purpose of
//! the collection's candidates ([`BandingPurpose`]), its weights, the optimum they give
//! (memoised: creation, validation, dedup planning and EXPLAIN ask the same question), and
//! which rule a recorded banding matches ([`IndexBanding`]).
//!
//! The file records only the banding and its threshold, never the rule; the rule is
//! recognised by recomputing each rule's optimum for the recorded threshold, so files written
//! before the purposes existed report what they hold.

use std::fmt;

use super::error::IndexError;
use super::lsh::{CollisionModel, LshParams, LshWeights, optimal_lsh_params};

/// The weights of the banding chosen for an LSH index when neither bands nor rows are
/// given, on a collection whose candidates are verified by the estimator: recall first. A
/// false positive only costs a verification while a false negative loses an answer.
/// (`optimal_lsh_params`'s own default, used by `sketchdb bounds`, stays 0.5 / 0.5.)
pub(crate) const INDEX_LSH_WEIGHTS: LshWeights = LshWeights { false_positive: 0.1, false_negative: 0.9 };

/// The weights on a collection that keeps exact shingles: candidate recall almost only. Its
/// candidates are scored by exact Jaccard, so recall is bounded by candidate generation and
/// precision is 1 whatever the banding; a false positive costs a comparison of estimates
/// (most fall below the candidate floor) and rarely a set decode. Chosen on docs-100k
/// (OPH 512 x 8, words-5): the bandings it picks (89 x 4, 64 x 7, 48 x 10, 28 x 18) keep
/// about 99.95% or more of the true pairs above t = 0.5, 0.7, 0.8 and 0.9, where the
/// default's keep 99.0-99.4% and 0.01 / 0.99 kept 99.87% at t = 0.7.
pub(crate) const EXACT_INDEX_LSH_WEIGHTS: LshWeights = LshWeights { false_positive: 0.005, false_negative: 0.995 };

/// What a banding chosen by rule (neither bands nor rows given) is tuned for. A collection's
/// purpose follows from its configuration: [`BandingPurpose::for_collection`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BandingPurpose {
    /// Candidates verified by the estimator: minimise `0.1 FP + 0.9 FN`.
    #[default]
    Estimated,
    /// Candidates scored by exact Jaccard (a collection that keeps shingles): minimise
    /// `0.005 FP + 0.995 FN`, more bands of fewer rows, more candidates, fewer missed pairs.
    ExactRecall,
}

impl BandingPurpose {
    /// The purpose of a collection that keeps exact shingles (`true`) or not.
    pub fn for_collection(exact_shingles: bool) -> BandingPurpose {
        if exact_shingles { BandingPurpose::ExactRecall } else { BandingPurpose::Estimated }
    }

    /// The weights of the false-positive and false-negative areas this purpose minimises.
    pub fn weights(self) -> LshWeights {
        match self {
            BandingPurpose::Estimated => INDEX_LSH_WEIGHTS,
            BandingPurpose::ExactRecall => EXACT_INDEX_LSH_WEIGHTS,
        }
    }

    /// `default` or `recall (exact)`, as EXPLAIN and `info` show it.
    pub fn name(self) -> &'static str {
        match self {
            BandingPurpose::Estimated => "default",
            BandingPurpose::ExactRecall => "recall (exact)",
        }
    }
}

impl fmt::Display for BandingPurpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.weights();
        write!(f, "{} ({} FP + {} FN)", self.name(), w.false_positive, w.false_negative)
    }
}

/// An LSH banding as EXPLAIN and statistics show it: bands x rows, the threshold it was
/// chosen for, and the rule that chose it (`None`: given, or matching no rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexBanding {
    /// The banding.
    pub params: LshParams,
    /// The threshold it is tuned for.
    pub threshold: f64,
    /// The purpose whose rule gives this banding at this threshold, if any.
    pub purpose: Option<BandingPurpose>,
}

impl fmt::Display for IndexBanding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bands x {} rows for t = {}, ", self.params.bands, self.params.rows, self.threshold)?;
        match self.purpose {
            Some(p) => write!(f, "{p}"),
            None => f.write_str("given"),
        }
    }
}

/// Optima kept by [`rule_optimum`].
const OPTIMA_MEMO: usize = 32;
/// ((slots, threshold bits, purpose, model), banding), oldest first.
#[allow(clippy::type_complexity)]
static OPTIMA: parking_lot::Mutex<Vec<((u32, u64, BandingPurpose, CollisionModel), LshParams)>> =
    parking_lot::Mutex::new(Vec::new());

/// The banding `purpose`'s rule chooses for `threshold` over `slots` slots of `model` values:
/// [`optimal_lsh_params`] with its weights, the last answers kept (the search costs tens of
/// milliseconds at 512 slots).
pub(crate) fn rule_optimum(
    slots: u32,
    threshold: f64,
    purpose: BandingPurpose,
    model: CollisionModel,
) -> Result<LshParams, IndexError> {
    let key = (slots, threshold.to_bits(), purpose, model);
    if let Some(&(_, p)) = OPTIMA.lock().iter().find(|(k, _)| *k == key) {
        return Ok(p);
    }
    let params = optimal_lsh_params(slots, threshold, purpose.weights(), model)?.params;
    let mut memo = OPTIMA.lock();
    if memo.len() >= OPTIMA_MEMO {
        memo.remove(0);
    }
    memo.push((key, params));
    Ok(params)
}

/// The purpose whose rule gives `params` at `threshold` (the collection's own purpose first,
/// where both rules give the same banding), `None` when neither does (a given banding).
pub(crate) fn recognise(
    slots: u32,
    threshold: f64,
    params: LshParams,
    model: CollisionModel,
    own: BandingPurpose,
) -> Option<BandingPurpose> {
    let other = match own {
        BandingPurpose::ExactRecall => BandingPurpose::Estimated,
        _ => BandingPurpose::ExactRecall,
    };
    [own, other].into_iter().find(|&p| rule_optimum(slots, threshold, p, model).is_ok_and(|o| o == params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::lsh::{candidate_probability_with, expected_recall_above};

    /// The sketch configurations collections use: (slots, collision model).
    const CONFIGS: [(u32, CollisionModel); 5] = [
        (128, CollisionModel::Exact),    // MinHash 128 x 32
        (256, CollisionModel::Exact),    // MinHash 256 x 64
        (512, CollisionModel::Bits(8)),  // b-bit 512 x 8, OPH 512 x 8 (the text default)
        (1024, CollisionModel::Bits(4)), // b-bit 1024 x 4
        (1024, CollisionModel::Bits(8)), // OPH 1024 x 8
    ];

    /// On every configuration and threshold, the exact-recall banding's expected recall
    /// above t is at least the default's, and its candidate curve lies on or above the
    /// default's at every similarity above t (checked on a grid of 201 points): it loses no
    /// pair the default banding would find with higher probability. At least once per
    /// configuration the recall is strictly higher (the weights make a difference).
    #[test]
    fn exact_recall_banding_dominates_the_default_above_the_threshold() {
        for (slots, model) in CONFIGS {
            let mut higher = 0;
            for t in [0.5, 0.6, 0.7, 0.8, 0.9] {
                let d = rule_optimum(slots, t, BandingPurpose::Estimated, model).unwrap();
                let e = rule_optimum(slots, t, BandingPurpose::ExactRecall, model).unwrap();
                assert!(e.bands * e.rows <= slots);
                let (rd, re) = (expected_recall_above(t, d, model), expected_recall_above(t, e, model));
                assert!(re >= rd, "k = {slots} {model:?} t = {t}: {e:?} {re} < {d:?} {rd}");
                higher += usize::from(re > rd + 1e-4);
                for i in 0..=200 {
                    let s = t + (1.0 - t) * f64::from(i) / 200.0;
                    let (pd, pe) = (candidate_probability_with(s, d, model), candidate_probability_with(s, e, model));
                    assert!(pe >= pd - 1e-12, "k = {slots} {model:?} t = {t} s = {s}: {e:?} {pe} < {d:?} {pd}");
                }
            }
            assert!(higher >= 1, "k = {slots} {model:?}: the exact weights never changed the banding");
        }
    }

    /// The text default (OPH 512 x 8) at t = 0.8: the default banding keeps about 98.9% of
    /// pairs above t on average, the exact-recall banding more than 99.8%.
    #[test]
    fn exact_recall_banding_of_the_text_default() {
        let model = CollisionModel::Bits(8);
        let d = rule_optimum(512, 0.8, BandingPurpose::Estimated, model).unwrap();
        let e = rule_optimum(512, 0.8, BandingPurpose::ExactRecall, model).unwrap();
        assert_eq!((d.bands, d.rows), (39, 13));
        assert!(expected_recall_above(0.8, d, model) < 0.99);
        assert!(expected_recall_above(0.8, e, model) > 0.998, "{e:?}");
    }

    /// A recorded banding is recognised as the rule that gives it, the collection's own rule
    /// first where both agree, and as no rule when given.
    #[test]
    fn recorded_bandings_are_recognised() {
        let model = CollisionModel::Bits(8);
        for t in [0.5, 0.8] {
            for own in [BandingPurpose::Estimated, BandingPurpose::ExactRecall] {
                for p in [BandingPurpose::Estimated, BandingPurpose::ExactRecall] {
                    let params = rule_optimum(512, t, p, model).unwrap();
                    assert_eq!(recognise(512, t, params, model, own), Some(p), "t = {t}, own {own:?}");
                }
            }
            let given = LshParams { bands: 3, rows: 7 };
            assert_eq!(recognise(512, t, given, model, BandingPurpose::ExactRecall), None);
        }
        // Where both rules agree, the collection's own is reported.
        let (a, b) = (BandingPurpose::Estimated, BandingPurpose::ExactRecall);
        for t in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] {
            let pa = rule_optimum(64, t, a, CollisionModel::Exact).unwrap();
            if pa == rule_optimum(64, t, b, CollisionModel::Exact).unwrap() {
                assert_eq!(recognise(64, t, pa, CollisionModel::Exact, b), Some(b));
                assert_eq!(recognise(64, t, pa, CollisionModel::Exact, a), Some(a));
            }
        }
    }
}
