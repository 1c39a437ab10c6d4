//! The storage layer: the redb adapter.
//!
//! * [`tables`]: every redb table definition, in one place.
//! * [`store`]: [`store::Store`], the opened file (atomic create, format-record check,
//!   durability, the custom-backend entry points for tests).
//! * [`catalog`]: collections (create, look up, list, drop).
//! * [`writer`]: write transactions: inserts, upserts, deletes, all-or-nothing batches;
//!   [`key_append`] writes a batch's keys that sort after all others through one cursor;
//!   [`scan_in`] reads every live row inside a write transaction (index rebuilds);
//!   [`ops_writer`] writes a transaction's ops (given whole or in parts while it is open),
//!   [`page_cache`] the pages they touch.
//! * [`reader`]: read snapshots: gets and page scans; [`page_runs`] splits a scan into runs
//!   of row ids that threads read at once; [`current`] keeps the snapshot of a handle's last
//!   commit for its warm reads.
//! * [`rules`]: what a write is made of, and the key check and error builders reads and
//!   writes share.
//! * [`shingles`]: the exact shingle sets of collections that keep them.
//! * [`dead`]: removed rows kept beside their pages (`sketchdb.row_dead64`, by 64-row
//!   chunk), so a delete neither reads nor rewrites its row's page.
//! * [`compact`]: page compaction and redb file compaction.
//! * [`space`]: the free-space check before operations that grow the file first.
//! * [`content_hash`]: the source-content hash kept per row written with one (sync).
//! * [`index_tables`]: typed handles on the index's tables, the index layer's only access
//!   to the engine ([`index_tables::IndexTxn`] is the write transaction its hook receives).
//! * [`busy`]: waiting for a file another handle holds, and naming the holder.
//! * [`truncation`]: a file shorter than its header says is reported as truncated.
//! * [`integrity`]: the storage-level consistency checks behind `admin::verify`.
//!
//! No redb type escapes this module; redb errors become [`StorageError::Backend`] with the
//! redb error kept as its `source()`.
#![forbid(unsafe_code)]

pub(crate) mod backend;
pub(crate) mod busy;
pub(crate) mod catalog;
pub(crate) mod compact;
pub(crate) mod content_hash;
pub(crate) mod costs;
pub(crate) mod current;
pub(crate) mod dead;
pub(crate) mod dead_write;
pub(crate) mod error;
pub(crate) mod hook;
pub(crate) mod index_tables;
pub(crate) mod integrity;
pub(crate) mod key_append;
pub(crate) mod ops_writer;
pub(crate) mod page_cache;
pub(crate) mod page_runs;
pub(crate) mod reader;
pub(crate) mod rules;
pub(crate) mod scan_in;
pub(crate) mod shingles;
pub(crate) mod space;
pub(crate) mod store;
pub(crate) mod tables;
pub(crate) mod truncation;
pub(crate) mod writer;

pub use error::StorageError;

/// The longest user key, in bytes. Keys are 1..=`MAX_KEY_LEN` arbitrary bytes (UTF-8 text
/// is stored as its bytes).
pub use crate::codec::page::MAX_KEY_LEN;

/// The longest collection name, in bytes (UTF-8).
pub const MAX_COLLECTION_NAME_LEN: usize = 255;
