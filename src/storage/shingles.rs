//! The shingle table (`sketchdb.shingles`): for a collection created with exact shingles,
//! each live record's distinct token hashes ([`crate::codec::shingles`] layout), so that
//! candidates can be verified by exact Jaccard.
//!
//! Keys are (collection id, row id). A collection keeps shingles exactly when its marker
//! entry, at row `u64::MAX` (no record ever gets that row id), holds the one byte
//! `SHINGLE_SET_VERSION`; it is written when the collection is created and never changes.
//! Every record written to such a collection has an entry at its row (written in the same
//! transaction as its page); a deleted or replaced row's entry is removed with it, compaction
//! moves entries with their rows, and dropping the collection removes them all. Collections
//! without the marker never touch the table, so files written before it existed are unchanged.

use redb::{Table, WriteTransaction};

use super::catalog::CollectionInfo;
use super::error::StorageError;
use super::reader::{ReadSnapshot, open};
use super::tables::{SHINGLES, SHINGLES_MARKER_ROW as MARKER_ROW, SHINGLES_NAME};
use crate::codec::shingles::{decode_shingles, encode_shingles};


fn corrupt(info: &CollectionInfo, row: u64, detail: impl ToString) -> StorageError {
    StorageError::Inconsistent {
        collection: info.def.name.clone(),
        row: Some(row),
        detail: format!("{SHINGLES_NAME}: {}", detail.to_string()),
    }
}

/// The shingle table inside one write transaction, for one collection that keeps shingles.
pub(crate) struct ShingleWriter<'t, 'i> {
    info: &'i CollectionInfo,
    table: Table<'t, (u32, u64), &'static [u8]>,
}

impl<'t, 'i> ShingleWriter<'t, 'i> {
    /// The writer of `info`'s entries, or `None` when the collection keeps no shingles.
    pub(crate) fn new(txn: &'t WriteTransaction, info: &'i CollectionInfo) -> Result<Option<Self>, StorageError> {
        if !info.shingles {
            return Ok(None);
        }
        let table = txn.open_table(SHINGLES).map_err(StorageError::backend("open table"))?;
        Ok(Some(ShingleWriter { info, table }))
    }

    /// Stores row `row`'s set (strictly ascending hashes).
    pub(crate) fn put(&mut self, row: u64, sorted: &[u64]) -> Result<(), StorageError> {
        let bytes = encode_shingles(sorted);
        self.table.insert((self.info.def.id, row), bytes.as_slice()).map_err(StorageError::backend("write shingles"))?;
        Ok(())
    }

    /// Removes row `row`'s entry; a row without one is damage (every row has one).
    pub(crate) fn remove(&mut self, row: u64) -> Result<Vec<u8>, StorageError> {
        let old = self.table.remove((self.info.def.id, row)).map_err(StorageError::backend("delete shingles"))?;
        old.map(|g| g.value().to_vec()).ok_or_else(|| corrupt(self.info, row, "no shingle set for a stored row"))
    }

    /// Moves row `from`'s entry to row `to` (compaction).
    pub(crate) fn move_row(&mut self, from: u64, to: u64) -> Result<(), StorageError> {
        let bytes = self.remove(from)?;
        self.table.insert((self.info.def.id, to), bytes.as_slice()).map_err(StorageError::backend("write shingles"))?;
        Ok(())
    }
}

impl ReadSnapshot {
    /// Row `row`'s shingle set in the collection `info` (which keeps shingles): ascending
    /// hashes. A missing or undecodable entry is an error naming the collection and row.
    pub(crate) fn shingles(&self, info: &CollectionInfo, row: u64) -> Result<Vec<u64>, StorageError> {
        let table = open(self.txn(), SHINGLES)?.ok_or_else(|| corrupt(info, row, "the table is missing"))?;
        let v = table
            .get((info.def.id, row))
            .map_err(StorageError::backend("read shingles"))?
            .ok_or_else(|| corrupt(info, row, "no shingle set for a stored row"))?;
        decode_shingles(v.value()).map_err(|e| corrupt(info, row, e))
    }

    /// Calls `f(row, encoded bytes)` for every entry of `info` but the marker, in row order
    /// (verify).
    pub(crate) fn for_each_shingle_entry(
        &self,
        info: &CollectionInfo,
        mut f: impl FnMut(u64, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let Some(table) = open(self.txn(), SHINGLES)? else { return Ok(()) };
        let id = info.def.id;
        for entry in table.range((id, 0)..(id, MARKER_ROW)).map_err(StorageError::backend("read shingles"))? {
            let (k, v) = entry.map_err(StorageError::backend("read shingles"))?;
            f(k.value().1, v.value())?;
        }
        Ok(())
    }
}
