//! Compaction: pages with tombstones are rewritten without them, then redb compacts the file
//! to give the space back.
//!
//! The live rows of every page that has deleted rows are moved, in row order, to new row ids
//! at the end of the collection (row ids are never reused; a key's row id changes only
//! here), the emptied pages are removed, and `deleted` drops to zero; the index is optimized
//! in the same transaction (an LSH index then holds no removed row's entries, whose records
//! are gone) and the moved rows' shingle sets move with them. One write transaction per collection, so a crash leaves each collection either
//! compacted or untouched. Then
//! redb's own `compact` relocates pages to the front of the file and truncates it; that
//! needs no live transactions or snapshots ([`StorageError::Busy`] otherwise).

use super::catalog::CollectionInfo;
use super::content_hash;
use super::error::{StorageError, contain};
use super::hook::IndexHook;
use super::index_tables::IndexTxn;
use super::reader::decode;
use super::rules::{corrupt_page, inconsistent};
use super::shingles::ShingleWriter;
use super::store::Store;
use super::tables::KEYS;
use super::writer::{PageCache, state_in, write_state};
use crate::codec::page::PageView;

/// What a compaction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionSummary {
    /// Pages rewritten because they held deleted rows.
    pub pages_rewritten: u64,
    /// Live rows moved to new row ids.
    pub rows_moved: u64,
    /// Deleted rows removed for good.
    pub rows_purged: u64,
    /// Indexes rewritten into their read-optimised form (LSH runs merged into one).
    pub indexes_optimized: u64,
    /// File size before, in bytes (0 for custom backends).
    pub file_bytes_before: u64,
    /// File size after, in bytes (0 for custom backends).
    pub file_bytes_after: u64,
}

impl Store {
    fn file_len(&self) -> u64 {
        std::fs::metadata(self.location()).map(|m| m.len()).unwrap_or(0)
    }

    /// Compacts every collection's pages and index (see [`IndexHook::optimize`]), then the
    /// file. `hook_for` gives each collection's index maintenance (moved rows change row ids).
    pub(crate) fn compact<H: IndexHook>(
        &self,
        collections: &[CollectionInfo],
        hook_for: &dyn Fn(&CollectionInfo) -> H,
    ) -> Result<CompactionSummary, H::Error> {
        if self.is_read_only() {
            return Err(StorageError::ReadOnly { op: "compact" }.into());
        }
        contain("compact", || {
            self.ensure_space("compact", self.compact_bytes(collections)?)?;
            let mut summary = CompactionSummary { file_bytes_before: self.file_len(), ..Default::default() };
            for info in collections {
                let mut hook = hook_for(info);
                self.compact_collection(info, &mut summary, &mut hook)?;
                let mut hook = hook_for(info);
                let txn = self.begin_write("compact")?;
                hook.begin(&IndexTxn(&txn), info)?;
                if hook.optimize(&IndexTxn(&txn), info)? {
                    summary.indexes_optimized += 1;
                    txn.commit().map_err(StorageError::backend("commit"))?;
                }
            }
            self.compact_file()?;
            summary.file_bytes_after = self.file_len();
            Ok(summary)
        })
    }

