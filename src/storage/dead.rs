//! Removed rows kept beside their pages: `sketchdb.row_dead` (storage-format.md, section 2.3).
//! This file holds the table's raw access; [`super::dead_write`] records removals in a write
//! transaction, `ReadSnapshot::dead_words` (reader.rs) reads them per page, and
//! [`super::rules::overlay`] ORs an entry into its page's view.
//!
//! A delete or upsert that ends a row of a page it does not otherwise rewrite sets the row's
//! bit in the page's entry of this table instead of rewriting the page (a 64 KiB value) to
//! set its tombstone bit. Invariants:
//! * an entry is keyed by a stored page's (collection id, first row), holds exactly as many
//!   u64 words as the page's tombstone bitmap, at least one bit, no bit at or past the page's
//!   `row_count`, and no bit the page's own bitmap has;
//! * a row is deleted when its bit is set in the page or in the page's entry; every reader of
//!   pages ORs the entry in (`PageView::with_dead`);
//! * a write that rewrites a page (appending to the tail page, compaction) folds the entry
//!   into the page's tombstones and removes the entry in the same transaction, so an entry
//!   always matches its page's current row count;
//! * the first entry written to a file whose format record states version 1 upgrades the
//!   record to version 2 in the same transaction (builds reading version 1 only would read
//!   the entry's rows as live).

use redb::{ReadableTable, Table, WriteTransaction};

use super::error::StorageError;
use super::tables::{FORMAT_KEY, META, META_NAME, ROW_DEAD, ROW_DEAD_NAME};
use crate::codec::FILE_FORMAT_VERSION;
use crate::codec::error::CodecError;
use crate::codec::meta::FormatRecord;
use crate::codec::page::dead_words;

/// The side table in a write transaction.
pub(crate) type DeadTable<'t> = Table<'t, (u32, u64), &'static [u8]>;

/// The removed-rows words of page `first` of `info` in `table`, if it has an entry
/// (decoded, not yet checked against the page).
/// `corrupt` builds the error for an entry that does not decode.
pub(crate) fn words_in(
    table: &impl ReadableTable<(u32, u64), &'static [u8]>,
    id: u32,
    first: u64,
    corrupt: impl FnOnce(CodecError) -> StorageError,
) -> Result<Option<Vec<u64>>, StorageError> {
    let Some(g) = table.get((id, first)).map_err(StorageError::backend("read removed rows"))? else {
        return Ok(None);
    };
    dead_words(g.value()).map(Some).map_err(corrupt)
}

/// Rewrites a version-1 format record as version 2 (the file may now hold entries).
pub(crate) fn upgrade_format(txn: &WriteTransaction) -> Result<(), StorageError> {
    let meta_err =
        |source| StorageError::CorruptMeta { table: META_NAME, key: FORMAT_KEY.into(), source: Box::new(source) };
    let mut meta = txn.open_table(META).map_err(StorageError::backend("open table"))?;
    let record = match meta.get(FORMAT_KEY).map_err(StorageError::backend("read format record"))? {
        Some(g) => FormatRecord::decode(g.value()).map_err(meta_err)?,
        None => return Ok(()),
    };
    if record.format_version >= FILE_FORMAT_VERSION {
        return Ok(());
    }
    let upgraded = FormatRecord { format_version: FILE_FORMAT_VERSION, ..record };
    let bytes = upgraded.encode().map_err(meta_err)?;
    meta.insert(FORMAT_KEY, bytes.as_slice()).map_err(StorageError::backend("write format record"))?;
    Ok(())
}

/// Removes every entry of collection `id` (drop).
pub(crate) fn drop_collection(txn: &WriteTransaction, id: u32) -> Result<(), StorageError> {
    if let Some(mut t) = open_write_if_exists(txn)? {
        t.retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false).map_err(StorageError::backend("drop removed rows"))?;
    }
    Ok(())
}

/// The table in a write transaction, if the file has it.
pub(crate) fn open_write_if_exists(txn: &WriteTransaction) -> Result<Option<DeadTable<'_>>, StorageError> {
    let exists = txn
        .list_tables()
        .map_err(StorageError::backend("list tables"))?
        .any(|t| redb::TableHandle::name(&t) == ROW_DEAD_NAME);
    if exists { Ok(Some(txn.open_table(ROW_DEAD).map_err(StorageError::backend("open table"))?)) } else { Ok(None) }
}
