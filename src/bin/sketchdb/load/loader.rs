//! The sketching stage of a load and what it hands to the commit stage: each chunk of
//! records read is hashed, checked against the stored content hashes and sketched on the
//! pool ([`Loader::start`]; with more than one thread the next chunks are worked on while the
//! command's thread checks and batches the current one), then checked for duplicate keys
//! (an unchanged record is skipped and keeps its row id) and added to the pending batch in
//! input order ([`Loader::add`]), which is submitted for commit. Rejects are reported here,
//! on the command's thread, in input order.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::{Duration, Instant};

use sketchdb::{Batch, Collection, Snapshot};
use xxhash_rust::xxh3::xxh3_128;

use super::commit::{Committed, Committer, Span};
use super::pipeline::{Step, Worked, work};
use super::reader::{Items, READ_CHUNK};
use super::rejects::{Bad, RejectKind, Rejects};
use crate::error::CliError;

/// What a load did.
#[derive(Default)]
pub struct Counts {
    pub added: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub deleted: u64,
}

/// Where a load's time went.
pub struct Times {
    /// Hashing, checking and sketching (summed over chunks), and batching.
    pub sketch: Duration,
    /// Writing and committing batches (busy, not waiting for records).
    pub commit: Duration,
    /// From the end of the last sketching job to the last commit's end: the serial end of
    /// the pipeline, when nothing overlaps the commit.
    pub tail: Duration,
}

/// Builds batches from records read and submits them to the commit stage.
pub struct Loader<'c> {
    coll: &'c Collection,
    pool: &'c rayon::ThreadPool,
    committer: Committer<'c>,
    /// A snapshot for the stored-hash checks, taken after the last batch committed. A key
    /// read twice is a duplicate (`seen`; a key without an id is unique by its position),
    /// so a batch still committing never holds a key the checks ask about, and a chunk may
    /// be checked against a snapshot older than the batches submitted before it.
    snap: Arc<Snapshot>,
    /// Whether [`Loader::start`] returns at once (the chunk worked on in the background).
    overlap: bool,
    /// The pending batch (the part of it not handed over yet, when the commit stage takes
    /// parts).
    batch: Batch,
    /// The room a new pending batch is made with.
    capacity: usize,
    batch_size: usize,
    /// Batches returned by the commit stage, emptied, for reuse.
    spare: Vec<Batch>,
    /// Replace the records of every key already stored (`upsert`), not only changed ones.
    upsert: bool,
    pub counts: Counts,
    /// xxh3-128 of every key read (duplicates across inputs; `--sync`).
    seen: HashSet<u128>,
    /// Whether `seen` holds every key, or only ids: a record without an id is keyed by its
    /// position in its input (row, line, relative path), unique within one input, so a
    /// single input without `--sync` keeps memory flat however long it is.
    track_all: bool,
    pub rejects: Rejects,
    strict: bool,
    /// Where the first and the last record of the pending batch were read.
    span: Option<Span>,
    /// Time spent hashing, checking and sketching.
    busy: Duration,
    /// When the last sketching job taken ended.
    last_done: Option<Instant>,
}

/// A chunk's parallel step, running or done. Dropping it waits for the step, so no
/// step outlives the load.
pub struct Ticket(Option<Receiver<Outcome>>);

/// A chunk's steps, the job's time and when it ended.
type Outcome = (Result<Vec<Step>, CliError>, Duration, Instant);

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(rx) = self.0.take() {
            let _ = rx.recv();
        }
    }
}

