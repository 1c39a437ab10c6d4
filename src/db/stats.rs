//! [`CollectionStats`] and [`IndexSummary`]: a collection's counters at one snapshot;
//! [`CacheStats`]: what an opened database keeps in memory.

use crate::index::BandingPurpose;

/// A collection's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectionStats {
    /// Live records.
    pub live: u64,
    /// Deleted rows awaiting compaction.
    pub deleted: u64,
    /// The row id the next record gets.
    pub next_row: u64,
    /// Rows per page.
    pub page_capacity: u32,
    /// Bytes per record in the pages.
    pub record_width: usize,
    /// The collection's index, if it has one.
    pub index: Option<IndexSummary>,
}

/// A collection's index as its statistics show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexSummary {
    /// SimHash permuted tables. Writes add runs, which merge in size tiers (at most 10
    /// runs); compaction merges them into one.
    SimhashTables {
        /// Tables.
        tables: u32,
        /// The largest radius they answer.
        radius: u32,
        /// Runs the tables are stored in (each a full set of tables over its rows).
        runs: u32,
    },
    /// LSH banding buckets. Writes add runs, which merge in size tiers (at most 10 runs);
    /// compaction merges them into one. Each run costs a probe one more bucket read per band.
    Lsh {
        /// Bands.
        bands: u32,
        /// Rows per band.
        rows: u32,
        /// Runs the buckets are stored in.
        runs: u32,
        /// The band-hash version of the stored keys (`BAND_HASH_VERSION` for an
        /// index built by this release; an older one stays until `rebuild_index`).
        band_hash: u16,
        /// Removed rows whose entries the runs still hold: probes pass over them, and a
        /// merge drops them (a run is rewritten once an eighth of its rows are removed;
        /// compaction drops them all).
        removed_rows: u64,
        /// The rule that chose the banding for the index's threshold (`None`: given bands
        /// and rows): [`BandingPurpose::ExactRecall`] on a collection that keeps exact
        /// shingles, [`BandingPurpose::Estimated`] otherwise and on exact collections
        /// indexed before that rule existed (until `rebuild_index`).
        banding: Option<BandingPurpose>,
    },
}

/// What one opened database keeps in memory, cache by cache: each bounded by its budget (set
/// at open with [`DatabaseBuilder`](crate::DatabaseBuilder)), and the bytes it holds now.
/// Answers never depend on any of them, only speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// The storage engine's page cache size in bytes
    /// ([`DatabaseBuilder::cache_size`](crate::DatabaseBuilder::cache_size), default 1 GiB).
    pub page_cache_budget: usize,
    /// Bytes of pages the page cache holds now (read pages and the write buffer), at most
    /// its budget.
    pub page_cache_held: usize,
    /// The probe cache budget in bytes
    /// ([`DatabaseBuilder::probe_cache_budget`](crate::DatabaseBuilder::probe_cache_budget),
    /// default 1 GiB).
    pub probe_cache_budget: usize,
    /// Bytes the probe caches hold now (index values, candidates' records, their places).
    pub probe_cache_held: usize,
    /// Whether the handle keeps the snapshot of its last commit for its reads (read-write
    /// handles that alone commit to the file, between their writes).
    pub snapshot_kept: bool,
    /// Values derived from the kept snapshot (per queried collection: its state, index
    /// statistics and plans, a few hundred bytes each); 0 without a kept snapshot. They go
    /// with the snapshot, at the handle's next write.
    pub snapshot_memo_entries: usize,
}
