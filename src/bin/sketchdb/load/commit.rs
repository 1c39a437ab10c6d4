//! The commit stage of a load: batches are committed in the order they are submitted,
//! either on the calling thread ([`Committer::inline`]: a batch is written and committed
//! when it is whole) or on a thread of their own ([`Committer::spawn`]). There a batch is
//! handed over in parts as its records are sketched ([`Committer::part`]) and written into
//! its open transaction while the caller sketches the next records; [`Committer::submit`]
//! hands the last part and commits, so the commit of a load's last batch has only that part
//! and the flush left to do. Parts wait in a bounded queue (about two batches of records),
//! so memory holds a few batches at most. A batch whose commit is never asked for (the
//! caller stopped early: a strict-mode reject) is rolled back, whatever of it was written;
//! the batches submitted before it commit. A failed commit stops the stage: no later batch
//! commits.

use std::borrow::Borrow;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, channel, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use sketchdb::{Batch, Collection, Snapshot, WriteSummary};

use super::reader::READ_CHUNK;
use crate::error::CliError;

/// Written parts that may wait for the freeing thread.
const FREE_QUEUE: usize = 16;

/// Where the first and the last record of a batch were read, for errors.
pub type Span = (String, String);

/// A committed batch: what it did, a batch emptied for reuse (inline only), and a snapshot
/// taken after it (for the stored-hash checks of the records that follow).
pub struct Committed {
    pub summary: WriteSummary,
    pub batch: Option<Batch>,
    pub snapshot: Snapshot,
}

type Outcome = Result<Committed, CliError>;

/// What the committing thread is handed, in order: parts of the open batch (with the span
/// of the batch so far), then its end.
pub enum Message {
    Part(Batch, Span),
    Commit(Span),
}

/// Commits batches in order, inline or on a thread of a [`Scope`].
pub enum Committer<'scope> {
    Inline { coll: Collection, busy: Duration },
    Thread { tx: SyncSender<Message>, rx: Receiver<Outcome>, handle: ScopedJoinHandle<'scope, Duration> },
}

/// How a streamed transaction ended other than committed.
enum End {
    /// The caller stopped before the batch was whole (rolled back).
    Stopped,
    /// A write or the commit failed.
    Failed(sketchdb::Error),
}

impl From<sketchdb::Error> for End {
    fn from(e: sketchdb::Error) -> Self {
        End::Failed(e)
    }
}

/// The error of a failed write or commit, naming the records of its batch.
fn failed(e: sketchdb::Error, span: &Span) -> CliError {
    CliError::from(e).context(format!("the batch of records {} to {}", span.0, span.1))
}

/// Commits `batch`; an error names the records it held.
fn commit(coll: &Collection, mut batch: Batch, span: &Span) -> Outcome {
    let summary = coll.apply(&batch).map_err(|e| failed(e, span))?;
    batch.clear();
    Ok(Committed { summary, batch: Some(batch), snapshot: coll.snapshot().map_err(|e| failed(e, span))? })
}

/// A part lent to the writer. Dropped once its writes are made, it is handed to the freeing
/// thread: the part's sketches were allocated by the sketching threads, and freeing them
/// took about a quarter of the committing thread's time.
struct Lent<'f> {
    batch: Batch,
    free: &'f SyncSender<Batch>,
}

impl Borrow<Batch> for Lent<'_> {
    fn borrow(&self) -> &Batch {
        &self.batch
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        // Without a freeing thread the part is freed here.
        let _ = self.free.send(std::mem::replace(&mut self.batch, Batch::new()));
    }
}

/// Writes the parts of the next batch arriving on `batches` into one transaction as they
/// arrive and commits it when its end arrives. `None` once no batch is left, or when the
/// caller stopped handing parts before the batch's end (it is rolled back; nothing follows).
/// `busy` gains the time spent writing and committing, not waiting.
fn stream_one(
    coll: &Collection,
    batches: &Receiver<Message>,
    free: &SyncSender<Batch>,
    busy: &mut Duration,
) -> Option<Outcome> {
    let mut next = Some(batches.recv().ok()?);
    let mut span: Option<Span> = None;
    let mut waited = Duration::ZERO;
    let start = Instant::now();
    let parts = std::iter::from_fn(|| {
        let message = next.take().map(Ok).unwrap_or_else(|| {
            let wait = Instant::now();
            let m = batches.recv();
            waited += wait.elapsed();
            m
        });
        match message {
            Ok(Message::Part(part, so_far)) => {
                span = Some(so_far);
                Some(Ok(Lent { batch: part, free }))
            }
            Ok(Message::Commit(whole)) => {
                span = Some(whole);
                None
            }
            Err(_) => Some(Err(End::Stopped)),
        }
    });
    let applied = coll.apply_parts(parts);
    *busy += start.elapsed().saturating_sub(waited);
    let span = span.unwrap_or_default();
    match applied {
        Ok(summary) => Some(
            coll.snapshot().map(|snapshot| Committed { summary, batch: None, snapshot }).map_err(|e| failed(e, &span)),
        ),
        Err(End::Stopped) => None,
        Err(End::Failed(e)) => Some(Err(failed(e, &span))),
    }
}

