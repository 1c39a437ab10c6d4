//! Recording removed rows in `sketchdb.row_dead64` within a write transaction (the rules are
//! in [`super::dead`]), and the tables' test hooks.

use std::collections::BTreeMap;

use redb::{ReadableTable, WriteTransaction};

use super::catalog::CollectionInfo;
use super::dead::{
    DeadTable, LegacyTable, chunk_mask, chunk_of, open_legacy_if_exists, open_write_if_exists, page_words_with,
    upgrade_format,
};
use super::error::StorageError;
use super::reader::open;
use super::rules::{corrupt_page, inconsistent};
use super::tables::{FORMAT_KEY, META, META_NAME, ROW_DEAD, ROW_DEAD64};
use crate::codec::meta::FormatRecord;
use crate::codec::page::dead_words;

/// The removed rows a write transaction adds, by 64-row chunk, written once per chunk at
/// the end.
pub(crate) struct DeadWriter<'t> {
    txn: &'t WriteTransaction,
    /// The chunk table, once opened (`None` while the file has none and nothing was marked).
    table: Option<DeadTable<'t>>,
    /// Chunks whose entry this transaction changed: the entry's word (0: remove it).
    pending: BTreeMap<u64, u64>,
}

impl<'t> DeadWriter<'t> {
    /// The writer of `info`'s removed rows; moves the collection's version-2 entries into
    /// this transaction's changes.
    pub(crate) fn new(txn: &'t WriteTransaction, info: &CollectionInfo) -> Result<Self, StorageError> {
        let moved = take_legacy(txn, info)?;
        let mut w = DeadWriter { txn, table: open_write_if_exists(txn)?, pending: BTreeMap::new() };
        for (chunk, bits) in moved {
            let word = w.word(info, chunk)?;
            w.pending.insert(chunk, word | bits);
        }
        Ok(w)
    }

    /// The current word of `chunk` (this transaction's changes included).
    fn word(&self, info: &CollectionInfo, chunk: u64) -> Result<u64, StorageError> {
        if let Some(&w) = self.pending.get(&chunk) {
            return Ok(w);
        }
        let Some(table) = &self.table else { return Ok(0) };
        let g = table.get((info.def.id, chunk)).map_err(StorageError::backend("read removed rows"))?;
        Ok(g.map_or(0, |g| g.value()))
    }

    /// The current words of the page of rows `first..first + rows` (this transaction's
    /// changes included), laid out like its tombstone bitmap; `None` when none is removed.
    pub(crate) fn words(
        &mut self,
        info: &CollectionInfo,
        first: u64,
        rows: usize,
    ) -> Result<Option<Vec<u64>>, StorageError> {
        let pending = &self.pending;
        // This collection's version-2 entries were moved into `pending` by `new`.
        let corrupt = |e| corrupt_page(info, first)(e);
        page_words_with(self.table.as_ref(), None::<&LegacyTable<'_>>, info.def.id, first, rows, corrupt, |c| {
            pending.get(&c).copied()
        })
    }

    /// Marks row `row` removed; a row already marked is [`StorageError::Inconsistent`] (a
    /// key maps to a deleted row). Reads no page.
    pub(crate) fn mark(&mut self, info: &CollectionInfo, row: u64) -> Result<(), StorageError> {
        let chunk = chunk_of(row);
        let bit = 1u64 << (row & 63);
        let w = self.word(info, chunk)?;
        if w & bit != 0 {
            return Err(inconsistent(info, row, "a key maps to a deleted row"));
        }
        self.pending.insert(chunk, w | bit);
        Ok(())
    }

    /// Takes the page of rows `first..first + rows` out of the table (the page is being
    /// rewritten with its removed rows folded in): its words, if any; its rows' bits are
    /// cleared (a chunk it shares with a neighbouring page keeps that page's bits).
    pub(crate) fn take(
        &mut self,
        info: &CollectionInfo,
        first: u64,
        rows: usize,
    ) -> Result<Option<Vec<u64>>, StorageError> {
        let words = self.words(info, first, rows)?;
        if words.is_some() {
            let end = first + rows as u64;
            for chunk in chunk_of(first)..=chunk_of(end - 1) {
                let w = self.word(info, chunk)?;
                let left = w & !chunk_mask(chunk, first, end);
                if left != w {
                    self.pending.insert(chunk, left);
                }
            }
        }
        Ok(words)
    }

    /// Writes every changed entry; upgrades the file's format record to version 3 when an
    /// entry is written.
    pub(crate) fn flush(mut self, info: &CollectionInfo) -> Result<(), StorageError> {
        let id = info.def.id;
        let mut wrote = false;
        for (chunk, word) in std::mem::take(&mut self.pending) {
            let table = match &mut self.table {
                Some(t) => t,
                None if word == 0 => continue,
                None => {
                    self.table.insert(self.txn.open_table(ROW_DEAD64).map_err(StorageError::backend("open table"))?)
                }
            };
            if word == 0 {
                table.remove((id, chunk)).map_err(StorageError::backend("remove removed rows"))?;
            } else {
                table.insert((id, chunk), word).map_err(StorageError::backend("write removed rows"))?;
                wrote = true;
            }
        }
        drop(self.table);
        if wrote {
            upgrade_format(self.txn)?;
        }
        Ok(())
    }
}

