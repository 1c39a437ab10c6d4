//! [`IndexHook`]: how the index layer keeps its tables current inside the storage layer's
//! write transactions (inserts, upserts, deletes, batches, compaction), without the storage
//! layer knowing any index.
//!
//! The writer calls [`IndexHook::begin`] first, then [`IndexHook::added`] for every row it appends and
//! [`IndexHook::removed`] for every row it tombstones (or moves away, in compaction), in
//! operation order, then [`IndexHook::finish`] once, inside the same transaction, before
//! committing. An error from any of them aborts the whole transaction.

use super::catalog::CollectionInfo;
use super::error::StorageError;
use super::index_tables::IndexTxn;
use crate::sketch::sketcher::Sketch;

/// What a [`PrepareJob`] computed, handed back to the hook that made the job.
pub(crate) type Prepared = Box<dyn std::any::Any + Send>;

/// Work on a batch's new sketches that needs no transaction, run on another thread while
/// the writer stores the records.
pub(crate) type PrepareJob<'a> = Box<dyn FnOnce() -> Prepared + Send + 'a>;

/// Index maintenance for one write transaction of one collection.
pub(crate) trait IndexHook {
    /// The hook's error: the index layer's, which wraps storage errors (the writer's own
    /// failures reach the caller through it too).
    type Error: From<StorageError>;
    /// The transaction began (before any other call): load the index definition.
    fn begin(&mut self, txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<(), Self::Error>;
    /// Called once after `begin`, before any `added`, with the sketches of the batch's inserts
    /// and upserts in operation order: if the whole batch is stored, `added` is called for
    /// exactly these, in this order, with rows `first_row`, `first_row + 1`, ... A hook may
    /// return a job over them; the writer runs it beside the record writes and hands its
    /// result to [`IndexHook::prepared`] before `finish`.
    fn prepare<'a>(&mut self, _sketches: &'a [&'a Sketch], _first_row: u64) -> Option<PrepareJob<'a>> {
        None
    }
    /// The result of the job [`IndexHook::prepare`] returned (after every `added` and
    /// `removed`, before `finish`).
    fn prepared(&mut self, _result: Prepared, _info: &CollectionInfo) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Row `row` now holds `sketch`.
    fn added(&mut self, row: u64, sketch: &Sketch) -> Result<(), Self::Error>;
    /// Whether [`IndexHook::removed`] needs the removed row's sketch (then the writer reads
    /// the row's page for it; otherwise a delete reads no page).
    fn wants_removed_sketch(&self) -> bool {
        true
    }
    /// Row `row` is gone; `sketch` is the record it held (read from its page) whenever
    /// [`IndexHook::wants_removed_sketch`] said so, and may be given otherwise too. An index
    /// derives the entries to remove from the sketch or lists the row as removed, so none
    /// needs a reverse map.
    fn removed(&mut self, row: u64, sketch: Option<&Sketch>) -> Result<(), Self::Error>;
    /// Writes the index changes into `txn`.
    fn finish(&mut self, txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<(), Self::Error>;
    /// Compaction, in a transaction of its own (after `begin`): rewrites the index into its
    /// read-optimised form where it has one (an LSH index's or SimHash tables' runs merged into one). Returns
    /// whether anything changed.
    fn optimize(&mut self, _txn: &IndexTxn<'_>, _info: &CollectionInfo) -> Result<bool, Self::Error> {
        Ok(false)
    }
}
