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
//!   banded in memory with the banding an index for the threshold would get, eligible under
//!   the rule an LSH probe is (not `exact`, expected recall over [t, 1] at least the target).
//!
//! Probing every record costs n times a query. Banding costs a pass over every signature's
//! slots (hashing) and a sort per band, estimated as two decode passes; in-memory SimHash
//! tables cost a sort of the n fingerprints per table, estimated as 32 compares each. The
//! choice is between a quadratic and a linear cost, so it does not hinge on those constants:
//! the in-memory joins win from a few hundred records on.

use crate::index::{SimhashTableDesign, banding_model, expected_recall_above, lsh_scheme_for};
use crate::sketch::params::SketchKind;

use super::cost::{Alternative, Choice, CostModel, Stats, choose, finish_of};
use super::plan::{Access, Finish, Plan, PlanKind};
use super::query::{Query, QueryKind};

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
    let scheme = match lsh_scheme_for(s.kind, s.bits, s.slots, t, None, None) {
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
    let cost = 2.0 * (s.live + s.deleted) as f64 * s.slots as f64 * c.decode_per_slot;
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
            let cost = s.live as f64 * f64::from(tables) * 32.0 * c.fingerprint_compare;
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
    let mut alternatives: Vec<Alternative> = per
        .alternatives
        .iter()
        .map(|a| Alternative {
            plan: a.plan,
            cost_ns: a.cost_ns.map(|c| c * n),
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
            if let Some(index) = index.filter(|_| stats.lsh.is_some())
                && (force == Some(PlanKind::LshProbe) || (force.is_none() && index.cost_ns.is_some()))
            {
                let reason = format!("one pass over the LSH buckets: {}", index.note);
                return Choice { plan: index.plan, reason, alternatives };
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
