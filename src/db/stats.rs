//! [`CollectionStats`] and [`IndexSummary`]: a collection's counters at one snapshot.

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
