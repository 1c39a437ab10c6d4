//! The current snapshot: one read transaction on the last commit, shared by every read of a
//! handle until the next write, so that a warm read begins no transaction of its own.
//!
//! Beginning a redb read transaction costs a few microseconds in the shared-file modes (a
//! byte-range lock on the header, another on the transaction id, their releases), more than
//! a warm LSH probe itself. A handle that no other handle or process can commit to keeps the
//! snapshot of its last commit and hands it to every read until its own next write:
//!
//! * Validity. Only this handle commits to the file: a read-write handle in the
//!   single-writer or exclusive mode (redb refuses a second writer, in this process or
//!   another; the test `warm_reads` asserts it). Every write transaction of the handle passes
//!   through [`WriteTxn`], which counts it begun before redb can publish it
//!   ([`Generation::begin`], clearing the kept snapshot) and ended when it is committed,
//!   aborted or dropped. A snapshot is kept only when no write was open and none began
//!   between reading the generation and beginning the transaction, so a kept snapshot
//!   always views the last commit. Handles others commit to (read-only ones, multi-writer
//!   ones) begin a transaction per read, as redb needs to see those commits.
//! * Space. The kept transaction is let go when a write begins (so it pins no page a write
//!   frees) and when the handle is lent out for compaction or an integrity check (which need
//!   no reader open).
//!
//! What layers above derive from one commit (statistics, plans, the index's decoded
//! definition) is kept in the snapshot itself ([`ReadSnapshot::memo`]) and goes with it.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use redb::WriteTransaction;

/// A kept snapshot (a [`super::reader::ReadSnapshot`]; named by type where it is read, as
/// the reader module depends on this one's user).
type Kept = Arc<dyn Any + Send + Sync>;

/// The writes of one handle: begun and ended counts, and the snapshot kept for the
/// generation (`begun`) it was taken at.
#[derive(Default)]
pub(crate) struct Generation {
    begun: AtomicU64,
    ended: AtomicU64,
    kept: Mutex<Option<(u64, Kept)>>,
}

impl Generation {
    /// Counts a write transaction begun (redb has granted it, nothing of it is published
    /// yet) and lets the kept snapshot go.
    pub(crate) fn begin(&self) {
        let old = {
            let mut kept = self.kept.lock();
            self.begun.fetch_add(1, Ordering::SeqCst);
            kept.take()
        };
        drop(old);
    }

    /// Counts a write transaction ended (committed, aborted or dropped).
    pub(crate) fn end(&self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }

    /// Lets the kept snapshot go and counts a begun-and-ended change (compaction and
    /// integrity checks, which run on the redb handle itself).
    pub(crate) fn touch(&self) {
        self.begin();
        self.end();
    }

    /// The generation when no write is open.
    fn quiet(&self) -> Option<u64> {
        let begun = self.begun.load(Ordering::SeqCst);
        (self.ended.load(Ordering::SeqCst) == begun).then_some(begun)
    }

    /// The kept snapshot when it views the last commit.
    pub(crate) fn kept<S: Any + Send + Sync>(&self) -> Option<Arc<S>> {
        let g = self.quiet()?;
        match &*self.kept.lock() {
            Some((at, snap)) if *at == g => snap.clone().downcast::<S>().ok(),
            _ => None,
        }
    }

    /// `fresh()` (a snapshot begun now), kept when no write was open or began around it.
    pub(crate) fn keep<S: Any + Send + Sync, E>(&self, fresh: impl FnOnce() -> Result<S, E>) -> Result<Arc<S>, E> {
        let before = self.quiet();
        let snap = Arc::new(fresh()?);
        if let Some(g) = before {
            let mut kept = self.kept.lock();
            // `begin` counts under this lock: a write begun since `before` shows here, and
            // one begun after this check clears what is kept now.
            if self.quiet() == Some(g) {
                *kept = Some((g, snap.clone()));
            }
        }
        Ok(snap)
    }
}

/// A write transaction of a handle, counted in its [`Generation`] from begin to end.
pub(crate) struct WriteTxn {
    txn: Option<WriteTransaction>,
    generation: Arc<Generation>,
}

impl WriteTxn {
    /// `txn`, counted as begun.
    pub(crate) fn new(txn: WriteTransaction, generation: Arc<Generation>) -> Self {
        generation.begin();
        WriteTxn { txn: Some(txn), generation }
    }

    /// Commits (redb's `commit`); the write counts as ended whatever the outcome.
    pub(crate) fn commit(mut self) -> Result<(), redb::CommitError> {
        match self.txn.take() {
            Some(txn) => txn.commit(),
            None => Ok(()),
        }
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        // The transaction first: an uncommitted one is rolled back before the write counts
        // as ended.
        drop(self.txn.take());
        self.generation.end();
    }
}

impl std::ops::Deref for WriteTxn {
    type Target = WriteTransaction;
    fn deref(&self) -> &WriteTransaction {
        // Present from `new` until `commit`, `abort` or drop consume it.
        self.txn.as_ref().unwrap_or_else(|| unreachable!("a WriteTxn is used after it ended"))
    }
}

impl std::ops::DerefMut for WriteTxn {
    fn deref_mut(&mut self) -> &mut WriteTransaction {
        self.txn.as_mut().unwrap_or_else(|| unreachable!("a WriteTxn is used after it ended"))
    }
}