/// Takes collection `info`'s version-2 entries out of `sketchdb.row_dead` (deleting the
/// table once no collection has one), as (chunk, word) pairs to OR into the chunk table.
pub(crate) fn take_legacy(txn: &WriteTransaction, info: &CollectionInfo) -> Result<Vec<(u64, u64)>, StorageError> {
    let Some(mut t) = open_legacy_if_exists(txn)? else { return Ok(Vec::new()) };
    let id = info.def.id;
    let err = || StorageError::backend("move removed rows");
    let mut moved: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for entry in t.range((id, 0u64)..=(id, u64::MAX)).map_err(err())? {
        let (k, v) = entry.map_err(err())?;
        let first = k.value().1;
        for (j, &word) in dead_words(v.value()).map_err(corrupt_page(info, first))?.iter().enumerate() {
            let mut w = word;
            while w != 0 {
                let row = first + (j as u64) * 64 + u64::from(w.trailing_zeros());
                w &= w - 1;
                *moved.entry(chunk_of(row)).or_default() |= 1 << (row & 63);
            }
        }
    }
    t.retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false).map_err(err())?;
    let empty = t.first().map_err(err())?.is_none();
    drop(t);
    if empty {
        txn.delete_table(ROW_DEAD).map_err(StorageError::backend("delete table"))?;
    }
    Ok(moved.into_iter().collect())
}

impl super::store::Store {
    /// A collection's removed-rows entries at the last commit, by chunk, each word as its 8
    /// little-endian bytes (tests).
    pub(crate) fn dead_entries(&self, info: &CollectionInfo) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        let snap = self.snapshot()?;
        let Some(t) = open(snap.txn(), ROW_DEAD64)? else { return Ok(vec![]) };
        let id = info.def.id;
        let mut out = vec![];
        for entry in t.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan removed rows"))? {
            let (k, v) = entry.map_err(StorageError::backend("scan removed rows"))?;
            out.push((k.value().1, v.value().to_le_bytes().to_vec()));
        }
        Ok(out)
    }

    /// A collection's version-2 entries (`sketchdb.row_dead`) at the last commit, by page,
    /// as stored (tests).
    pub(crate) fn legacy_dead_entries(&self, info: &CollectionInfo) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        let snap = self.snapshot()?;
        let Some(t) = open(snap.txn(), ROW_DEAD)? else { return Ok(vec![]) };
        let id = info.def.id;
        let mut out = vec![];
        for entry in t.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan removed rows"))? {
            let (k, v) = entry.map_err(StorageError::backend("scan removed rows"))?;
            out.push((k.value().1, v.value().to_vec()));
        }
        Ok(out)
    }

    /// Overwrites chunk `chunk`'s removed-rows word verbatim, no checks (tests plant damage).
    pub(crate) fn write_raw_dead_entry(
        &self,
        info: &CollectionInfo,
        chunk: u64,
        word: u64,
    ) -> Result<(), StorageError> {
        let txn = self.begin_write("test write")?;
        {
            let mut t = txn.open_table(ROW_DEAD64).map_err(StorageError::backend("open table"))?;
            t.insert((info.def.id, chunk), word).map_err(StorageError::backend("write removed rows"))?;
        }
        txn.commit().map_err(StorageError::backend("commit"))
    }

    /// Overwrites page `page`'s version-2 entry verbatim, no checks (tests plant damage).
    pub(crate) fn write_raw_legacy_dead_entry(
        &self,
        info: &CollectionInfo,
        page: u64,
        bytes: &[u8],
    ) -> Result<(), StorageError> {
        let txn = self.begin_write("test write")?;
        {
            let mut t = txn.open_table(ROW_DEAD).map_err(StorageError::backend("open table"))?;
            t.insert((info.def.id, page), bytes).map_err(StorageError::backend("write removed rows"))?;
        }
        txn.commit().map_err(StorageError::backend("commit"))
    }

    /// The format version the file's format record states.
    pub(crate) fn file_format_version(&self) -> Result<u16, StorageError> {
        let snap = self.snapshot()?;
        let meta_err =
            |source| StorageError::CorruptMeta { table: META_NAME, key: FORMAT_KEY.into(), source: Box::new(source) };
        let t = open(snap.txn(), META)?.ok_or_else(|| StorageError::CorruptMeta {
            table: META_NAME,
            key: FORMAT_KEY.into(),
            source: Box::new(crate::codec::error::CodecError::field("format record", "table", "absent", "present")),
        })?;
        let g = t.get(FORMAT_KEY).map_err(StorageError::backend("read format record"))?;
        let bytes = g.map(|g| g.value().to_vec()).unwrap_or_default();
        Ok(FormatRecord::decode(&bytes).map_err(meta_err)?.format_version)
    }
}
