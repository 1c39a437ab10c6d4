//! The record writes of one write transaction ([`OpsWriter`]): keys, pages, shingle sets and
//! content hashes, op by op, in order, and what they did ([`WriteSummary`]).
//!
//! Writing a batch's ops in parts, in order, through one writer stores exactly what writing
//! them in one go stores: every op sees the tables as the ops before it left them, whichever
//! part it came in ([`super::store::Store::apply_parts`] relies on it).

use redb::WriteTransaction;

use super::catalog::CollectionInfo;
use super::content_hash::{self, HashTable};
use super::error::{StorageError, show_key};
use super::hook::IndexHook;
use super::key_append::{KeysTable, append_new_keys};
use super::page_cache::PageCache;
use super::rules::{WriteOp, check_key, inconsistent};
use super::shingles::ShingleWriter;
use super::tables::KEYS;
use crate::codec::meta::CollectionState;

/// What a committed batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Keys that were absent and now have a record.
    pub inserted: u64,
    /// Keys whose record was replaced by an upsert.
    pub replaced: u64,
    /// Keys deleted.
    pub deleted: u64,
    /// Deletes of keys that were absent.
    pub missing: u64,
    /// The row id of the batch's first new row; new rows are `first_row..first_row + new_rows`,
    /// in batch order.
    pub first_row: u64,
    /// Rows written (inserts plus upserts).
    pub new_rows: u64,
}

/// The tables one write transaction writes records to, opened once for all its ops.
pub(crate) struct OpsWriter<'t, 'i> {
    txn: &'t WriteTransaction,
    info: &'i CollectionInfo,
    keys: KeysTable<'t>,
    pages: PageCache<'t, 'i>,
    sets: Option<ShingleWriter<'t, 'i>>,
    /// Opened (created) at the first op that carries a content hash.
    hashes: Option<HashTable<'t>>,
    /// The content hashes of one `write`'s new rows, stored at its end in one pass.
    new_hashes: Vec<(u64, u128)>,
}

impl<'t, 'i> OpsWriter<'t, 'i> {
    pub(crate) fn new(txn: &'t WriteTransaction, info: &'i CollectionInfo) -> Result<Self, StorageError> {
        let keys: KeysTable<'t> = txn.open_table(KEYS).map_err(StorageError::backend("open table"))?;
        let pages = PageCache::new(txn, info)?;
        let sets = ShingleWriter::new(txn, info)?;
        Ok(OpsWriter { txn, info, keys, pages, sets, hashes: None, new_hashes: Vec::new() })
    }

    /// Stores the records of `ops` and their keys (and shingle sets, for a collection that
    /// keeps them: `shingles[i]` is the i-th op's), in order, telling `hook` of every row
    /// added and removed; updates `state` and `summary`.
    pub(crate) fn write<H: IndexHook + ?Sized>(
        &mut self,
        ops: Vec<WriteOp<'_>>,
        shingles: &[Option<&[u64]>],
        state: &mut CollectionState,
        summary: &mut WriteSummary,
        hook: &mut H,
    ) -> Result<(), H::Error> {
        let info = self.info;
        let id = info.def.id;
        let mut ops = ops;
        // A batch of deletes only ends the same rows, counts the same and leaves the same
        // tables in any order: in key order, the keys B-tree's removals walk its leaves in
        // order.
        if ops.iter().all(|op| matches!(op, WriteOp::Delete(_))) {
            ops.sort_by(|a, b| match (a, b) {
                (WriteOp::Delete(a), WriteOp::Delete(b)) => a.cmp(b),
                _ => std::cmp::Ordering::Equal,
            });
        }
        let appended = append_new_keys(&mut self.keys, info, &ops, state.next_row)?;
        // Content hashes: the table is opened (created) when an op carries a hash. A row that
        // ends keeps its entry, like its columns in its page, until compaction purges the
        // row (see `content_hash.rs`).
        let carries =
            ops.iter().any(|op| matches!(op, WriteOp::Insert(_, _, Some(_)) | WriteOp::Upsert(_, _, Some(_))));
        if carries && self.hashes.is_none() {
            self.hashes = content_hash::open_in(self.txn, true)?;
        }
        let params = &info.def.params;
        // Whether a removed row's page is read for its sketch (SimHash tables need it).
        let wants = hook.wants_removed_sketch();
        let OpsWriter { keys, pages, sets, hashes, new_hashes, .. } = self;
        for (i, (op, appended)) in ops.into_iter().zip(appended).enumerate() {
            match op {
                WriteOp::Insert(key, sketch, hash) | WriteOp::Upsert(key, sketch, hash) => {
                    check_key(info, key)?;
                    params
                        .check_compatible(sketch.params())
                        .map_err(|source| StorageError::Incompatible { collection: info.def.name.clone(), source })?;
                    let row = state.next_row;
                    // An appended key is new and was written with this row id.
                    let old = if appended {
                        None
                    } else {
                        keys.insert((id, key), row).map_err(StorageError::backend("write key"))?.map(|g| g.value())
                    };
                    if let Some(old_row) = old {
                        if matches!(op, WriteOp::Insert(..)) {
                            return Err(StorageError::DuplicateKey {
                                collection: info.def.name.clone(),
                                key: show_key(key),
                            }
                            .into());
                        }
                        if old_row >= state.next_row {
                            return Err(inconsistent(info, old_row, "a key maps to a row at or past next_row").into());
                        }
                        let gone = pages.delete(old_row, key, wants)?;
                        hook.removed(old_row, gone.as_ref())?;
                        if let Some(sets) = sets.as_mut() {
                            sets.remove(old_row)?;
                        }
                        summary.replaced += 1;
                        state.deleted += 1;
                    } else {
                        summary.inserted += 1;
                        state.live += 1;
                    }
                    pages.append(row, key, sketch)?;
                    if let Some(sets) = sets.as_mut() {
                        let set = shingles.get(i).copied().flatten().ok_or_else(|| StorageError::ShinglesRequired {
                            collection: info.def.name.clone(),
                            key: show_key(key),
                        })?;
                        sets.put(row, set)?;
                    }
                    if let (Some(_), Some(h)) = (hashes.as_ref(), hash) {
                        new_hashes.push((row, h));
                    }
                    hook.added(row, sketch)?;
                    state.next_row += 1;
                    summary.new_rows += 1;
                }
                WriteOp::Delete(key) => {
                    check_key(info, key)?;
                    let old = keys.remove((id, key)).map_err(StorageError::backend("delete key"))?.map(|g| g.value());
                    match old {
                        None => summary.missing += 1,
                        Some(old_row) => {
                            if old_row >= state.next_row {
                                return Err(
                                    inconsistent(info, old_row, "a key maps to a row at or past next_row").into()
                                );
                            }
                            let gone = pages.delete(old_row, key, wants)?;
                            hook.removed(old_row, gone.as_ref())?;
                            if let Some(sets) = sets.as_mut() {
                                sets.remove(old_row)?;
                            }
                            summary.deleted += 1;
                            state.live = state.live.saturating_sub(1);
                            state.deleted += 1;
                        }
                    }
                }
            }
        }
        if let Some(t) = hashes.as_mut() {
            content_hash::append(t, id, new_hashes)?;
            new_hashes.clear();
        }
        Ok(())
    }

    /// Writes every touched page back and closes the tables.
    pub(crate) fn finish(self) -> Result<(), StorageError> {
        let OpsWriter { keys, pages, sets, hashes, .. } = self;
        drop((keys, sets, hashes));
        pages.flush()
    }
}
