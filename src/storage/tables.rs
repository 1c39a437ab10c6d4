//! Every redb table sketchdb uses. `storage-format.md` ("Tables") is the spec of each.
//!
//! Collection ids are u32 (from 1, never reused); row ids are u64 (per collection, from 0,
//! never reused); a page is keyed by the row id of its first row.

use redb::TableDefinition;

/// `&str -> &[u8]`: `"format"` -> format record envelope, `"catalog"` -> catalog envelope.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("sketchdb.meta");
/// `u32 -> &[u8]`: collection id -> collection definition envelope.
pub(crate) const COLLECTIONS: TableDefinition<u32, &[u8]> = TableDefinition::new("sketchdb.collections");
/// `&str -> u32`: collection name -> collection id.
pub(crate) const COLLECTION_NAMES: TableDefinition<&str, u32> = TableDefinition::new("sketchdb.collection_names");
/// `u32 -> &[u8]`: collection id -> collection state envelope.
pub(crate) const COLLECTION_STATE: TableDefinition<u32, &[u8]> = TableDefinition::new("sketchdb.collection_state");
/// `(u32, &[u8]) -> u64`: (collection id, user key) -> row id of the key's live record.
/// (The reverse map, row id -> key, is the key heap of the row's page.)
pub(crate) const KEYS: TableDefinition<(u32, &[u8]), u64> = TableDefinition::new("sketchdb.keys");
/// `(u32, u64) -> &[u8]`: (collection id, first row id of the page) -> columnar page.
pub(crate) const PAGES: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("sketchdb.pages");

/// `(u32, u64) -> &[u8]`: (collection id, row id) -> the row's exact shingle set (layout in
/// `codec::shingles`), for collections that keep shingles; row `u64::MAX` is the collection's
/// marker (one byte, the layout version). See `storage::shingles`.
pub(crate) const SHINGLES: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("sketchdb.shingles");
pub(crate) const SHINGLES_NAME: &str = "sketchdb.shingles";
/// The row id of a collection's marker entry in [`SHINGLES`].
pub(crate) const SHINGLES_MARKER_ROW: u64 = u64::MAX;
/// The layout version a marker holds (the only one this build reads and writes).
pub(crate) const SHINGLES_LAYOUT: u8 = 1;
/// `(u32, u64) -> u128`: (collection id, row id) -> xxh3-128 content hash of the source the
/// row was sketched from, for rows written with one (`Batch::insert_with_hash`). Created by
/// the first such write; entries of removed rows are dropped with them.
pub(crate) const CONTENT_HASHES: TableDefinition<(u32, u64), u128> = TableDefinition::new("sketchdb.content_hashes");
pub(crate) const CONTENT_HASHES_NAME: &str = "sketchdb.content_hashes";

// ---- Index tables (storage-format.md, "Index tables"). Written by `crate::index`. ----

/// `u32 -> &[u8]`: collection id -> index definition envelope (record kind 5): the index
/// spec (SimHash table design or LSH band-key scheme) and its counters. Absent: no index.
pub(crate) const INDEX_DEFS: TableDefinition<u32, &[u8]> = TableDefinition::new("sketchdb.index_defs");
/// `(u32, u32, u32) -> &[u8]`: (collection id, SimHash table number, bucket) -> packed
/// bucket (8-byte header with the entry count, sorted key suffixes, row ids; layout in
/// `index::simhash::format`). Bucket = the top `bucket_bits` bits of the table's permuted key.
pub(crate) const SIMHASH_BUCKETS: TableDefinition<(u32, u32, u32), &[u8]> =
    TableDefinition::new("sketchdb.simhash_buckets");
/// `(u32, u32, u32, u64, u32) -> &[u8]`: (collection id, band, run, group, chunk) -> packed
/// chunk of the group's sorted (band-key suffix, row id) entries. An LSH index is a short list
/// of runs (each one sorted copy of some rows' entries, with its own group width); the group
/// is the top `group_bits` bits of the band key under the run's width.
pub(crate) const LSH_BUCKETS: TableDefinition<(u32, u32, u32, u64, u32), &[u8]> =
    TableDefinition::new("sketchdb.lsh_runs");
/// The table of the earlier single-run LSH layout, `(collection id, band, group, chunk)`:
/// never written; drop and rebuild clear a collection's entries from it.
pub(crate) const LSH_GROUPS_V1: TableDefinition<(u32, u32, u64, u32), &[u8]> =
    TableDefinition::new("sketchdb.lsh_buckets");
/// `(u32, u64) -> ()`: (collection id, row id) of every removed row whose entries an LSH run
/// still holds (dropped when a merge rewrites the run; each run counts its own).
pub(crate) const LSH_DEAD: TableDefinition<(u32, u64), ()> = TableDefinition::new("sketchdb.lsh_dead");
/// `(u32, u64) -> &[u8]`: (collection id, row id) -> the row's band keys (band order): the
/// reverse map of LSH indexes written by earlier builds, never written now; a write to such
/// an index removes its entries (band keys are computed from the stored signature instead).
pub(crate) const LSH_ROWS: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("sketchdb.lsh_rows");

pub(crate) const INDEX_DEFS_NAME: &str = "sketchdb.index_defs";
pub(crate) const SIMHASH_BUCKETS_NAME: &str = "sketchdb.simhash_buckets";
pub(crate) const LSH_BUCKETS_NAME: &str = "sketchdb.lsh_runs";
pub(crate) const LSH_GROUPS_V1_NAME: &str = "sketchdb.lsh_buckets";
pub(crate) const LSH_ROWS_NAME: &str = "sketchdb.lsh_rows";
pub(crate) const LSH_DEAD_NAME: &str = "sketchdb.lsh_dead";

/// Key of the format record in [`META`].
pub(crate) const FORMAT_KEY: &str = "format";
/// Key of the catalog record in [`META`].
pub(crate) const CATALOG_KEY: &str = "catalog";

/// Names, for error messages.
pub(crate) const META_NAME: &str = "sketchdb.meta";
pub(crate) const COLLECTIONS_NAME: &str = "sketchdb.collections";
pub(crate) const COLLECTION_STATE_NAME: &str = "sketchdb.collection_state";

/// The redb file-format version sketchdb files are written with (redb 4.x: format 3).
pub(crate) const REDB_FILE_FORMAT: u8 = 3;

/// `(u32, u64) -> &[u8]`: file format version 2's removed rows, by page: (collection id,
/// first row id of a page) -> the page's rows removed since the page was last written, as a
/// bitmap laid out like the page's tombstone bitmap (`storage-format.md`, section 2.3.1).
/// Read where a version-2 file has it; the first write of records moves its entries into
/// [`ROW_DEAD64`] and deletes it.
pub(crate) const ROW_DEAD: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("sketchdb.row_dead");
pub(crate) const ROW_DEAD_NAME: &str = "sketchdb.row_dead";

/// `(u32, u64) -> u64`: (collection id, row id / 64) -> the rows of that 64-row chunk removed
/// since their page was last written, bit `row % 64` (`storage-format.md`, section 2.3; file
/// format version 3). Readers OR a page's chunks into its own bitmap; a write that rewrites
/// the page folds its rows' bits in and clears them here.
pub(crate) const ROW_DEAD64: TableDefinition<(u32, u64), u64> = TableDefinition::new("sketchdb.row_dead64");
pub(crate) const ROW_DEAD64_NAME: &str = "sketchdb.row_dead64";