impl<'c> Loader<'c> {
    /// A loader into `coll` sketching on `pool`, committing through `committer` in batches of
    /// `batch_size`; `track_all`: every key is checked for duplicates, not only ids. On a
    /// pool of more than one thread, chunks are worked on in the background.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        coll: &'c Collection,
        pool: &'c rayon::ThreadPool,
        committer: Committer<'c>,
        batch_size: usize,
        upsert: bool,
        track_all: bool,
        rejects: Rejects,
        strict: bool,
    ) -> Result<Self, CliError> {
        // Handed over in parts, a batch is built a read chunk at a time.
        let capacity = if committer.takes_parts() { batch_size.min(READ_CHUNK) } else { batch_size };
        Ok(Loader {
            coll,
            pool,
            committer,
            snap: Arc::new(coll.snapshot()?),
            overlap: pool.current_num_threads() > 1,
            batch: Batch::with_capacity(capacity),
            capacity,
            batch_size,
            spare: Vec::new(),
            upsert,
            counts: Counts::default(),
            seen: HashSet::new(),
            track_all,
            rejects,
            strict,
            span: None,
            busy: Duration::ZERO,
            last_done: None,
        })
    }

    /// Reports a bad record; in strict mode it ends the load (exit 2) with nothing more
    /// submitted.
    pub fn reject(&mut self, bad: &Bad<'_>) -> Result<(), CliError> {
        self.rejects.add(bad)?;
        if self.strict {
            self.rejects.finish()?;
            return Err(CliError::Input(format!(
                "{} (--strict: stopped at the first bad record; the batches committed before it are kept)",
                bad.line()
            )));
        }
        Ok(())
    }

    /// Starts the parallel step of a chunk of `items` (parsing JSONL lines, hashes, stored
    /// state, sketches) on the pool: in the background when the pool has more than one
    /// thread, else now.
    pub fn start(&self, items: Items) -> Ticket {
        let (tx, rx) = sync_channel(1);
        let (coll, snap, upsert) = (self.coll.clone(), Arc::clone(&self.snap), self.upsert);
        let job = move || {
            let start = Instant::now();
            let out = catch_unwind(AssertUnwindSafe(|| work(&coll, &snap, upsert, items))).unwrap_or_else(|_| {
                Err(CliError::Runtime("a sketching worker stopped on an internal error (a bug)".into()))
            });
            // Before the result is sent: once the command has every result, no job holds
            // the database open any more (it closes cleanly when the command ends).
            drop((coll, snap));
            let _ = tx.send((out, start.elapsed(), Instant::now()));
        };
        if self.overlap {
            self.pool.spawn(job)
        } else {
            self.pool.install(job)
        }
        Ticket(Some(rx))
    }

    /// The items of a chunk started by [`Loader::start`], once worked on.
    pub fn wait(&mut self, mut ticket: Ticket) -> Result<Vec<Step>, CliError> {
        let outcome = ticket.0.take().and_then(|rx| rx.recv().ok());
        let (worked, busy, end) = outcome.ok_or_else(|| CliError::Runtime("a sketching worker stopped".into()))?;
        self.busy += busy;
        self.last_done = self.last_done.max(Some(end));
        worked
    }

    /// Adds a worked record to the pending batch, in input order: a key read before is a
    /// duplicate (rejected), a record stored unchanged is counted and skipped (its row id
    /// stays), the rest are inserted, or replace the stored record of their key.
    pub fn add(&mut self, w: Worked) -> Result<(), CliError> {
        let start = Instant::now();
        let out = self.add_one(w);
        self.busy += start.elapsed();
        out
    }

    fn add_one(&mut self, w: Worked) -> Result<(), CliError> {
        if (self.track_all || w.record.id.is_some()) && !self.seen.insert(w.key_hash) {
            let message = format!("duplicate key `{}` in this input", w.record.key);
            let (origin, key) = (w.record.origin.to_string(), Some(w.record.key.as_str()));
            return self.reject(&Bad { origin, key, kind: RejectKind::DuplicateKey, message });
        }
        if w.unchanged() && !self.upsert {
            self.counts.unchanged += 1;
            return Ok(());
        }
        self.push(w)
    }

    fn push(&mut self, w: Worked) -> Result<(), CliError> {
        let Worked { record, hash, stored, sketch, shingles, .. } = w;
        let origin = record.origin.to_string();
        let sketch = match sketch {
            Some(Ok(s)) => s,
            Some(Err((kind, message))) => {
                return self.reject(&Bad { origin, key: Some(&record.key), kind, message });
            }
            None => return Err(CliError::Runtime(format!("{origin}: the record was not sketched (a bug)"))),
        };
        let stored = stored.is_some();
        match (stored, &shingles) {
            (true, Some(set)) => self.batch.upsert_with_hash_and_shingles(&record.key, sketch, hash, set),
            (false, Some(set)) => self.batch.insert_with_hash_and_shingles(&record.key, sketch, hash, set),
            (true, None) => self.batch.upsert_with_hash(&record.key, sketch, hash),
            (false, None) => self.batch.insert_with_hash(&record.key, sketch, hash),
        };
        match &mut self.span {
            Some((_, last)) => *last = origin,
            None => self.span = Some((origin.clone(), origin)),
        }
        Ok(())
    }

    /// Submits the pending batch for commit.
    pub fn flush(&mut self) -> Result<(), CliError> {
        if let Some(span) = self.span.take() {
            let batch = self.take_batch();
            let done = self.committer.submit(batch, span)?;
            self.absorb(done);
        }
        Ok(())
    }

    /// Hands the records added to the pending batch since the last call over to the commit
    /// stage, when it takes batches in parts: they are written into the batch's open
    /// transaction while the next records are sketched, and committed with the batch.
    pub fn pass_on(&mut self) -> Result<(), CliError> {
        if self.committer.takes_parts() && !self.batch.is_empty() {
            let Some(span) = self.span.clone() else { return Ok(()) };
            let part = self.take_batch();
            let done = self.committer.part(part, span)?;
            self.absorb(done);
        }
        Ok(())
    }

    /// The pending batch, replaced by an empty one.
    fn take_batch(&mut self) -> Batch {
        let next = self.spare.pop().unwrap_or_else(|| Batch::with_capacity(self.capacity));
        std::mem::replace(&mut self.batch, next)
    }

    fn absorb(&mut self, done: Vec<Committed>) {
        for c in done {
            self.counts.added += c.summary.inserted;
            self.counts.updated += c.summary.replaced;
            self.counts.deleted += c.summary.deleted;
            self.spare.extend(c.batch);
            self.snap = Arc::new(c.snapshot);
        }
    }

    /// Deletes the stored keys no input held, in batches.
    pub fn delete_unseen(&mut self) -> Result<(), CliError> {
        // Keys only: each page is checked and its keys read, no record decoded.
        let snap = self.coll.snapshot()?;
        let mut unseen = Vec::new();
        snap.for_each_page(|page| {
            for i in (0..page.len()).filter(|&i| !page.is_deleted(i)) {
                let key = page.key(i);
                if !self.seen.contains(&xxh3_128(key)) {
                    unseen.push(key.to_vec());
                }
            }
            true
        })?;
        for key in unseen {
            self.batch.delete(&key);
            let key = format!("key `{}`", String::from_utf8_lossy(&key));
            match &mut self.span {
                Some((_, last)) => *last = key,
                None => self.span = Some((key.clone(), key)),
            }
            if self.batch.len() >= self.batch_size {
                self.flush()?;
            }
        }
        self.flush()
    }

    /// Submits the pending batch, waits for every batch submitted; returns the counts, the
    /// rejects, and the stages' [`Times`].
    pub fn finish(mut self) -> Result<(Counts, Rejects, Times), CliError> {
        self.flush()?;
        let (done, commit) = self.committer.finish()?;
        let Loader { mut counts, rejects, busy, last_done, .. } = self;
        for c in done {
            counts.added += c.summary.inserted;
            counts.updated += c.summary.replaced;
            counts.deleted += c.summary.deleted;
        }
        let tail = last_done.map(|t| t.elapsed()).unwrap_or_default();
        Ok((counts, rejects, Times { sketch: busy, commit, tail }))
    }
}
