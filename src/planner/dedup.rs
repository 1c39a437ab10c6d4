//! Choosing how a dedup self-join runs: pure, like [`choose`], over the same statistics and
//! costs.
//!
//! The candidates are:
//! - probing every record with the plan `choose` picks for one record (exact plans give the
//!   exact self-join with respect to the sketches);
//! - for a Hamming radius, one pass over SimHash tables that cover it (exact), or without
//!   them [`Access::SimhashInMemory`]: tables built in memory over the loaded fingerprints
//!   and self-joined (exact too);
//! - for a threshold with an LSH index the planner may probe (eligible or forced), one pass
//!   over its buckets;
//! - for a threshold without an LSH index, [`Access::LshBanding`]: the loaded signatures
//!   banded in memory with the banding an index for the threshold would get on this
//!   collection (`Stats::banding`: for candidate recall when it keeps exact shingles),
//!   eligible under the rule an LSH probe is (not `exact`, expected recall over [t, 1] at
//!   least the target).
//!
//! Every plan first loads each stored row (decoding its sketch and copying its key), so each
//! alternative's cost includes [`load_cost`]. Decoding costs [`CostModel::decode_per_slot`]
//! per 32 bits of signature (a b-bit or 8-bit OPH slot decodes in a fraction of a 32-bit
//! one). On top of it:
//! - probing every record costs n times the planner's cost of one query;
//! - one pass over LSH buckets reads every band's entries of every run, sorts them band by
//!   band, and verifies the candidate pairs the index statistics predict (the size-biased
//!   mean bucket size gives the pairs sharing a bucket);
//! - banding in memory hashes every signature's slots (each as dear as decoding a 32-bit
//!   slot), sorts the n band keys of each band,
//!   and verifies the pairs sharing a bucket (without an index, one per record is assumed);
//! - in-memory SimHash tables cost a sort of the n fingerprints per table, estimated as 32
//!   compares each; one pass over stored SimHash tables reads their entries.
//!
//! A threshold dedup without an LSH index it may use also pays for choosing the banding
//! (searching the bands x rows grid and integrating each candidate's collision curve), in
//! proportion to the slots, whichever plan wins: [`plan_cost`] is added to every
//! alternative. On a small collection it is most of the time.
//!
//! The constants below were fitted to the CPU time (user + system, all threads) of release
//! builds of `sketchdb dedup` on stored collections of the first 25k and all 100k sets of
//! sets-100k (MinHash 128x32 and b-bit 512x8, with and without an LSH index at t = 0.8) and
//! of the bundled samples (OPH 512x8, 12 records), against the default [`CostModel`]: every
//! estimate is within 0.85-1.6x of the CPU time measured. The row load and the fixed costs
//! are the same for every alternative, so they move the estimate, never the choice; the
//! choice is between a quadratic and a linear cost and does not hinge on the others either.

use crate::index::{Banding, SimhashTableDesign, banding_model, expected_recall_above, lsh_scheme_for};
use crate::sketch::params::SketchKind;

use super::cost::{Alternative, Choice, CostModel, LshStats, Stats, choose, finish_of};
use super::plan::{Access, Finish, Plan, PlanKind};
use super::query::{Query, QueryKind};

/// Fixed cost of loading one row besides decoding its slots (reading its page, allocating
/// its sketch and key, and its share of the clustering), in nanoseconds.
const LOAD_ROW_NS: f64 = 3_000.0;
/// Fixed cost of a self-join: the snapshot, the statistics, the page walk, in nanoseconds.
const JOIN_FIXED_NS: f64 = 1_000_000.0;
/// Cost of one element of a band's sort (n log2 n of them per band), in nanoseconds.
const SORT_NS: f64 = 1.0;
/// Cost of reading one stored bucket entry (a row of one band in one run), in nanoseconds.
const ENTRY_NS: f64 = 10.0;
/// Cost of choosing a banding for a threshold, per slot of the sketch, in nanoseconds.
const PLAN_SLOT_NS: f64 = 50_000.0;

/// Decoding one row's signature: `decode_per_slot` per 32 bits of it.
fn decode_cost(s: &Stats, c: &CostModel) -> f64 {
    s.slots as f64 * f64::from(s.bits) / 32.0 * c.decode_per_slot
}

/// Loading every stored row (deleted rows are read too) for an in-memory self-join.
pub(crate) fn load_cost(s: &Stats, c: &CostModel) -> f64 {
    JOIN_FIXED_NS + (s.live + s.deleted) as f64 * (decode_cost(s, c) + LOAD_ROW_NS)
}

/// Choosing the banding of a threshold dedup without a usable LSH index (see the module
/// notes); nothing for SimHash, which is not banded.
pub(crate) fn plan_cost(s: &Stats) -> f64 {
    if s.kind == SketchKind::SimHash { 0.0 } else { s.slots as f64 * PLAN_SLOT_NS }
}

