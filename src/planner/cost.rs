//! Statistics, the cost model and the pure `choose(query, stats, costs) -> Choice`.
//!
//! Costs are in nanoseconds per query. The constants come from `CostModel::calibrated`, a
//! measurement on the running machine stored in the database; `CostModel::default` holds the
//! figures measured on the development machine (2-core Xeon, AVX-512) and is only used until
//! a calibration has been stored.

use serde::{Deserialize, Serialize};

use crate::index::lsh_params::{LshParams, expected_recall_above};
use crate::index::maintain::banding_model;
use crate::sketch::params::SketchKind;

use super::plan::{Access, EarlyStop, Finish, Plan, PlanKind};
use super::query::{Query, QueryKind};

/// What the planner knows about a collection: kept current by every write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Live rows.
    pub live: u64,
    /// Deleted rows still in pages (scans read them too).
    pub deleted: u64,
    /// The sketch kind.
    pub kind: SketchKind,
    /// k, t or fingerprint words.
    pub slots: usize,
    /// Bits per stored value.
    pub bits: u8,
    /// The LSH index, if any.
    pub lsh: Option<LshStats>,
    /// The SimHash tables, if any.
    pub simhash: Option<SimhashStats>,
}

/// LSH index statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LshStats {
    /// The banding.
    pub params: LshParams,
    /// The size-biased mean bucket size, sum(s^2) / sum(s) over buckets: the expected size of
    /// the bucket a stored row's band key falls into (from the bucket-size histogram).
    pub mean_hit_bucket: f64,
    /// The index's runs: a probe reads each band's bucket in every run.
    pub runs: u32,
}

/// SimHash table statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimhashStats {
    /// Tables.
    pub tables: u32,
    /// The radius the tables guarantee (every fingerprint within it is found).
    pub radius: u32,
    /// Leading bits every table's probe matches exactly.
    pub prefix_bits: u32,
}

/// Per-operation costs in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Decoding one row and estimating (full scan), per slot of the sketch.
    pub decode_per_slot: f64,
    /// Comparing one OPH bin of one row in the column scan.
    pub bin_compare: f64,
    /// Comparing one 64-bit fingerprint word in a scan.
    pub fingerprint_compare: f64,
    /// One index lookup (an LSH bucket or a SimHash table probe).
    pub lookup: f64,
    /// Fetching and verifying one candidate row, per slot of the sketch.
    pub verify_per_slot: f64,
    /// Whether these figures were measured on this machine.
    pub calibrated: bool,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            decode_per_slot: 2.0,
            bin_compare: 0.05,
            fingerprint_compare: 1.0,
            lookup: 2_000.0,
            verify_per_slot: 8.0,
            calibrated: false,
        }
    }
}

/// One access path considered by `choose`.
#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    /// The plan.
    pub plan: Plan,
    /// Its estimated cost in nanoseconds, when eligible.
    pub cost_ns: Option<f64>,
    /// Why it is or is not eligible.
    pub note: String,
}

/// The planner's decision: the chosen plan and every alternative with its cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The plan to run.
    pub plan: Plan,
    /// Why it was chosen.
    pub reason: String,
    /// Every access path considered, in `PlanKind::ALL` order.
    pub alternatives: Vec<Alternative>,
}

pub(crate) fn finish_of(kind: QueryKind) -> Finish {
    match kind {
        QueryKind::Threshold(threshold) => Finish::Verify { threshold },
        QueryKind::TopK(k) => Finish::TopK { k },
        QueryKind::Hamming(radius) => Finish::Radius { radius },
    }
}

/// The fraction of a row's bins the exact-bound scan reads before it can drop a dissimilar
/// row at threshold t: it stops once even all remaining bins matching cannot reach t, that
/// is after about (1 - t) of them; counting proceeds in stages of 1/8 of the bins.
fn bin_fraction(early: EarlyStop, threshold: Option<f64>) -> f64 {
    match (early, threshold) {
        (EarlyStop::Never, _) | (_, None) => 1.0,
        (_, Some(t)) => (1.0 - t).clamp(0.125, 1.0),
    }
}

