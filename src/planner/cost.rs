//! Statistics, the cost model and the pure `choose(query, stats, costs) -> Choice`.
//!
//! Costs are in nanoseconds per query. The constants come from `CostModel::calibrated`, a
//! measurement on the running machine stored in the database; `CostModel::default` holds the
//! figures measured on the development machine (2-core Xeon, AVX-512) and is only used until
//! a calibration has been stored.

pub use crate::index::{BandingPurpose, LshStats, SimhashStats};
use crate::index::{banding_model, expected_recall_above};
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
    /// The rule of an LSH banding chosen for this collection (an index built without bands
    /// and rows, a dedup banded in memory): for candidate recall when it keeps exact shingles.
    pub banding: BandingPurpose,
}

/// Per-operation costs in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
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

/// Why an access path is or is not eligible, with the figures its note shows: the text is
/// formatted only when a [`Choice`] is built (EXPLAIN), never when a query only runs.
#[derive(Clone, Copy, Debug)]
enum Why {
    Not(&'static str),
    RowsRead(f64),
    BinsRead(f64),
    LowRecall { recall: f64, threshold: f64, target: f64 },
    Lsh { recall: f64, lookups: f64, runs: u32, candidates: f64 },
    RadiusTooWide { radius: u32, limit: u32 },
    Simhash { per_table: f64, lookups: f64, runs: u32 },
}

impl Why {
    fn note(self) -> String {
        match self {
            Why::Not(why) => why.into(),
            Why::RowsRead(rows) => format!("reads all {rows} rows"),
            Why::BinsRead(f) => format!("reads about {:.0}% of the bin columns", 100.0 * f),
            Why::LowRecall { recall, threshold, target } => {
                format!(
                    "expected recall {recall:.3} over similarities in [{threshold}, 1] is below the target {target}"
                )
            }
            Why::Lsh { recall, lookups, runs, candidates } => format!(
                "expected recall {recall:.3}, {lookups:.0} bucket reads ({runs} runs), about {candidates:.0} candidates"
            ),
            Why::RadiusTooWide { radius, limit } => format!("radius {radius} exceeds the tables' radius {limit}"),
            Why::Simhash { per_table, lookups, runs } => {
                format!("about {per_table:.1} candidates per table, {lookups:.0} bucket reads ({runs} runs)")
            }
        }
    }
}

/// One access path costed: its plan, its cost when eligible, and why.
#[derive(Clone, Copy, Debug)]
struct Costed {
    plan: Plan,
    cost_ns: Option<f64>,
    why: Why,
}

fn costed(kind: PlanKind, q: &Query, s: &Stats, c: &CostModel) -> Costed {
    let finish = finish_of(q.kind);
    let rows = (s.live + s.deleted) as f64;
    let slots = s.slots as f64;
    let threshold = match q.kind {
        QueryKind::Threshold(t) => Some(t),
        _ => None,
    };
    let hamming = matches!(q.kind, QueryKind::Hamming(_));
    let no = |access: Access, why: Why| Costed { plan: Plan { access, finish }, cost_ns: None, why };
    let yes = |access: Access, cost: f64, why: Why| Costed { plan: Plan { access, finish }, cost_ns: Some(cost), why };
    match kind {
        PlanKind::FullScan => {
            if hamming && s.kind != SketchKind::SimHash {
                return no(Access::FullScan, Why::Not("Hamming queries need SimHash fingerprints"));
            }
            let per_row =
                if s.kind == SketchKind::SimHash { c.fingerprint_compare * slots } else { c.decode_per_slot * slots };
            yes(Access::FullScan, rows * per_row, Why::RowsRead(rows))
        }
        PlanKind::OphBinScan => {
            let column_kind = s.kind == SketchKind::Oph || (s.kind == SketchKind::MinHash && s.bits == 32);
            if !column_kind || hamming {
                return no(
                    Access::OphBinScan { early: EarlyStop::Never },
                    Why::Not("only for OPH or 32-bit MinHash similarity queries"),
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
            yes(Access::OphBinScan { early }, cost, Why::BinsRead(f))
        }
        PlanKind::LshProbe => {
            let Some(lsh) = s.lsh else {
                return no(Access::LshProbe { bands: 0 }, Why::Not("no LSH index"));
            };
            let bands = lsh.params.bands;
            let access = Access::LshProbe { bands };
            let Some(t) = threshold else {
                return no(access, Why::Not("LSH answers threshold queries only"));
            };
            if q.options.exact {
                return no(access, Why::Not("not exact (the query asks for an exact answer)"));
            }
            let model = banding_model(s.kind, s.bits).map(|(_, m)| m).unwrap_or_default();
            let recall = expected_recall_above(t, lsh.params, model);
            if recall < q.options.recall_target {
                return no(access, Why::LowRecall { recall, threshold: t, target: q.options.recall_target });
            }
            let candidates = (f64::from(bands) * lsh.mean_hit_bucket).min(s.live as f64);
            let lookups = f64::from(bands) * f64::from(lsh.runs.max(1));
            let cost = lookups * c.lookup + candidates * c.verify_per_slot * slots;
            yes(access, cost, Why::Lsh { recall, lookups, runs: lsh.runs, candidates })
        }
        PlanKind::SimhashProbe => {
            let Some(sh) = s.simhash else {
                return no(Access::SimhashProbe { tables: 0 }, Why::Not("no SimHash tables"));
            };
            let access = Access::SimhashProbe { tables: sh.tables };
            let QueryKind::Hamming(r) = q.kind else {
                return no(access, Why::Not("SimHash tables answer Hamming-radius queries only"));
            };
            if r > sh.radius {
                return no(access, Why::RadiusTooWide { radius: r, limit: sh.radius });
            }
            let per_table = (s.live as f64) / 2f64.powi(sh.prefix_bits as i32);
            let lookups = f64::from(sh.tables) * f64::from(sh.runs.max(1));
            let cost = lookups * c.lookup + f64::from(sh.tables) * per_table * c.fingerprint_compare;
            yes(access, cost, Why::Simhash { per_table, lookups, runs: sh.runs })
        }
    }
}

/// How the plan was picked from the costed paths.
enum Pick {
    /// The query forced this path.
    Forced(usize),
    /// The cheapest eligible path.
    Cheapest(usize),
    /// No path is eligible.
    Nothing,
}

/// Every access path costed, in `PlanKind::ALL` order, and the pick among them.
fn cost_all(query: &Query, stats: &Stats, costs: &CostModel) -> ([Costed; PlanKind::ALL.len()], Pick) {
    let all = PlanKind::ALL.map(|k| costed(k, query, stats, costs));
    if let Some(forced) = query.options.force
        && let Some(i) = all.iter().position(|a| a.plan.access.kind() == forced)
    {
        return (all, Pick::Forced(i));
    }
    let best = all
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.cost_ns.map(|c| (c, i)))
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, i)| i);
    (all, best.map_or(Pick::Nothing, Pick::Cheapest))
}

