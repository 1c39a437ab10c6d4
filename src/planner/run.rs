//! The planner's entry points on one read snapshot: the statistics it plans from, the plan
//! it would choose, running a query and EXPLAIN. Statistics, plan and execution all see the
//! same commit.

use std::sync::{Arc, OnceLock};

use crate::codec::meta::CollectionState;
use crate::index::{
    BandingPurpose, IndexBanding, LshParams, LshStats, ProbeCache, SimhashStats, index_stats, query_index,
};
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::ReadSnapshot;

use super::cost::{Choice, CostModel, Stats, choose, choose_plan};
use super::error::QueryError;
use super::exec::{Analyze, Hit, execute, execute_in, validate};
use super::explain::Explain;
use super::explain::Scoring;
use super::plan::{Access, Plan};
use super::query::{Query, QueryKind, QueryOptions};

/// The answer to a query: verified, scored hits best first, the plan that produced them and
/// what execution did.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    /// The hits, best first (highest estimate; for Hamming queries, smallest distance).
    pub hits: Vec<Hit>,
    /// The plan that ran.
    pub plan: Plan,
    /// Execution counters and time.
    pub analyze: Analyze,
}

/// The statistics the planner reads for the collection `info` at `snap` (kept current by
/// every write).
pub(crate) fn stats_in(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Stats, QueryError> {
    let state = snap.state(info)?;
    let (lsh, simhash) = index_stats(snap, info)?;
    Ok(stats_of(info, &state, lsh.map(|l| l.plan), simhash))
}

/// What every query at one snapshot shares: the planner's statistics and the probe cache of
/// the collection's index (`None` without an index), from one read of the collection state
/// and the index definition, and the plans of the first questions asked. Valid only for the
/// snapshot it was read from, and for one cost model (every query run with one `Prepared`
/// must pass the same [`CostModel`]).
pub(crate) struct Prepared {
    stats: Stats,
    cache: Option<Arc<ProbeCache>>,
    /// The plans of the first questions asked: `choose_plan` reads only a query's question
    /// and options (never its sketch), the statistics and the costs, so queries asking one
    /// question (and, re-ranking exactly, its relaxed form) plan it once per snapshot.
    plans: [OnceLock<(QueryKind, QueryOptions, CostModel, Plan)>; 2],
}

impl Prepared {
    /// The row and sketch of the stored record `key` at `snap`, `None` for an absent key. With
    /// an index the key's row and its record come through its probe cache (warm: no key
    /// lookup, no read and check of its 64 KiB page); else, or when the cache does not hold it live
    /// under this key, from its page as `ReadSnapshot::get` reads it.
    pub(crate) fn stored(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        key: &[u8],
    ) -> Result<Option<(u64, Sketch)>, QueryError> {
        if let Some(cache) = &self.cache {
            let Some(row) = cache.row_of_key(key, || Ok::<_, QueryError>(snap.row_of(info, key)?))? else {
                return Ok(None);
            };
            if let Some(rec) = cache.records(snap, info, &[row])?.first()
                && rec.row == row
                && rec.key == key
            {
                return Ok(Some((row, rec.sketch.clone())));
            }
        }
        Ok(snap.get(info, key)?.map(|r| (r.row, r.sketch)))
    }

    /// The plan [`choose_plan`] chooses for `query`, remembered for its question and costs.
    fn plan(&self, query: &Query, costs: &CostModel) -> Plan {
        for slot in &self.plans {
            match slot.get() {
                Some((kind, options, c, plan)) if *kind == query.kind && *options == query.options && c == costs => {
                    return *plan;
                }
                Some(_) => {}
                None => {
                    let plan = choose_plan(query, &self.stats, costs);
                    // Another thread may have filled the slot meanwhile: the plan is the same
                    // function of the same inputs, so either answer is right.
                    let _ = slot.set((query.kind, query.options, *costs, plan));
                    return plan;
                }
            }
        }
        choose_plan(query, &self.stats, costs)
    }

    /// Whether these statistics were read for `info`'s collection as this handle describes
    /// it (a handle opened before the collection was dropped and made again under the same
    /// id describes another one).
    fn describes(&self, info: &CollectionInfo) -> bool {
        self.stats.kind == info.def.params.kind()
            && self.stats.slots == info.def.params.slots()
            && self.stats.bits == info.def.params.bits()
            && self.stats.banding == BandingPurpose::for_collection(info.shingles)
    }
}

/// [`Prepared`] for the collection `info` at `snap`, read once per snapshot and kept in it.
pub(crate) fn prepare(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Arc<Prepared>, QueryError> {
    let prep = snap.memo(info.def.id, || prepare_now(snap, info))?;
    if prep.describes(info) { Ok(prep) } else { prepare_now(snap, info).map(Arc::new) }
}

/// [`Prepared`] for the collection `info` at `snap`, read now.
fn prepare_now(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Prepared, QueryError> {
    let state = snap.state(info)?;
    let index = query_index(snap, info, &state)?;
    let stats = stats_of(info, &state, index.lsh.map(|l| l.plan), index.simhash);
    Ok(Prepared { stats, cache: index.cache, plans: Default::default() })
}

fn stats_of(
    info: &CollectionInfo,
    state: &CollectionState,
    lsh: Option<LshStats>,
    simhash: Option<SimhashStats>,
) -> Stats {
    let p = &info.def.params;
    Stats {
        live: state.live,
        deleted: state.deleted,
        kind: p.kind(),
        slots: p.slots(),
        bits: p.bits(),
        lsh,
        simhash,
        banding: BandingPurpose::for_collection(info.shingles),
    }
}

/// The planner's choice for `query`, without running it.
pub(crate) fn plan(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    costs: &CostModel,
) -> Result<Choice, QueryError> {
    Ok(choose(query, &stats_in(snap, info)?, costs))
}

/// Plans (without EXPLAIN's text) and runs `query`.
pub(crate) fn run(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    costs: &CostModel,
) -> Result<QueryResult, QueryError> {
    run_prepared(snap, info, query, costs, &*prepare(snap, info)?)
}

/// [`run`] with the statistics and probe cache `prep` read from `snap` already.
pub(crate) fn run_prepared(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    costs: &CostModel,
    prep: &Prepared,
) -> Result<QueryResult, QueryError> {
    let plan = prep.plan(query, costs);
    let (hits, analyze) = execute_in(snap, info, query, &plan, &prep.stats, prep.cache.as_ref())?;
    Ok(QueryResult { hits, plan, analyze })
}

/// EXPLAIN (and with `analyze`, EXPLAIN ANALYZE) of `query`.
pub(crate) fn explain(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    costs: &CostModel,
    analyze: bool,
    scoring: Scoring,
) -> Result<Explain, QueryError> {
    validate(query, info.def.params.kind())?;
    let stats = stats_in(snap, info)?;
    let choice = choose(query, &stats, costs);
    let analyze = if analyze { Some(execute(snap, info, query, &choice.plan, &stats)?.1) } else { None };
    let banding = banding_shown(snap, info, &choice.plan, query.kind, &stats)?;
    Ok(Explain { choice, analyze, scoring, banding })
}

/// The LSH banding `plan` uses, as EXPLAIN shows it: the index's as recorded (with the rule
/// that chose it) for a probe of the index, the rule's banding for the threshold for one
/// banded in memory; `None` for plans that band nothing.
pub(crate) fn banding_shown(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    plan: &Plan,
    kind: QueryKind,
    stats: &Stats,
) -> Result<Option<IndexBanding>, QueryError> {
    Ok(match (plan.access, kind) {
        (Access::LshProbe { .. }, _) => index_stats(snap, info)?.0.map(|l| l.banding(info)),
        (Access::LshBanding { bands, rows }, QueryKind::Threshold(t)) => {
            Some(IndexBanding { params: LshParams { bands, rows }, threshold: t, purpose: Some(stats.banding) })
        }
        _ => None,
    })
}

/// The stored sketch of `key`, or [`QueryError::UnknownKey`]: read as a query by stored key
/// reads it ([`Prepared::stored`], through the index's probe cache when there is one).
pub(crate) fn stored_sketch(snap: &ReadSnapshot, info: &CollectionInfo, key: &[u8]) -> Result<Sketch, QueryError> {
    match prepare(snap, info)?.stored(snap, info, key)? {
        Some((_, sketch)) => Ok(sketch),
        None => Err(QueryError::UnknownKey {
            collection: info.def.name.clone(),
            key: String::from_utf8_lossy(key).into_owned(),
        }),
    }
}