    /// The bytes compaction adds before the file shrinks: the live rows of pages with
    /// deleted rows are written again (record, key and key-map entry, and their shingle
    /// sets), and each collection's index is rewritten by its optimization.
    fn compact_bytes(&self, collections: &[CollectionInfo]) -> Result<u64, StorageError> {
        let snap = self.snapshot()?;
        let mut total = 0u64;
        for info in collections {
            let mut moved = vec![];
            snap.for_each_page(info, |_, view| {
                if view.deleted_count() > 0 {
                    let rows = view.row_count() as u64;
                    let row_bytes = view.value_columns().len() as u64 / rows.max(1);
                    for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
                        total += row_bytes + 2 * view.key(i).len() as u64 + 16;
                        moved.push(view.first_row() + i as u64);
                    }
                }
                Ok(true)
            })?;
            if info.shingles && !moved.is_empty() {
                snap.for_each_shingle_entry(info, |row, bytes| {
                    if moved.binary_search(&row).is_ok() {
                        total += bytes.len() as u64 + 12;
                    }
                    Ok(())
                })?;
            }
            total += snap.index_bytes(info.def.id)?;
        }
        Ok(total)
    }

    fn compact_collection<H: IndexHook + ?Sized>(
        &self,
        info: &CollectionInfo,
        summary: &mut CompactionSummary,
        hook: &mut H,
    ) -> Result<(), H::Error> {
        let mut holed = vec![];
        {
            let snap = self.snapshot()?;
            snap.for_each_page(info, |page_no, view| {
                if view.deleted_count() > 0 {
                    holed.push(page_no);
                }
                Ok(true)
            })?;
        }
        if holed.is_empty() {
            return Ok(());
        }
        let purged_before = summary.rows_purged;
        let txn = self.begin_write("compact")?;
        let mut state = state_in(&txn, info)?;
        hook.begin(&IndexTxn(&txn), info)?;
        {
            let id = info.def.id;
            let mut keys = txn.open_table(KEYS).map_err(StorageError::backend("open table"))?;
            let mut pages = PageCache::new(&txn, info)?;
            let mut sets = ShingleWriter::new(&txn, info)?;
            let mut hashes = content_hash::open_in(&txn, false)?;
            for first in holed {
                let Some(mut b) = pages.take(first)? else { continue };
                let bytes = b.finish();
                let view = PageView::parse_expected(&bytes, &info.spec, first).map_err(corrupt_page(info, first))?;
                summary.pages_rewritten += 1;
                for i in 0..view.row_count() {
                    let old_row = view.first_row() + i as u64;
                    if view.is_deleted(i) {
                        // A removed row's content hash stays until its row is purged here.
                        if let Some(t) = &mut hashes {
                            content_hash::take(t, info.def.id, old_row)?;
                        }
                        summary.rows_purged += 1;
                        continue;
                    }
                    // A moved row keeps its content hash under its new row id.
                    if let Some(t) = &mut hashes
                        && let Some(h) = content_hash::take(t, info.def.id, old_row)?
                    {
                        content_hash::put(t, info.def.id, state.next_row, h)?;
                    }
                    let key = view.key(i);
                    let new_row = state.next_row;
                    let sketch = decode(info, &view, first, i)?;
                    pages.append(new_row, key, &sketch)?;
                    hook.removed(old_row, Some(&sketch))?;
                    hook.added(new_row, &sketch)?;
                    if let Some(sets) = sets.as_mut() {
                        sets.move_row(old_row, new_row)?;
                    }
                    let old =
                        keys.insert((id, key), new_row).map_err(StorageError::backend("move key"))?.map(|g| g.value());
                    if old != Some(old_row) {
                        return Err(inconsistent(info, old_row, "a live row's key does not map to it").into());
                    }
                    state.next_row += 1;
                    summary.rows_moved += 1;
                }
            }
            pages.flush()?;
        }
        hook.finish(&IndexTxn(&txn), info)?;
        // The purged rows' records are gone with this commit: an index still holding entries
        // of removed rows (an LSH run's) drops them in the same transaction.
        if hook.optimize(&IndexTxn(&txn), info)? {
            summary.indexes_optimized += 1;
        }
        state.deleted = state.deleted.saturating_sub(summary_purged(summary, purged_before));
        write_state(&txn, info, &state)?;
        txn.commit().map_err(StorageError::backend("commit"))?;
        Ok(())
    }

    /// redb's file compaction, repeated until it reports nothing left to do.
    pub(crate) fn compact_file(&self) -> Result<(), StorageError> {
        // redb compacts against the last durable commit.
        self.flush()?;
        let mut db = self.exclusive("file compaction")?;
        for _ in 0..64 {
            match db.compact() {
                Ok(true) => continue,
                Ok(false) => break,
                Err(redb::CompactionError::TransactionInProgress) => {
                    return Err(StorageError::Busy { op: "file compaction" });
                }
                Err(e) => return Err(StorageError::backend("compact file")(e)),
            }
        }
        Ok(())
    }
}

fn summary_purged(summary: &CompactionSummary, before: u64) -> u64 {
    summary.rows_purged - before
}
