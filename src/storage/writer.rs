//! Write transactions: inserts, upserts and deletes of one collection, all or nothing.
//!
//! Within a transaction every touched page is built once ([`super::page_cache`]). Any error
//! drops the transaction uncommitted, so a failed batch leaves nothing behind.
//!
//! Semantics (also in `storage-format.md`):
//! * insert: a new row id (`next_row`, then incremented); a key already present is
//!   [`StorageError::DuplicateKey`].
//! * upsert: as insert when the key is absent; otherwise the old row is tombstoned and the
//!   key moves to a new row id. A stored row's columns never change after it is written.
//! * delete: the row is tombstoned and the key removed from `keys`; deleting an absent key
//!   is not an error (it is counted in [`WriteSummary::missing`]).

use redb::{ReadableTable, WriteTransaction};

use super::catalog::{CollectionInfo, read_state};
use super::content_hash;
use super::error::{StorageError, contain, panic_message, show_key};
use super::hook::IndexHook;
use super::index_tables::IndexTxn;
use super::key_append::{KeysTable, append_new_keys};
use super::page_cache::{BUILD_PAGES_MIN_ROWS, PageCache, build_pages};
use super::rules::{WriteOp, check_key, corrupt_page, inconsistent};
use super::shingles::ShingleWriter;
use super::tables::{COLLECTION_STATE, COLLECTION_STATE_NAME, KEYS, PAGES};
use crate::codec::meta::CollectionState;
use crate::codec::page::PageView;
use crate::sketch::params::SketchKind;
use crate::sketch::sketcher::Sketch;

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

/// Writes a collection's state.
pub(crate) fn write_state(
    txn: &WriteTransaction,
    info: &CollectionInfo,
    state: &CollectionState,
) -> Result<(), StorageError> {
    let bytes = state.encode().map_err(|source| StorageError::CorruptMeta {
        table: COLLECTION_STATE_NAME,
        key: info.def.id.to_string(),
        source: Box::new(source),
    })?;
    txn.open_table(COLLECTION_STATE)
        .map_err(StorageError::backend("open table"))?
        .insert(info.def.id, bytes.as_slice())
        .map_err(StorageError::backend("write collection state"))?;
    Ok(())
}

