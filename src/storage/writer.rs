//! Write transactions: inserts, upserts and deletes of one collection, all or nothing,
//! given whole ([`Store::apply`]) or in parts while the transaction is open
//! ([`Store::apply_parts`]). The records are written by [`OpsWriter`] (pages through
//! [`super::page_cache::PageCache`]). Any error drops the transaction uncommitted, so a
//! failed batch leaves nothing behind.
//!
//! Semantics (also in `storage-format.md`):
//! * insert: a new row id (`next_row`, then incremented); a key already present is
//!   [`StorageError::DuplicateKey`].
//! * upsert: as insert when the key is absent; otherwise the old row is tombstoned and the
//!   key moves to a new row id. A stored row's columns never change after it is written.
//! * delete: the row is tombstoned and the key removed from `keys`; deleting an absent key
//!   is not an error (it is counted in [`WriteSummary::missing`]).

use redb::WriteTransaction;

use super::catalog::{CollectionInfo, read_state};
use super::error::{StorageError, contain, panic_message};
use super::hook::IndexHook;
use super::index_tables::IndexTxn;
use super::ops_writer::OpsWriter;
use super::rules::WriteOp;
use super::store::Store;
use super::tables::{COLLECTION_STATE, COLLECTION_STATE_NAME};
use crate::codec::meta::CollectionState;
use crate::sketch::sketcher::Sketch;

pub use super::ops_writer::WriteSummary;
pub(crate) use super::page_cache::PageCache;

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

impl Store {
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
            let mut writer = OpsWriter::new(&txn, info)?;
            writer.write(ops, shingles, &mut state, &mut summary, hook)?;
            writer.finish()?;
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

    /// Applies the ops of `parts` to one collection in one transaction, each part's as it
    /// arrives (`view` gives a part's ops and their shingle sets, as
    /// [`Self::apply_with_shingles`] takes them), committed after the last part: all of
    /// them or none. A part that is an error ends the transaction uncommitted and is
    /// returned (`Ok(Err(e))`); a failed write returns the write's error, uncommitted too.
    ///
    /// An index hook is told of each row as it is written (no prepare job: the batch is not
    /// known whole in advance).
    pub(crate) fn apply_parts<P, E, H>(
        &self,
        info: &CollectionInfo,
        parts: impl Iterator<Item = Result<P, E>>,
        view: impl for<'p> Fn(&'p P) -> (Vec<WriteOp<'p>>, Vec<Option<&'p [u64]>>),
        hook: &mut H,
    ) -> Result<Result<WriteSummary, E>, H::Error>
    where
        H: IndexHook + ?Sized,
    {
        contain("write", || {
            let txn = self.begin_write("write records")?;
            let mut state = state_in(&txn, info)?;
            hook.begin(&IndexTxn(&txn), info)?;
            let mut summary = WriteSummary { first_row: state.next_row, ..WriteSummary::default() };
            let mut writer = OpsWriter::new(&txn, info)?;
            for part in parts {
                let part = match part {
                    Ok(part) => part,
                    // The writer's tables, then the transaction, are dropped: nothing commits.
                    Err(e) => return Ok(Err(e)),
                };
                let (ops, sets) = view(&part);
                writer.write(ops, &sets, &mut state, &mut summary, hook)?;
            }
            writer.finish()?;
            hook.finish(&IndexTxn(&txn), info)?;
            write_state(&txn, info, &state)?;
            txn.commit().map_err(StorageError::backend("commit"))?;
            Ok(Ok(summary))
        })
    }
}
