//! Per-collection index statistics for the planner, read from the index definition that
//! every write keeps current in its own transaction.

use super::banding::{BandingPurpose, IndexBanding};
use super::defs::{IndexDef, IndexSpec};
use super::maintain::recorded_banding;
use std::sync::Arc;

use super::lsh::LshParams;
use super::probe_cache::ProbeCache;
use crate::codec::meta::CollectionState;
use crate::index::error::IndexError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::contain;
use crate::storage::reader::ReadSnapshot;

/// What the planner reads of an LSH index (its `Stats::lsh`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LshStats {
    /// The banding.
    pub params: LshParams,
    /// The size-biased mean bucket size, sum(s^2) / sum(s) over buckets (0 when empty): the
    /// expected size of the bucket a stored row's band key falls into.
    pub mean_hit_bucket: f64,
    /// The index's runs: a probe reads each band's bucket in every run.
    pub runs: u32,
}

/// LSH index statistics: the planner's part and what summaries add to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LshIndexStats {
    /// What the planner reads.
    pub plan: LshStats,
    /// The band-hash version of its keys.
    pub band_hash: u16,
    /// Removed rows whose entries the runs still hold (listed in `sketchdb.lsh_dead`).
    pub removed_rows: u64,
    /// The threshold the banding is tuned for.
    pub threshold: f64,
}

impl LshIndexStats {
    /// The banding with the rule that chose it (see [`recorded_banding`]; that search runs
    /// once per banding and threshold, then is remembered).
    pub(crate) fn banding(&self, info: &CollectionInfo) -> IndexBanding {
        let own = BandingPurpose::for_collection(info.shingles);
        recorded_banding(&info.def.params, self.threshold, self.plan.params, own)
    }
}

/// SimHash table statistics (the planner's `Stats::simhash`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimhashStats {
    /// Tables.
    pub tables: u32,
    /// The radius the tables guarantee (every fingerprint within it is found).
    pub radius: u32,
    /// Leading bits every table's probe matches exactly (the shortest table prefix).
    pub prefix_bits: u32,
    /// Runs the tables are stored in: a cold probe reads each table's bucket in every run.
    pub runs: u32,
}

/// Both kinds of index statistics from one read of the index definition (a collection has
/// at most one index, so at most one is `Some`).
pub(crate) fn index_stats(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
) -> Result<(Option<LshIndexStats>, Option<SimhashStats>), IndexError> {
    contain("read index statistics", || Ok(IndexDef::load(snap, info)?.map_or((None, None), |d| stats_of(&d))))
}

/// What a query reads of the collection's index from one read of its definition: the
/// statistics of [`index_stats`] and the probe cache of the index version `snap` reads.
pub(crate) struct QueryIndex {
    pub(crate) lsh: Option<LshIndexStats>,
    pub(crate) simhash: Option<SimhashStats>,
    /// `None` without an index.
    pub(crate) cache: Option<Arc<ProbeCache>>,
}

/// [`QueryIndex`] of the collection as of `snap`, whose state there is `state`.
pub(crate) fn query_index(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    state: &CollectionState,
) -> Result<QueryIndex, IndexError> {
    contain("read index statistics", || {
        let version = u128::from(state.next_row) << 64 | u128::from(state.live);
        let cache = ProbeCache::of(snap, info, version)?;
        let (lsh, simhash) = cache.as_ref().map_or((None, None), |c| stats_of(&c.def));
        Ok(QueryIndex { lsh, simhash, cache })
    })
}

/// The statistics of an index definition.
fn stats_of(d: &IndexDef) -> (Option<LshIndexStats>, Option<SimhashStats>) {
    match &d.spec {
        IndexSpec::Lsh { scheme, threshold, .. } | IndexSpec::LshGroups { scheme, threshold, .. } => (
            Some(LshIndexStats {
                plan: LshStats {
                    params: scheme.params,
                    mean_hit_bucket: if d.entries == 0 { 0.0 } else { d.sum_sq as f64 / d.entries as f64 },
                    runs: match &d.spec {
                        IndexSpec::Lsh { runs, .. } => runs.len() as u32,
                        _ => 1,
                    },
                },
                band_hash: scheme.version,
                removed_rows: match &d.spec {
                    IndexSpec::Lsh { runs, .. } => runs.iter().map(|r| r.dead).sum(),
                    _ => 0,
                },
                threshold: *threshold,
            }),
            None,
        ),
        IndexSpec::Simhash { design, runs, .. } => (
            None,
            Some(SimhashStats {
                tables: design.table_count() as u32,
                radius: design.k(),
                prefix_bits: design.min_prefix_bits(),
                runs: runs.len() as u32,
            }),
        ),
    }
}

/// The LSH statistics, or `None` without an LSH index.
pub(crate) fn lsh_stats(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Option<LshIndexStats>, IndexError> {
    Ok(index_stats(snap, info)?.0)
}

/// The SimHash statistics, or `None` without SimHash tables.
pub(crate) fn simhash_stats(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Option<SimhashStats>, IndexError> {
    Ok(index_stats(snap, info)?.1)
}