/// Verifying `pairs` candidate pairs on sketches already in memory.
fn verify_cost(pairs: f64, s: &Stats, c: &CostModel) -> f64 {
    pairs * s.slots as f64 * c.bin_compare.max(0.01) * 4.0
}

/// Sorting `n` keys once per band for `bands` bands.
fn sort_cost(bands: f64, n: f64) -> f64 {
    bands * n * n.max(2.0).log2() * SORT_NS
}

/// One pass over an LSH index's buckets: its entries read and sorted band by band, the
/// candidate pairs the statistics predict verified.
fn lsh_pass_cost(lsh: &LshStats, s: &Stats, c: &CostModel) -> (f64, f64) {
    let n = s.live as f64;
    let bands = f64::from(lsh.params.bands);
    let pairs = bands * n * (lsh.mean_hit_bucket - 1.0).max(0.0) / 2.0;
    let cost = load_cost(s, c)
        + bands * n * f64::from(lsh.runs.max(1)) * ENTRY_NS
        + sort_cost(bands, n)
        + verify_cost(pairs, s, c);
    (cost, pairs)
}

/// Computes the banding [`choose_dedup`] considers for a threshold-`t` dedup over `s`, for
/// its memo: the rule's search takes tens of milliseconds on one thread, which a caller can
/// run beside other work (the records' load) instead of before the choice.
pub(crate) fn warm_banding(t: f64, s: &Stats) {
    if s.kind != SketchKind::SimHash {
        let _ = lsh_scheme_for(s.kind, s.bits, s.slots, t, Banding::rule(s.banding));
    }
}

fn banding(t: f64, q: &Query, s: &Stats, c: &CostModel) -> Alternative {
    let finish = Finish::Verify { threshold: t };
    let no = |why: String| Alternative {
        plan: Plan { access: Access::LshBanding { bands: 0, rows: 0 }, finish },
        cost_ns: None,
        note: why,
    };
    if s.kind == SketchKind::SimHash {
        return no("SimHash fingerprints are not banded".into());
    }
    let scheme = match lsh_scheme_for(s.kind, s.bits, s.slots, t, Banding::rule(s.banding)) {
        Ok(scheme) => scheme,
        Err(e) => return no(format!("no banding: {e}")),
    };
    let p = scheme.params;
    let plan = Plan { access: Access::LshBanding { bands: p.bands, rows: p.rows }, finish };
    let forced = q.options.force == Some(PlanKind::LshProbe);
    if q.options.exact && !forced {
        return Alternative { plan, cost_ns: None, note: "not exact (the dedup asks for an exact answer)".into() };
    }
    let model = banding_model(s.kind, s.bits).map(|(_, m)| m).unwrap_or_default();
    let recall = expected_recall_above(t, p, model);
    if recall < q.options.recall_target && !forced {
        return Alternative {
            plan,
            cost_ns: None,
            note: format!(
                "expected recall {recall:.3} over similarities in [{t}, 1] is below the target {}",
                q.options.recall_target
            ),
        };
    }
    let n = s.live as f64;
    // Hashing every slot once costs about a decode pass of 32-bit slots, whatever their
    // width; a bucket per record is assumed.
    let cost = load_cost(s, c)
        + plan_cost(s)
        + n * s.slots as f64 * c.decode_per_slot
        + sort_cost(f64::from(p.bands), n)
        + verify_cost(n, s, c);
    Alternative {
        plan,
        cost_ns: Some(cost),
        note: format!("{}x{} bands in memory, expected recall {recall:.3}", p.bands, p.rows),
    }
}

fn simhash_in_memory(radius: u32, q: &Query, s: &Stats, c: &CostModel) -> Alternative {
    let finish = finish_of(q.kind);
    let plan = |tables| Plan { access: Access::SimhashInMemory { tables }, finish };
    if s.kind != SketchKind::SimHash {
        return Alternative {
            plan: plan(0),
            cost_ns: None,
            note: "Hamming self-joins need SimHash fingerprints".into(),
        };
    }
    match SimhashTableDesign::design(s.live, radius, u32::from(s.bits)) {
        Ok(d) => {
            let tables = d.table_count() as u32;
            let cost = load_cost(s, c) + s.live as f64 * f64::from(tables) * 32.0 * c.fingerprint_compare;
            Alternative { plan: plan(tables), cost_ns: Some(cost), note: format!("{tables} SimHash tables in memory") }
        }
        Err(e) => Alternative { plan: plan(0), cost_ns: None, note: format!("no table design: {e}") },
    }
}