/// Reads a collection's state inside a write transaction.
/// The collection's state as of the index's write transaction.
pub(crate) fn index_state(txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<CollectionState, StorageError> {
    state_in(txn.0, info)
}

pub(crate) fn state_in(txn: &WriteTransaction, info: &CollectionInfo) -> Result<CollectionState, StorageError> {
    let t = txn.open_table(COLLECTION_STATE).map_err(StorageError::backend("open table"))?;
    read_state(&t, info)
}

impl super::store::Store {
    /// Applies `ops` to one collection in one transaction: all of them or, on any error,
    /// none.
    pub(crate) fn apply<'a, H: IndexHook + ?Sized>(
        &self,
        info: &CollectionInfo,
        ops: impl IntoIterator<Item = WriteOp<'a>>,
        hook: &mut H,
    ) -> Result<WriteSummary, H::Error> {
        contain("write", || self.apply_unguarded(info, ops, &[], hook))
    }

    /// [`Self::apply`] with each insert's or upsert's exact shingle set: `shingles[i]` belongs
    /// to the i-th op (strictly ascending hashes). A collection that keeps shingles refuses a
    /// write without one ([`StorageError::ShinglesRequired`]); other collections ignore them.
    pub(crate) fn apply_with_shingles<'a, H: IndexHook + ?Sized>(
        &self,
        info: &CollectionInfo,
        ops: impl IntoIterator<Item = WriteOp<'a>>,
        shingles: &[Option<&[u64]>],
        hook: &mut H,
    ) -> Result<WriteSummary, H::Error> {
        contain("write", || self.apply_unguarded(info, ops, shingles, hook))
    }

    /// The body of [`Self::apply`], run inside [`contain`] (redb panics become errors).
    fn apply_unguarded<'a, H: IndexHook + ?Sized>(
        &self,
        info: &CollectionInfo,
        ops: impl IntoIterator<Item = WriteOp<'a>>,
        shingles: &[Option<&[u64]>],
        hook: &mut H,
    ) -> Result<WriteSummary, H::Error> {
        let txn = self.begin_write("write records")?;
        let mut state = state_in(&txn, info)?;
        hook.begin(&IndexTxn(&txn), info)?;
        let mut summary = WriteSummary { first_row: state.next_row, ..WriteSummary::default() };
        let ops: Vec<WriteOp<'a>> = ops.into_iter().collect();
        let sketches: Vec<&Sketch> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::Insert(_, s, _) | WriteOp::Upsert(_, s, _) => Some(*s),
                WriteOp::Delete(_) => None,
            })
            .collect();
        std::thread::scope(|scope| {
            // The hook's job runs beside the record writes; an early error waits for it.
            let job = hook.prepare(&sketches, state.next_row).map(|job| scope.spawn(job));
            self.write_ops(&txn, info, ops, shingles, &mut state, &mut summary, hook)?;
            match job.map(|j| j.join()) {
                None => Ok(()),
                Some(Ok(result)) => hook.prepared(result, info),
                Some(Err(payload)) => Err(StorageError::EnginePanic {
                    op: "prepare index changes",
                    detail: panic_message(payload.as_ref()),
                }
                .into()),
            }
        })?;
        hook.finish(&IndexTxn(&txn), info)?;
        write_state(&txn, info, &state)?;
        txn.commit().map_err(StorageError::backend("commit"))?;
        Ok(summary)
    }

    /// Stores the records of `ops` and their keys (and shingle sets, for a collection that
    /// keeps them), in order, telling `hook` of every row added and removed; updates `state`
    /// and `summary`.
    #[allow(clippy::too_many_arguments)]
    fn write_ops<H: IndexHook + ?Sized>(
        &self,
        txn: &WriteTransaction,
        info: &CollectionInfo,
        ops: Vec<WriteOp<'_>>,
        shingles: &[Option<&[u64]>],
        state: &mut CollectionState,
        summary: &mut WriteSummary,
        hook: &mut H,
    ) -> Result<(), H::Error> {
        let id = info.def.id;
        let mut keys: KeysTable<'_> = txn.open_table(KEYS).map_err(StorageError::backend("open table"))?;
        let appended = append_new_keys(&mut keys, info, &ops, state.next_row)?;
        let mut pages = PageCache::new(txn, info)?;
        let mut sets = ShingleWriter::new(txn, info)?;
        // Content hashes: the table is opened when an op carries a hash, or when a row may
        // end and the file has the table (its entry goes with it); never created otherwise.
        let carries =
            ops.iter().any(|op| matches!(op, WriteOp::Insert(_, _, Some(_)) | WriteOp::Upsert(_, _, Some(_))));
        let ends_rows = ops.iter().any(|op| !matches!(op, WriteOp::Insert(..)));
        let mut hashes = if carries || ends_rows { content_hash::open_in(txn, carries)? } else { None };
        let params = &info.def.params;
        // A large batch of inserts only has its pages built on another thread while this one
        // writes the keys ([`build_pages`]); every other batch appends here, op by op.
        let all_inserts = ops.len() >= BUILD_PAGES_MIN_ROWS
            && sets.is_none()
            && ops.iter().all(|op| matches!(op, WriteOp::Insert(..)));
        let rows: Vec<(&[u8], &Sketch)> = if all_inserts {
            ops.iter().filter_map(|op| if let WriteOp::Insert(k, s, _) = *op { Some((k, s)) } else { None }).collect()
        } else {
            Vec::new()
        };
        let build_here = rows.is_empty();
        let (tail, first_row) = (if build_here { None } else { pages.take_tail(state.next_row)? }, state.next_row);
        std::thread::scope(|scope| -> Result<(), H::Error> {
            let rows = &rows;
            let job = (!build_here).then(|| scope.spawn(move || build_pages(info, tail, first_row, rows)));
            let looped = (|| -> Result<(), H::Error> {
                for (i, (op, appended)) in ops.into_iter().zip(appended).enumerate() {
                    match op {
                        WriteOp::Insert(key, sketch, hash) | WriteOp::Upsert(key, sketch, hash) => {
                            check_key(info, key)?;
                            params.check_compatible(sketch.params()).map_err(|source| StorageError::Incompatible {
                                collection: info.def.name.clone(),
                                source,
                            })?;
                            let row = state.next_row;
                            // An appended key is new and was written with this row id.
                            let old = if appended {
                                None
                            } else {
                                keys.insert((id, key), row)
                                    .map_err(StorageError::backend("write key"))?
                                    .map(|g| g.value())
                            };
                            if let Some(old_row) = old {
                                if matches!(op, WriteOp::Insert(..)) {
                                    return Err(StorageError::DuplicateKey {
                                        collection: info.def.name.clone(),
                                        key: show_key(key),
                                    }
                                    .into());
                                }
                                let gone = pages.delete(old_row, key)?;
                                hook.removed(old_row, &gone)?;
                                if let Some(sets) = sets.as_mut() {
                                    sets.remove(old_row)?;
                                }
                                if let Some(t) = &mut hashes {
                                    content_hash::take(t, info.def.id, old_row)?;
                                }
                                summary.replaced += 1;
                                state.deleted += 1;
                            } else {
                                summary.inserted += 1;
                                state.live += 1;
                            }
                            if build_here {
                                pages.append(row, key, sketch)?;
                            }
                            if let Some(sets) = sets.as_mut() {
                                let set = shingles.get(i).copied().flatten().ok_or_else(|| {
                                    StorageError::ShinglesRequired {
                                        collection: info.def.name.clone(),
                                        key: show_key(key),
                                    }
                                })?;
                                sets.put(row, set)?;
                            }
                            if let (Some(t), Some(h)) = (&mut hashes, hash) {
                                content_hash::put(t, info.def.id, row, h)?;
                            }
                            hook.added(row, sketch)?;
                            state.next_row += 1;
                            summary.new_rows += 1;
                        }
                        WriteOp::Delete(key) => {
                            check_key(info, key)?;
                            let old =
                                keys.remove((id, key)).map_err(StorageError::backend("delete key"))?.map(|g| g.value());
                            match old {
                                None => summary.missing += 1,
                                Some(old_row) => {
                                    let gone = pages.delete(old_row, key)?;
                                    hook.removed(old_row, &gone)?;
                                    if let Some(sets) = sets.as_mut() {
                                        sets.remove(old_row)?;
                                    }
                                    if let Some(t) = &mut hashes {
                                        content_hash::take(t, info.def.id, old_row)?;
                                    }
                                    summary.deleted += 1;
                                    state.live = state.live.saturating_sub(1);
                                    state.deleted += 1;
                                }
                            }
                        }
                    }
                }
                Ok(())
            })();
            // The keys' errors come first: the builder meets none that the per-op checks
            // (key, compatibility) let through, short of an inconsistency.
            if let Some(job) = job {
                let built = job.join().map_err(|payload| StorageError::EnginePanic {
                    op: "build pages",
                    detail: panic_message(payload.as_ref()),
                })?;
                looped?;
                pages.put_built(built?)?;
                return Ok(());
            }
            looped
        })?;
        pages.flush()?;
        Ok(())
    }
}

