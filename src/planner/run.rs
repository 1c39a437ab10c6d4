//! The planner's entry points on one read snapshot: the statistics it plans from, the plan
//! it would choose, running a query and EXPLAIN. Statistics, plan and execution all see the
//! same commit.

use std::sync::Arc;

use crate::codec::meta::CollectionState;
use crate::index::{LshStats, ProbeCache, SimhashStats, index_stats, query_index};
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::ReadSnapshot;

use super::cost::{Choice, CostModel, Stats, choose, choose_plan};
use super::error::QueryError;
use super::exec::{Analyze, Hit, execute, execute_in, validate};
use super::explain::Explain;
use super::explain::Scoring;
use super::plan::Plan;
use super::query::Query;

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
/// and the index definition. Valid only for the snapshot it was read from.
pub(crate) struct Prepared {
    stats: Stats,
    cache: Option<Arc<ProbeCache>>,
}

/// [`Prepared`] for the collection `info` at `snap`.
pub(crate) fn prepare(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Prepared, QueryError> {
    let state = snap.state(info)?;
    let index = query_index(snap, info, &state)?;
    Ok(Prepared { stats: stats_of(info, &state, index.lsh.map(|l| l.plan), index.simhash), cache: index.cache })
}

fn stats_of(
    info: &CollectionInfo,
    state: &CollectionState,
    lsh: Option<LshStats>,
    simhash: Option<SimhashStats>,
) -> Stats {
    let p = &info.def.params;
    Stats { live: state.live, deleted: state.deleted, kind: p.kind(), slots: p.slots(), bits: p.bits(), lsh, simhash }
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
    run_prepared(snap, info, query, costs, &prepare(snap, info)?)
}

/// [`run`] with the statistics and probe cache `prep` read from `snap` already.
pub(crate) fn run_prepared(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    costs: &CostModel,
    prep: &Prepared,
) -> Result<QueryResult, QueryError> {
    let plan = choose_plan(query, &prep.stats, costs);
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
    Ok(Explain { choice, analyze, scoring })
}

/// The stored sketch of `key`, or [`QueryError::UnknownKey`].
pub(crate) fn stored_sketch(snap: &ReadSnapshot, info: &CollectionInfo, key: &[u8]) -> Result<Sketch, QueryError> {
    match snap.get(info, key)? {
        Some(r) => Ok(r.sketch),
        None => Err(QueryError::UnknownKey {
            collection: info.def.name.clone(),
            key: String::from_utf8_lossy(key).into_owned(),
        }),
    }
}
