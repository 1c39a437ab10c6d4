//! The sketching stage of a load and what it hands to the commit stage: each batch of
//! records read is hashed, checked against the stored content hashes (an unchanged record is
//! skipped and keeps its row id), sketched on the pool in input order, and submitted for
//! commit. Rejects are reported here, on the command's thread, in input order.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use sketchdb::io::SourceRecord;
use sketchdb::{Batch, Collection, Snapshot};
use xxhash_rust::xxh3::xxh3_128;

use super::commit::{Committed, Committer, Span};
use super::pipeline::{Prepared, hashes, prepare};
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

/// Builds batches from records read and submits them to the commit stage.
pub struct Loader<'c> {
    coll: &'c Collection,
    pool: &'c rayon::ThreadPool,
    committer: Committer<'c>,
    /// A snapshot for the stored-hash checks, taken after the last batch committed. A key
    /// read twice is a duplicate (`seen`; a key without an id is unique by its position),
    /// so a batch still committing never holds a key the checks ask about.
    snap: Snapshot,
    batch: Batch,
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
}

impl<'c> Loader<'c> {
    /// A loader into `coll` sketching on `pool`, committing through `committer` in batches of
    /// `batch_size`; `track_all`: every key is checked for duplicates, not only ids.
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
        Ok(Loader {
            coll,
            pool,
            committer,
            snap: coll.snapshot()?,
            batch: Batch::with_capacity(batch_size),
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

    /// Hashes `records`, skips the unchanged ones (no sketch is made for them), sketches the
    /// rest in parallel, then adds them to the pending batch in input order.
    pub fn add(&mut self, records: Vec<SourceRecord>) -> Result<(), CliError> {
        let start = Instant::now();
        let hashes = hashes(self.pool, &records);
        let mut todo = Vec::with_capacity(records.len());
        for (record, hash) in records.into_iter().zip(hashes) {
            if (self.track_all || record.id.is_some()) && !self.seen.insert(xxh3_128(record.key.as_bytes())) {
                let message = format!("duplicate key `{}` in this input", record.key);
                let (origin, key) = (record.origin.to_string(), Some(record.key.as_str()));
                self.reject(&Bad { origin, key, kind: RejectKind::DuplicateKey, message })?;
                continue;
            }
            match self.snap.stored_hash(&record.key)? {
                // The same content as stored: nothing to write, the row id stays.
                Some((_, Some(h))) if h == hash && !self.upsert => self.counts.unchanged += 1,
                // Changed, or stored without a hash (before hashes were kept): replaced.
                stored => todo.push((record, hash, stored.is_some())),
            }
        }
        for p in prepare(self.pool, self.coll, todo) {
            self.push(p)?;
        }
        self.busy += start.elapsed();
        Ok(())
    }

    fn push(&mut self, p: Prepared) -> Result<(), CliError> {
        let Prepared { record, hash, stored, sketch, shingles } = p;
        let origin = record.origin.to_string();
        let sketch = match sketch {
            Ok(s) => s,
            Err((kind, message)) => return self.reject(&Bad { origin, key: Some(&record.key), kind, message }),
        };
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
            let next = self.spare.pop().unwrap_or_else(|| Batch::with_capacity(self.batch_size));
            let batch = std::mem::replace(&mut self.batch, next);
            let done = self.committer.submit(batch, span)?;
            self.absorb(done);
        }
        Ok(())
    }

    fn absorb(&mut self, done: Vec<Committed>) {
        for c in done {
            self.counts.added += c.summary.inserted;
            self.counts.updated += c.summary.replaced;
            self.counts.deleted += c.summary.deleted;
            self.spare.push(c.batch);
            self.snap = c.snapshot;
        }
    }

    /// Deletes the stored keys no input held, in batches.
    pub fn delete_unseen(&mut self) -> Result<(), CliError> {
        let snap = self.coll.snapshot()?;
        for rec in snap.into_scan() {
            let rec = rec?;
            if !self.seen.contains(&xxh3_128(&rec.key)) {
                self.batch.delete(&rec.key);
                let key = format!("key `{}`", String::from_utf8_lossy(&rec.key));
                match &mut self.span {
                    Some((_, last)) => *last = key,
                    None => self.span = Some((key.clone(), key)),
                }
                if self.batch.len() >= self.batch_size {
                    self.flush()?;
                }
            }
        }
        self.flush()
    }

    /// Waits for every batch submitted; returns the time spent sketching and committing.
    pub fn finish(self) -> Result<(Counts, Rejects, Duration, Duration), CliError> {
        let (done, commit) = self.committer.finish()?;
        let Loader { mut counts, rejects, busy, .. } = self;
        for c in done {
            counts.added += c.summary.inserted;
            counts.updated += c.summary.replaced;
            counts.deleted += c.summary.deleted;
        }
        Ok((counts, rejects, busy, commit))
    }
}
