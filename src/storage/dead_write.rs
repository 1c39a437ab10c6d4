//! Recording removed rows in `sketchdb.row_dead` within a write transaction (the rules are
//! in [`super::dead`]), and the table's test hooks.

use std::collections::BTreeMap;

use redb::WriteTransaction;

use super::catalog::CollectionInfo;
use super::dead::{DeadTable, open_write_if_exists, upgrade_format, words_in};
use super::error::StorageError;
use super::reader::open;
use super::rules::corrupt_page;
use super::tables::{FORMAT_KEY, META, META_NAME, ROW_DEAD};
use crate::codec::meta::FormatRecord;
use crate::codec::page::dead_bytes;

/// The removed rows a write transaction adds, by page, written once per page at the end.
pub(crate) struct DeadWriter<'t> {
    txn: &'t WriteTransaction,
    /// The table, once opened (`None` while the file has none and nothing was marked).
    table: Option<DeadTable<'t>>,
    /// Pages whose entry this transaction changed: the entry's words (empty: remove it).
    pending: BTreeMap<u64, Vec<u64>>,
}

impl<'t> DeadWriter<'t> {
    pub(crate) fn new(txn: &'t WriteTransaction) -> Result<Self, StorageError> {
        Ok(DeadWriter { txn, table: open_write_if_exists(txn)?, pending: BTreeMap::new() })
    }

    /// The current words of page `first` (this transaction's changes included).
    pub(crate) fn words(&mut self, info: &CollectionInfo, first: u64) -> Result<Option<&[u64]>, StorageError> {
        if !self.pending.contains_key(&first) {
            let Some(table) = &self.table else { return Ok(None) };
            let Some(w) = words_in(table, info.def.id, first, corrupt_page(info, first))? else { return Ok(None) };
            self.pending.insert(first, w);
        }
        Ok(self.pending.get(&first).map(|w| w.as_slice()).filter(|w| !w.is_empty()))
    }

    /// Marks row index `i` of page `first` (of `rows` rows) removed.
    pub(crate) fn mark(
        &mut self,
        info: &CollectionInfo,
        first: u64,
        rows: usize,
        i: usize,
    ) -> Result<(), StorageError> {
        self.words(info, first)?;
        let w = self.pending.entry(first).or_default();
        if w.is_empty() {
            w.resize(rows.div_ceil(64), 0);
        }
        if let Some(word) = w.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
        Ok(())
    }

    /// Takes page `first`'s entry away (the page is being rewritten with it folded in).
    pub(crate) fn take(&mut self, info: &CollectionInfo, first: u64) -> Result<Option<Vec<u64>>, StorageError> {
        let w = self.words(info, first)?.map(<[u64]>::to_vec);
        if w.is_some() {
            self.pending.insert(first, Vec::new());
        }
        Ok(w)
    }

    /// Writes every changed entry; upgrades the file's format record to version 2 when an
    /// entry is written.
    pub(crate) fn flush(mut self, info: &CollectionInfo) -> Result<(), StorageError> {
        let id = info.def.id;
        let mut wrote = false;
        for (first, words) in std::mem::take(&mut self.pending) {
            let table = match &mut self.table {
                Some(t) => t,
                None => self.table.insert(self.txn.open_table(ROW_DEAD).map_err(StorageError::backend("open table"))?),
            };
            if words.iter().all(|&w| w == 0) {
                table.remove((id, first)).map_err(StorageError::backend("remove removed rows"))?;
            } else {
                table
                    .insert((id, first), dead_bytes(&words).as_slice())
                    .map_err(StorageError::backend("write removed rows"))?;
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

impl super::store::Store {
    /// A collection's removed-rows entries at the last commit, by page, as stored (tests).
    pub(crate) fn dead_entries(&self, info: &CollectionInfo) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
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

    /// Overwrites page `page`'s removed-rows entry verbatim, no checks (tests plant damage).
    pub(crate) fn write_raw_dead_entry(
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