impl<'scope> Committer<'scope> {
    /// Commits on the calling thread, in [`Committer::submit`].
    pub fn inline(coll: &Collection) -> Self {
        Committer::Inline { coll: coll.clone(), busy: Duration::ZERO }
    }

    /// Commits on a thread of `scope`, batches of up to `batch_size` records handed over in
    /// parts of up to [`READ_CHUNK`] records.
    pub fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        coll: &Collection,
        batch_size: usize,
    ) -> Result<Self, CliError> {
        // Two batches' parts may wait (parts are at most a read chunk of records; a part
        // ends at a batch's end, so a batch takes at most one part more than its chunks).
        let (tx, batches) = sync_channel::<Message>(2 * (batch_size.div_ceil(READ_CHUNK) + 1));
        let (done, rx) = channel();
        let coll = coll.clone();
        let handle = std::thread::Builder::new()
            .name("sketchdb-commit".into())
            .spawn_scoped(scope, move || {
                std::thread::scope(|inner| {
                    let (free, parts) = sync_channel::<Batch>(FREE_QUEUE);
                    // If it cannot start, parts are freed where they are dropped.
                    let _ = std::thread::Builder::new()
                        .name("sketchdb-free".into())
                        .spawn_scoped(inner, move || parts.into_iter().for_each(drop));
                    let mut busy = Duration::ZERO;
                    // A caller that stopped early (a strict-mode reject, an input that cannot
                    // be read on) no longer listens, but the batches it submitted whole
                    // before still commit; the one it was handing over is rolled back.
                    while let Some(outcome) = stream_one(&coll, &batches, &free, &mut busy) {
                        let failed = outcome.is_err();
                        let _ = done.send(outcome);
                        if failed {
                            break;
                        }
                    }
                    busy
                })
            })
            .map_err(|e| CliError::Runtime(format!("cannot start the commit thread: {e}")))?;
        Ok(Committer::Thread { tx, rx, handle })
    }

    /// Whether batches are handed over in parts ([`Committer::part`]).
    pub fn takes_parts(&self) -> bool {
        matches!(self, Committer::Thread { .. })
    }

    /// Hands over a part of the batch being built (`span`: its records so far), written
    /// while the next ones are sketched; returns the batches committed since the last call.
    /// Inline, parts are not taken: the batch is written whole at [`Committer::submit`].
    pub fn part(&mut self, part: Batch, span: Span) -> Result<Vec<Committed>, CliError> {
        match self {
            Committer::Inline { .. } => {
                Err(CliError::Runtime("a batch was handed over in parts to an inline commit (a bug)".into()))
            }
            Committer::Thread { tx, rx, .. } => {
                if tx.send(Message::Part(part, span)).is_err() {
                    return Err(thread_failure(rx));
                }
                finished(rx)
            }
        }
    }

    /// Submits `batch` (inline: the whole batch; on a thread: its last part) for commit;
    /// returns the batches committed since the last call (all of them inline, the finished
    /// ones otherwise), in order. The first failed commit is returned as the error, now or
    /// at a later call.
    pub fn submit(&mut self, batch: Batch, span: Span) -> Result<Vec<Committed>, CliError> {
        match self {
            Committer::Inline { coll, busy } => {
                let start = Instant::now();
                let outcome = commit(coll, batch, &span);
                *busy += start.elapsed();
                Ok(vec![outcome?])
            }
            Committer::Thread { tx, rx, .. } => {
                let sent = (batch.is_empty() || tx.send(Message::Part(batch, span.clone())).is_ok())
                    && tx.send(Message::Commit(span)).is_ok();
                if !sent {
                    return Err(thread_failure(rx));
                }
                finished(rx)
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

/// The outcomes the committing thread has sent so far, in order; the first failure as the
/// error.
fn finished(rx: &Receiver<Outcome>) -> Result<Vec<Committed>, CliError> {
    let mut out = Vec::new();
    loop {
        match rx.try_recv() {
            Ok(outcome) => out.push(outcome?),
            Err(TryRecvError::Empty) => return Ok(out),
            Err(TryRecvError::Disconnected) => return Err(stopped()),
        }
    }
}

/// Why the committing thread stopped taking batches: its failed outcome.
fn thread_failure(rx: &Receiver<Outcome>) -> CliError {
    rx.iter().find_map(Result::err).unwrap_or_else(stopped)
}

fn stopped() -> CliError {
    CliError::Runtime("the commit thread stopped unexpectedly".into())
}
