//! Hooks for tests, fuzz targets and benches. Not part of the stable API.

use crate::db::collection::Collection;
use crate::db::database::{Database, DatabaseBuilder};
use crate::error::Result;
pub use crate::storage::backend::{Backend, MemoryBackend};

pub mod crash;
pub mod faults;
pub mod fuzz;
pub mod model;
pub mod rng;

pub use faults::{CrashPoint, FaultyBackend, IoCounters, IoFault};
pub use fuzz::{fuzz_db_ops, fuzz_meta_decode, fuzz_page_decode, fuzz_sketch_ops, seed_inputs};

/// Creates a database on a custom backend (which must be empty).
pub fn create_on<B: Backend>(builder: DatabaseBuilder, backend: B) -> Result<Database> {
    builder.create_on(backend)
}

/// Opens a database previously created on a custom backend.
pub fn open_on<B: Backend>(builder: DatabaseBuilder, backend: B) -> Result<Database> {
    builder.open_on(backend)
}

/// The first rows of a collection's pages (the pages' keys), in order.
pub fn page_starts(collection: &Collection, db: &Database) -> Result<Vec<u64>> {
    Ok(db.store().snapshot()?.page_starts(collection.info())?)
}

/// A stored page's raw bytes (`page` is its first row).
pub fn read_raw_page(collection: &Collection, db: &Database, page: u64) -> Result<Option<Vec<u8>>> {
    Ok(db.store().snapshot()?.raw_page(collection.info(), page)?)
}

/// Overwrites a stored page's bytes verbatim (no checks): to plant corruption that redb's
/// own checksums do not see.
pub fn write_raw_page(collection: &Collection, db: &Database, page: u64, bytes: &[u8]) -> Result<()> {
    let store = db.store();
    let txn = store.begin_write()?;
    {
        let mut t = txn
            .open_table(crate::storage::tables::PAGES)
            .map_err(crate::storage::StorageError::backend("open table"))?;
        t.insert((collection.info().def.id, page), bytes)
            .map_err(crate::storage::StorageError::backend("write page"))?;
    }
    txn.commit().map_err(crate::storage::StorageError::backend("commit"))?;
    Ok(())
}

/// Rewrites the file's format record with another format version (to test refusal).
pub fn rewrite_format_version(db: &Database, version: u16) -> Result<()> {
    Ok(db.store().rewrite_format_version(version)?)
}

/// The rows per page a collection of `record_width`-byte records gets.
pub fn page_capacity_for(record_width: usize) -> u32 {
    crate::storage::catalog::choose_capacity(record_width)
}