fn alternative(kind: PlanKind, q: &Query, s: &Stats, c: &CostModel) -> Alternative {
    let finish = finish_of(q.kind);
    let rows = (s.live + s.deleted) as f64;
    let slots = s.slots as f64;
    let threshold = match q.kind {
        QueryKind::Threshold(t) => Some(t),
        _ => None,
    };
    let hamming = matches!(q.kind, QueryKind::Hamming(_));
    let no = |access: Access, why: &str| Alternative { plan: Plan { access, finish }, cost_ns: None, note: why.into() };
    let yes = |access: Access, cost: f64, why: String| Alternative {
        plan: Plan { access, finish },
        cost_ns: Some(cost),
        note: why,
    };
    match kind {
        PlanKind::FullScan => {
            if hamming && s.kind != SketchKind::SimHash {
                return no(Access::FullScan, "Hamming queries need SimHash fingerprints");
            }
            let per_row =
                if s.kind == SketchKind::SimHash { c.fingerprint_compare * slots } else { c.decode_per_slot * slots };
            yes(Access::FullScan, rows * per_row, format!("reads all {rows} rows"))
        }
        PlanKind::OphBinScan => {
            let column_kind = s.kind == SketchKind::Oph || (s.kind == SketchKind::MinHash && s.bits == 32);
            if !column_kind || hamming {
                return no(
                    Access::OphBinScan { early: EarlyStop::Never },
                    "only for OPH or 32-bit MinHash similarity queries",
                );
            }
            let early = if !q.options.early_termination {
                EarlyStop::Never
            } else if q.options.exact || threshold.is_none() {
                EarlyStop::ExactBound
            } else {
                EarlyStop::Confidence(q.options.level)
            };
            let f = bin_fraction(early, threshold);
            let cost = rows * slots * c.bin_compare * f + s.live as f64 * 0.01 * c.verify_per_slot * slots;
            yes(Access::OphBinScan { early }, cost, format!("reads about {:.0}% of the bin columns", 100.0 * f))
        }
        PlanKind::LshProbe => {
            let Some(lsh) = s.lsh else {
                return no(Access::LshProbe { bands: 0 }, "no LSH index");
            };
            let bands = lsh.params.bands;
            let access = Access::LshProbe { bands };
            let Some(t) = threshold else {
                return no(access, "LSH answers threshold queries only");
            };
            if q.options.exact {
                return no(access, "not exact (the query asks for an exact answer)");
            }
            let model = banding_model(s.kind, s.bits).map(|(_, m)| m).unwrap_or_default();
            let recall = expected_recall_above(t, lsh.params, model);
            if recall < q.options.recall_target {
                return no(
                    access,
                    &format!(
                        "expected recall {recall:.3} over similarities in [{t}, 1] is below the target {}",
                        q.options.recall_target
                    ),
                );
            }
            let candidates = (f64::from(bands) * lsh.mean_hit_bucket).min(s.live as f64);
            let lookups = f64::from(bands) * f64::from(lsh.runs.max(1));
            let cost = lookups * c.lookup + candidates * c.verify_per_slot * slots;
            yes(
                access,
                cost,
                format!(
                    "expected recall {recall:.3}, {lookups:.0} bucket reads ({} runs), about {candidates:.0} candidates",
                    lsh.runs
                ),
            )
        }
        PlanKind::SimhashProbe => {
            let Some(sh) = s.simhash else {
                return no(Access::SimhashProbe { tables: 0 }, "no SimHash tables");
            };
            let access = Access::SimhashProbe { tables: sh.tables };
            let QueryKind::Hamming(r) = q.kind else {
                return no(access, "SimHash tables answer Hamming-radius queries only");
            };
            if r > sh.radius {
                return no(access, &format!("radius {r} exceeds the tables' radius {}", sh.radius));
            }
            let per_table = (s.live as f64) / 2f64.powi(sh.prefix_bits as i32);
            let cost = f64::from(sh.tables) * (c.lookup + per_table * c.fingerprint_compare);
            yes(access, cost, format!("about {per_table:.1} candidates per table"))
        }
    }
}

/// Chooses the cheapest eligible access path (or the forced one) for `query`. Pure: the same
/// inputs always give the same choice.
pub fn choose(query: &Query, stats: &Stats, costs: &CostModel) -> Choice {
    let alternatives: Vec<Alternative> = PlanKind::ALL.iter().map(|&k| alternative(k, query, stats, costs)).collect();
    if let Some(forced) = query.options.force
        && let Some(a) = alternatives.iter().find(|a| a.plan.access.kind() == forced)
    {
        return Choice { plan: a.plan, reason: format!("forced {forced}"), alternatives };
    }
    let best = alternatives
        .iter()
        .filter_map(|a| a.cost_ns.map(|c| (c, a)))
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, a)| a.plan);
    match best {
        Some(plan) => {
            let reason = format!(
                "cheapest eligible access path ({})",
                if costs.calibrated { "calibrated costs" } else { "default costs" }
            );
            Choice { plan, reason, alternatives }
        }
        // FullScan is always eligible for the questions a collection's kind supports; a
        // question it does not support still gets a plan, and execution reports the error.
        None => Choice {
            plan: Plan { access: Access::FullScan, finish: finish_of(query.kind) },
            reason: "no eligible access path".into(),
            alternatives,
        },
    }
}
