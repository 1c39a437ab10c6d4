//! Administration: verification, statistics and what compaction did.
//!
//! ```
//! use sketchdb::{CollectionConfig, Database, SketchParams, admin};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Database::create(dir.path().join("a.sketchdb"))?;
//! let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(64, 32, 1)?))?;
//! docs.insert_text("a", "one two three four five six")?;
//! let report = admin::verify(&db)?;
//! assert!(report.problems.is_empty());
//! assert_eq!(admin::stats(&db)?.collections[0].1.live, 1);
//! # Ok::<(), sketchdb::Error>(())
//! ```
#![forbid(unsafe_code)]

use crate::db::database::Database;
use crate::error::Result;
pub use crate::storage::compact::CompactionSummary;
pub use crate::storage::integrity::{Problem, VerifyReport};

/// Checks the whole database: every page's crc and header and every row's decoding, the
/// key <-> row id maps against the tombstones, each collection's counters, and the storage engine's own
/// integrity check (which needs no other transaction or snapshot alive:
/// `StorageError::Busy` otherwise), and every index against the live rows (each problem
/// naming the index table, SimHash table or LSH band, and bucket). Damage is reported in the [`VerifyReport`], each
/// problem naming collection, page and row; the `Err` case means the checks could not run.
///
/// Reads every page: it takes time proportional to the file.
pub fn verify(db: &Database) -> Result<VerifyReport> {
    let mut report = db.store().verify()?;
    crate::index::verify_indexes(db.store(), &mut report)?;
    Ok(report)
}

/// Database-wide statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseStats {
    /// The file's size in bytes (0 for custom backends).
    pub file_bytes: u64,
    /// Per collection: name and counters.
    pub collections: Vec<(String, crate::db::stats::CollectionStats)>,
    /// What the handle keeps in memory, read after the collections' counters (so it
    /// includes what reading them kept).
    pub caches: crate::db::stats::CacheStats,
}

/// Collects [`DatabaseStats`] (cheap: reads counters, scans nothing).
pub fn stats(db: &Database) -> Result<DatabaseStats> {
    let file_bytes = std::fs::metadata(db.path()).map(|m| m.len()).unwrap_or(0);
    let mut collections = vec![];
    for c in db.collections()? {
        collections.push((c.name().to_string(), c.stats()?));
    }
    Ok(DatabaseStats { file_bytes, collections, caches: db.cache_stats() })
}
