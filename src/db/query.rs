//! Queries on a collection: similarity threshold, top-k, Hamming radius, pairwise estimates
//! and EXPLAIN (dedup: [`super::dedup`]). Each runs on one snapshot: key lookups, statistics and execution all
//! see the same commit.

use super::collection::Collection;
use crate::error::Result;
use crate::index::index_stats;
use crate::planner::cost::{Choice, CostModel, LshStats, SimhashStats, Stats, choose, choose_plan};
use crate::planner::error::QueryError;
use crate::planner::exec::{Analyze, Hit, execute};
use crate::planner::explain::Explain;
use crate::planner::plan::Plan;
use crate::planner::query::{Query, QueryKind, QueryOptions};
use crate::sketch::estimate::Estimate;
use crate::sketch::sketch::Sketch;
use crate::storage::reader::ReadSnapshot;

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

fn key_text(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

impl Collection {
    pub(crate) fn planner_stats_in(&self, snap: &ReadSnapshot) -> Result<Stats> {
        let state = snap.state(self.info())?;
        let (lsh, simhash) = index_stats(snap, self.info())?;
        let p = self.params();
        Ok(Stats {
            live: state.live,
            deleted: state.deleted,
            kind: p.kind(),
            slots: p.slots(),
            bits: p.bits(),
            lsh: lsh.map(|l| LshStats { params: l.params, mean_hit_bucket: l.mean_hit_bucket, runs: l.runs }),
            simhash: simhash.map(|s| SimhashStats {
                tables: s.tables,
                radius: s.radius,
                prefix_bits: s.prefix_bits,
                runs: s.runs,
            }),
        })
    }

    /// The statistics the planner reads (kept current by every write).
    pub fn planner_stats(&self) -> Result<Stats> {
        let snap = self.store().snapshot()?;
        self.planner_stats_in(&snap)
    }

    fn stored_sketch(&self, snap: &ReadSnapshot, key: &[u8]) -> Result<Sketch> {
        match snap.get(self.info(), key)? {
            Some(r) => Ok(r.sketch),
            None => Err(QueryError::UnknownKey { collection: self.name().to_string(), key: key_text(key) }.into()),
        }
    }

    /// The stored sketch of `key` (a typed error when absent), for building queries.
    pub fn sketch_of(&self, key: impl AsRef<[u8]>) -> Result<Sketch> {
        let snap = self.store().snapshot()?;
        self.stored_sketch(&snap, key.as_ref())
    }

    pub(crate) fn costs(&self) -> CostModel {
        // A damaged costs record must not stop queries: plan with the defaults, and let
        // `verify` report the record.
        self.store().planner_costs().ok().flatten().as_ref().map(CostModel::from).unwrap_or_default()
    }

    /// The planner's choice for `query`, without running it.
    pub fn plan(&self, query: &Query) -> Result<Choice> {
        let snap = self.store().snapshot()?;
        let stats = self.planner_stats_in(&snap)?;
        Ok(choose(query, &stats, &self.costs()))
    }

    /// Plans (without EXPLAIN's text) and runs `query` on `snap`.
    fn run(&self, snap: &ReadSnapshot, query: &Query) -> Result<(Plan, Vec<Hit>, Analyze)> {
        let stats = self.planner_stats_in(snap)?;
        let plan = choose_plan(query, &stats, &self.costs());
        let (hits, analyze) = execute(snap, self.info(), query, &plan, &stats)?;
        Ok((plan, hits, analyze))
    }

    /// Runs a query: the planner chooses the access path (unless forced), every candidate is
    /// verified with the estimator and the hits come back scored, best first.
    pub fn query(&self, query: &Query) -> Result<QueryResult> {
        let snap = self.store().snapshot()?;
        let (plan, hits, analyze) = self.run(&snap, query)?;
        Ok(QueryResult { hits, plan, analyze })
    }

    /// A query whose probe is the stored sketch of `key` (the key itself is among the hits
    /// when it qualifies).
    pub fn query_key(&self, key: impl AsRef<[u8]>, kind: QueryKind, options: QueryOptions) -> Result<QueryResult> {
        let snap = self.store().snapshot()?;
        let sketch = self.stored_sketch(&snap, key.as_ref())?;
        let (plan, hits, analyze) = self.run(&snap, &Query { sketch, kind, options })?;
        Ok(QueryResult { hits, plan, analyze })
    }

    /// EXPLAIN (and with `analyze`, EXPLAIN ANALYZE): the plan, why, the alternatives with
    /// their estimated costs, and what execution did.
    pub fn explain(&self, query: &Query, analyze: bool) -> Result<Explain> {
        let snap = self.store().snapshot()?;
        let stats = self.planner_stats_in(&snap)?;
        let choice = choose(query, &stats, &self.costs());
        let analyze = if analyze { Some(execute(&snap, self.info(), query, &choice.plan, &stats)?.1) } else { None };
        Ok(Explain { choice, analyze })
    }

    /// The pairwise estimate between two stored keys: Jaccard (set sketches) or cosine
    /// (SimHash), with its interval at `level`.
    pub fn estimate(&self, a: impl AsRef<[u8]>, b: impl AsRef<[u8]>, level: f64) -> Result<Estimate> {
        let snap = self.store().snapshot()?;
        let x = self.stored_sketch(&snap, a.as_ref())?;
        let y = self.stored_sketch(&snap, b.as_ref())?;
        Ok(x.similarity(&y, level)?)
    }
}