/// Calls `f(row, sketch)` for every live row of the collection, in row order, reading the
/// pages through the write transaction `txn` (index rebuilds).
pub(crate) fn for_each_live_in<E: From<StorageError>>(
    txn: &IndexTxn<'_>,
    info: &CollectionInfo,
    mut f: impl FnMut(u64, &Sketch) -> Result<(), E>,
) -> Result<(), E> {
    for_each_page_in(txn.0, info, |first, view| {
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            let sketch = super::reader::decode(info, view, first, i)?;
            f(view.first_row() + i as u64, &sketch)?;
        }
        Ok(())
    })
}

/// Calls `f(row, fingerprint)` for every live row of a SimHash collection, in row order:
/// [`for_each_live_in`] without building a sketch per row (a SimHash table rebuild).
pub(crate) fn for_each_live_fingerprint_in(
    txn: &IndexTxn<'_>,
    info: &CollectionInfo,
    mut f: impl FnMut(u64, u128),
) -> Result<(), StorageError> {
    if info.def.params.kind() != SketchKind::SimHash {
        return Err(inconsistent(info, 0, "a fingerprint scan of a collection that is not SimHash"));
    }
    // `parse_expected` checked the page's layout: one 8-byte value column per 64 bits.
    for_each_page_in(txn.0, info, |_, view| {
        let wide = view.layout().value_cols > 1;
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            let hi = if wide { u128::from(view.value(1, i)) << 64 } else { 0 };
            f(view.first_row() + i as u64, u128::from(view.value(0, i)) | hi);
        }
        Ok(())
    })
}

/// Calls `f(first row, page)` for every page of the collection, in row order, each checked.
fn for_each_page_in<E: From<StorageError>>(
    txn: &WriteTransaction,
    info: &CollectionInfo,
    mut f: impl FnMut(u64, &PageView<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let pages = txn.open_table(PAGES).map_err(StorageError::backend("open table"))?;
    let id = info.def.id;
    for entry in pages.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))? {
        let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
        let first = k.value().1;
        let view = PageView::parse_expected(v.value(), &info.spec, first).map_err(corrupt_page(info, first))?;
        f(first, &view)?;
    }
    Ok(())
}