/// The fallback plan when no access path is eligible: FullScan is always eligible for the
/// questions a collection's kind supports; a question it does not support still gets a
/// plan, and execution reports the error.
fn fallback(query: &Query) -> Plan {
    Plan { access: Access::FullScan, finish: finish_of(query.kind) }
}

/// The plan [`choose`] chooses, without the text of its reason and alternatives (what a
/// query that only runs needs).
pub(crate) fn choose_plan(query: &Query, stats: &Stats, costs: &CostModel) -> Plan {
    match cost_all(query, stats, costs) {
        (all, Pick::Forced(i) | Pick::Cheapest(i)) => all[i].plan,
        (_, Pick::Nothing) => fallback(query),
    }
}

/// Chooses the cheapest eligible access path (or the forced one) for `query`. Pure: the same
/// inputs always give the same choice.
pub fn choose(query: &Query, stats: &Stats, costs: &CostModel) -> Choice {
    let (all, pick) = cost_all(query, stats, costs);
    let alternatives: Vec<Alternative> =
        all.iter().map(|a| Alternative { plan: a.plan, cost_ns: a.cost_ns, note: a.why.note() }).collect();
    match pick {
        Pick::Forced(i) => {
            Choice { plan: all[i].plan, reason: format!("forced {}", all[i].plan.access.kind()), alternatives }
        }
        Pick::Cheapest(i) => {
            let reason = format!(
                "cheapest eligible access path ({})",
                if costs.calibrated { "calibrated costs" } else { "default costs" }
            );
            Choice { plan: all[i].plan, reason, alternatives }
        }
        Pick::Nothing => Choice { plan: fallback(query), reason: "no eligible access path".into(), alternatives },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::LshParams;
    use crate::planner::query::QueryOptions;
    use crate::sketch::params::SketchParams;
    use crate::sketch::sketcher::Sketcher;
    use crate::sketch::tokens::TokenSet;

    /// The query path's `choose_plan` picks exactly the plan EXPLAIN's `choose` reports, over
    /// every sketch kind, index, question, forcing and option the planner branches on.
    #[test]
    fn choose_plan_is_the_plan_choose_reports() {
        let kinds = [
            (SketchParams::oph(128, 8, 1).unwrap(), SketchKind::Oph),
            (SketchParams::minhash(128, 32, 1).unwrap(), SketchKind::MinHash),
            (SketchParams::bbit(512, 8, 1).unwrap(), SketchKind::BBitMinHash),
            (SketchParams::simhash(64, 1).unwrap(), SketchKind::SimHash),
        ];
        let lsh = LshStats { params: LshParams { bands: 39, rows: 13 }, mean_hit_bucket: 1.5, runs: 3 };
        let sh = SimhashStats { tables: 4, radius: 3, prefix_bits: 16, runs: 2 };
        let mut seen = std::collections::HashSet::new();
        for (params, kind) in kinds {
            assert_eq!(params.kind(), kind);
            let sketch = Sketcher::new(params).unwrap().sketch(&TokenSet::from_unsorted((0..200).collect())).unwrap();
            for live in [0u64, 1_000, 1_000_000, 100_000_000] {
                for (lsh, simhash) in [(None, None), (Some(lsh), None), (None, Some(sh))] {
                    let stats = Stats {
                        live,
                        deleted: live / 10,
                        kind,
                        slots: params.slots(),
                        bits: params.bits(),
                        lsh,
                        simhash,
                        banding: BandingPurpose::Estimated,
                    };
                    let questions = [
                        Query::threshold(sketch.clone(), 0.5),
                        Query::threshold(sketch.clone(), 0.9),
                        Query::top_k(sketch.clone(), 10),
                        Query::hamming(sketch.clone(), 2),
                        Query::hamming(sketch.clone(), 5),
                    ];
                    for q in questions {
                        let forces = std::iter::once(None).chain(PlanKind::ALL.map(Some));
                        for force in forces {
                            for (exact, recall_target) in [(false, 0.9), (true, 0.9), (false, 0.999_999)] {
                                let options = QueryOptions { force, exact, recall_target, ..QueryOptions::default() };
                                let q = Query { options, ..q.clone() };
                                let full = choose(&q, &stats, &CostModel::default());
                                assert_eq!(
                                    choose_plan(&q, &stats, &CostModel::default()),
                                    full.plan,
                                    "{q:?} {stats:?}"
                                );
                                assert!(full.alternatives.iter().all(|a| !a.note.is_empty()));
                                seen.insert(full.plan.access.kind());
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(seen.len(), PlanKind::ALL.len(), "the grid reaches every access path");
    }

    /// A SimHash probe over more runs costs more bucket reads, and EXPLAIN says how many.
    #[test]
    fn simhash_probe_cost_counts_runs() {
        let params = SketchParams::simhash(64, 1).unwrap();
        let sketch = Sketcher::new(params).unwrap().sketch(&TokenSet::from_unsorted((0..50).collect())).unwrap();
        let q = Query::hamming(sketch, 3);
        let probe = |runs| {
            let simhash = Some(SimhashStats { tables: 4, radius: 3, prefix_bits: 16, runs });
            let stats = Stats {
                live: 10_000_000,
                deleted: 0,
                kind: SketchKind::SimHash,
                slots: params.slots(),
                bits: params.bits(),
                lsh: None,
                simhash,
                banding: BandingPurpose::Estimated,
            };
            let c = choose(&q, &stats, &CostModel::default());
            assert_eq!(c.plan.access, Access::SimhashProbe { tables: 4 });
            let a =
                c.alternatives.into_iter().find(|a| a.plan.access.kind() == PlanKind::SimhashProbe).expect("costed");
            (a.cost_ns.expect("eligible"), a.note)
        };
        let ((one, _), (three, note)) = (probe(1), probe(3));
        assert!(three > one, "{three} > {one}");
        assert!(note.contains("12 bucket reads (3 runs)"), "{note}");
    }
}