/// Whether to run `memory` (an in-memory self-join whose kind is `kind`) rather than probing
/// every record at `per_cost`: when forced to that kind, or unforced and cheaper.
fn take_memory(memory: &Alternative, kind: PlanKind, force: Option<PlanKind>, per_cost: f64) -> bool {
    match (force, memory.cost_ns) {
        (Some(f), Some(_)) => f == kind,
        (None, Some(c)) => c < per_cost,
        _ => false,
    }
}

/// Puts `alt` in place of the alternative with the same plan (or adds it).
fn replace(alternatives: &mut Vec<Alternative>, alt: Alternative) {
    match alternatives.iter_mut().find(|a| a.plan == alt.plan) {
        Some(a) => *a = alt,
        None => alternatives.push(alt),
    }
}

/// The cost of `plan` among the alternatives (infinite when it has none).
fn cost_of(alternatives: &[Alternative], plan: &Plan) -> f64 {
    alternatives.iter().find(|a| a.plan == *plan).and_then(|a| a.cost_ns).unwrap_or(f64::INFINITY)
}

/// The plan of a dedup whose per-record question is `probe` (any one record's query: `choose`
/// never reads the probe's sketch). Alternatives list the per-record plans (costs for all
/// records) and the in-memory join considered.
pub fn choose_dedup(probe: &Query, stats: &Stats, costs: &CostModel) -> Choice {
    let per = choose(probe, stats, costs);
    let n = stats.live as f64;
    let load = load_cost(stats, costs);
    let mut alternatives: Vec<Alternative> = per
        .alternatives
        .iter()
        .map(|a| Alternative {
            plan: a.plan,
            cost_ns: a.cost_ns.map(|c| load + c * n),
            note: format!("per record: {}", a.note),
        })
        .collect();
    let force = probe.options.force;
    match probe.kind {
        QueryKind::Hamming(radius) => {
            if let Some(sh) = stats.simhash
                && radius <= sh.radius
                && matches!(force, None | Some(PlanKind::SimhashProbe))
            {
                let plan = Plan { access: Access::SimhashProbe { tables: sh.tables }, finish: finish_of(probe.kind) };
                let reason = "one pass over SimHash tables covering the radius (exact)".into();
                let entries = n * f64::from(sh.tables) * f64::from(sh.runs.max(1));
                let cost = load + entries * ENTRY_NS + sort_cost(f64::from(sh.tables), n);
                let note = format!("one pass over the SimHash tables: {entries:.0} entries read");
                replace(&mut alternatives, Alternative { plan, cost_ns: Some(cost), note });
                return Choice { plan, reason, alternatives };
            }
            let memory = simhash_in_memory(radius, probe, stats, costs);
            alternatives.push(memory.clone());
            if take_memory(&memory, PlanKind::SimhashProbe, force, cost_of(&alternatives, &per.plan)) {
                let reason = format!("{}: {}", if force.is_some() { "forced" } else { "cheapest" }, memory.note);
                return Choice { plan: memory.plan, reason, alternatives };
            }
            Choice { plan: per.plan, reason: format!("per record: {}", per.reason), alternatives }
        }
        QueryKind::Threshold(t) => {
            // An LSH index the planner may probe (eligible, or forced) answers the self-join in
            // one pass over its buckets: linear like the banding, without hashing anything.
            let index = per.alternatives.iter().find(|a| matches!(a.plan.access, Access::LshProbe { .. }));
            if let (Some(index), Some(lsh)) = (index, stats.lsh)
                && (force == Some(PlanKind::LshProbe) || (force.is_none() && index.cost_ns.is_some()))
            {
                let reason = format!("one pass over the LSH buckets: {}", index.note);
                // The pass replaces probing every record: its own cost, not n probes'.
                let (cost, pairs) = lsh_pass_cost(&lsh, stats, costs);
                let note = format!(
                    "one pass over the LSH buckets: {} bands x {} runs, about {pairs:.0} candidate pairs",
                    lsh.params.bands,
                    lsh.runs.max(1)
                );
                let plan = index.plan;
                replace(&mut alternatives, Alternative { plan, cost_ns: Some(cost), note });
                return Choice { plan, reason, alternatives };
            }
            // Choosing the banding is paid whichever plan runs.
            let planning = plan_cost(stats);
            for a in &mut alternatives {
                a.cost_ns = a.cost_ns.map(|c| c + planning);
            }
            let band = banding(t, probe, stats, costs);
            alternatives.push(band.clone());
            if take_memory(&band, PlanKind::LshProbe, force, cost_of(&alternatives, &per.plan)) {
                let reason = if force.is_some() { "forced lsh-probe without an LSH index" } else { "cheapest" };
                Choice { plan: band.plan, reason: format!("{reason}: {}", band.note), alternatives }
            } else {
                Choice { plan: per.plan, reason: format!("per record: {}", per.reason), alternatives }
            }
        }
        QueryKind::TopK(_) => Choice { plan: per.plan, reason: per.reason, alternatives },
    }
}
