//! Content hashes: a row written with one keeps the 128-bit hash of the source content it
//! was sketched from in `sketchdb.content_hashes`, keyed by (collection id, row id), so a
//! re-read of the source can tell changed records from unchanged ones.
//!
//! The table is created by the first write that carries a hash; files without it (all files
//! written before it, and files whose writers never pass hashes) read every row's hash as
//! absent. Invariant: an entry exists only for a row written with a hash, live or removed
//! but not yet purged, and holds that hash. A row that ends (upsert, delete) keeps its entry
//! like its columns and key stay in its page: reads reach a hash only through a key's live
//! row (`Snapshot::stored_hash`), so an ended row's entry is never read, and a delete costs
//! no write here. Compaction removes the entries of the rows it purges and moves a moved
//! row's entry to its new row id; drop removes all. Row ids are never reused. Reads are
//! `ReadSnapshot::content_hash` (reader.rs).

use std::ops::Bound;

use redb::{Table, WriteTransaction};

use super::error::StorageError;
use super::tables::{CONTENT_HASHES, CONTENT_HASHES_NAME};

/// The content-hash table in a write transaction.
pub(crate) type HashTable<'t> = Table<'t, (u32, u64), u128>;

/// Whether the file has the content-hash table.
pub(crate) fn exists(txn: &WriteTransaction) -> Result<bool, StorageError> {
    Ok(txn
        .list_tables()
        .map_err(StorageError::backend("list tables"))?
        .any(|t| redb::TableHandle::name(&t) == CONTENT_HASHES_NAME))
}

/// The table, opened (created) when `create` or when the file already has it; else `None`,
/// and the file is left without it.
pub(crate) fn open_in(txn: &WriteTransaction, create: bool) -> Result<Option<HashTable<'_>>, StorageError> {
    if create || exists(txn)? {
        Ok(Some(txn.open_table(CONTENT_HASHES).map_err(StorageError::backend("open table"))?))
    } else {
        Ok(None)
    }
}

/// Stores `hash` for `row` of collection `id`.
pub(crate) fn put(table: &mut HashTable<'_>, id: u32, row: u64, hash: u128) -> Result<(), StorageError> {
    table.insert((id, row), hash).map_err(StorageError::backend("write content hash"))?;
    Ok(())
}

/// Fewer hashes than this are stored one by one (a cursor's setup is not worth it).
const MIN_APPEND: usize = 64;

/// Stores the hashes of new rows of collection `id` (`rows` ascending, each past every row
/// of the collection that has an entry: row ids are never reused) through one cursor at the
/// gap after the collection's entries, without a descent per row. Should an entry be in the
/// way after all, the rest are stored one by one, as [`put`] would have stored them.
pub(crate) fn append(table: &mut HashTable<'_>, id: u32, rows: &[(u64, u128)]) -> Result<(), StorageError> {
    let Some(&(first, _)) = rows.first() else { return Ok(()) };
    if rows.len() < MIN_APPEND {
        return rows.iter().try_for_each(|&(row, hash)| put(table, id, row, hash));
    }
    let mut cursor =
        table.lower_bound_mut(Bound::Included((id, first))).map_err(StorageError::backend("position hash cursor"))?;
    for (i, &(row, hash)) in rows.iter().enumerate() {
        match cursor.insert_before((id, row), hash) {
            Ok(()) => {}
            Err(redb::CursorError::UnorderedKey) => {
                cursor.close().map_err(StorageError::backend("append content hashes"))?;
                return rows[i..].iter().try_for_each(|&(row, hash)| put(table, id, row, hash));
            }
            Err(e) => return Err(StorageError::backend("append content hash")(e)),
        }
    }
    cursor.close().map_err(StorageError::backend("append content hashes"))
}

/// Removes the hash of `row` of collection `id`, returning it.
pub(crate) fn take(table: &mut HashTable<'_>, id: u32, row: u64) -> Result<Option<u128>, StorageError> {
    Ok(table.remove((id, row)).map_err(StorageError::backend("remove content hash"))?.map(|g| g.value()))
}

/// The rows of collection `id` that have an entry, ascending (tests).
pub(crate) fn rows_in(txn: &redb::ReadTransaction, id: u32) -> Result<Vec<u64>, StorageError> {
    let err = || StorageError::backend("scan content hashes");
    let t = match txn.open_table(CONTENT_HASHES) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(StorageError::backend("open table")(e)),
    };
    let mut out = Vec::new();
    for entry in t.range((id, 0u64)..=(id, u64::MAX)).map_err(err())? {
        out.push(entry.map_err(err())?.0.value().1);
    }
    Ok(out)
}

/// Removes every hash of collection `id` (drop).
pub(crate) fn drop_collection(txn: &WriteTransaction, id: u32) -> Result<(), StorageError> {
    if let Some(mut t) = open_in(txn, false)? {
        t.retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false).map_err(StorageError::backend("drop content hashes"))?;
    }
    Ok(())
}
