//! The commit stage of a load: batches are committed in the order they are submitted,
//! either on the calling thread ([`Committer::inline`]) or on a thread of their own
//! ([`Committer::spawn`]) while the caller sketches the next batch. At most one batch waits
//! for the committing thread beside the one it commits, so memory holds at most three
//! batches (the one being built included). A failed commit stops the stage: no later
//! batch commits.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, channel, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use sketchdb::{Batch, Collection, Snapshot, WriteSummary};

use crate::error::CliError;

/// Where the first and the last record of a batch were read, for errors.
pub type Span = (String, String);

/// A committed batch: what it did, the batch emptied for reuse, and a snapshot taken after
/// it (for the stored-hash checks of the records that follow).
pub struct Committed {
    pub summary: WriteSummary,
    pub batch: Batch,
    pub snapshot: Snapshot,
}

type Outcome = Result<Committed, CliError>;

/// Commits batches in order, inline or on a thread of a [`Scope`].
pub enum Committer<'scope> {
    Inline { coll: Collection, busy: Duration },
    Thread { tx: SyncSender<(Batch, Span)>, rx: Receiver<Outcome>, handle: ScopedJoinHandle<'scope, Duration> },
}

/// Commits `batch`; an error names the records it held.
fn commit(coll: &Collection, mut batch: Batch, span: &Span) -> Outcome {
    let context =
        |e: sketchdb::Error| CliError::from(e).context(format!("the batch of records {} to {}", span.0, span.1));
    let summary = coll.apply(&batch).map_err(context)?;
    batch.clear();
    Ok(Committed { summary, batch, snapshot: coll.snapshot().map_err(context)? })
}

impl<'scope> Committer<'scope> {
    /// Commits on the calling thread, in [`Committer::submit`].
    pub fn inline(coll: &Collection) -> Self {
        Committer::Inline { coll: coll.clone(), busy: Duration::ZERO }
    }

    /// Commits on a thread of `scope`.
    pub fn spawn<'env>(scope: &'scope Scope<'scope, 'env>, coll: &Collection) -> Result<Self, CliError> {
        let (tx, batches) = sync_channel::<(Batch, Span)>(1);
        let (done, rx) = channel();
        let coll = coll.clone();
        let handle = std::thread::Builder::new()
            .name("sketchdb-commit".into())
            .spawn_scoped(scope, move || {
                let mut busy = Duration::ZERO;
                for (batch, span) in batches {
                    let start = Instant::now();
                    let outcome = commit(&coll, batch, &span);
                    busy += start.elapsed();
                    let failed = outcome.is_err();
                    // A caller that stopped early (a strict-mode reject, an input that
                    // cannot be read on) no longer listens, but the batches it submitted
                    // before are whole and still commit.
                    let _ = done.send(outcome);
                    if failed {
                        break;
                    }
                }
                busy
            })
            .map_err(|e| CliError::Runtime(format!("cannot start the commit thread: {e}")))?;
        Ok(Committer::Thread { tx, rx, handle })
    }

    /// Submits `batch` for commit; returns the batches committed since the last call (all of
    /// them inline, the finished ones otherwise), in order. The first failed commit is
    /// returned as the error, now or at a later call.
    pub fn submit(&mut self, batch: Batch, span: Span) -> Result<Vec<Committed>, CliError> {
        match self {
            Committer::Inline { coll, busy } => {
                let start = Instant::now();
                let outcome = commit(coll, batch, &span);
                *busy += start.elapsed();
                Ok(vec![outcome?])
            }
            Committer::Thread { tx, rx, .. } => {
                if tx.send((batch, span)).is_err() {
                    // The thread stopped after a failed commit: its outcome says why.
                    return rx.iter().find_map(Result::err).map_or_else(|| Err(stopped()), Err);
                }
                let mut out = Vec::new();
                loop {
                    match rx.try_recv() {
                        Ok(outcome) => out.push(outcome?),
                        Err(TryRecvError::Empty) => return Ok(out),
                        Err(TryRecvError::Disconnected) => return Err(stopped()),
                    }
                }
            }
        }
    }

    /// Waits for every submitted batch; returns those not returned before, in order, and
    /// the time spent committing.
    pub fn finish(self) -> Result<(Vec<Committed>, Duration), CliError> {
        match self {
            Committer::Inline { busy, .. } => Ok((Vec::new(), busy)),
            Committer::Thread { tx, rx, handle, .. } => {
                drop(tx);
                let out = rx.iter().collect::<Result<Vec<_>, _>>()?;
                let busy = handle.join().map_err(|_| stopped())?;
                Ok((out, busy))
            }
        }
    }
}

fn stopped() -> CliError {
    CliError::Runtime("the commit thread stopped unexpectedly".into())
}
