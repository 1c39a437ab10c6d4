//! `ingest` and `upsert`: corpora read through `sketchdb::io` (JSONL plain/gz/zst, CSV/TSV,
//! Parquet, folders of text files, raw u64 fingerprints, `-` for stdin), sketched on all
//! cores and committed in input order in batched transactions.
//!
//! A bad record never aborts the run unless `--strict`: it is skipped, counted and reported
//! (the first few on stderr with `file:line` and the reason, all with `--rejects FILE`). A key
//! already stored is skipped when its record is unchanged, so an interrupted ingest can
//! simply be run again; `upsert` replaces every stored key's record.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use sketchdb::io::{Content, ReadError, RecordSource, Reject, RejectReason, SourceRecord};
use sketchdb::recipes::{fingerprint_config, text_config};
use sketchdb::{Batch, Collection, SketchKind, Snapshot, Tokenizer};
use xxhash_rust::xxh3::xxh3_128;

use crate::error::CliError;
use crate::load::pipeline::{Prepared, hashes, pool, prepare};
use crate::load::progress::{Progress, total_bytes};
use crate::load::rejects::{Bad, RejectKind, Rejects};
use crate::load::{ReadArgs, check_recipe, read_error, with_recipe};
use crate::output::summary;
use crate::session::Session;

#[derive(Args, Debug, Clone)]
pub struct IngestArgs {
    /// The collection (created with defaults when missing: MinHash k=128 for text and
    /// tokens, 64-bit SimHash for fingerprints).
    pub collection: String,
    /// Input files or folders (`-` reads standard input).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Records per transaction (1 to 1,000,000).
    #[arg(long, default_value_t = DEFAULT_BATCH, value_parser = batch_size())]
    pub batch: usize,
    /// Also delete the stored keys that the inputs no longer hold (nothing is deleted when a
    /// record was rejected, since its key may be one of them).
    #[arg(long)]
    pub sync: bool,
    /// The named text recipe of the collection when it is created (`sketchdb recipes` lists
    /// them); an existing collection made with another recipe is refused.
    #[arg(long)]
    pub recipe: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
    /// Read the input `-` from this file instead of standard input, still named `-` in keys
    /// and origins (`dedup -` spools standard input to read it twice).
    #[arg(skip)]
    pub stdin_from: Option<PathBuf>,
}

impl IngestArgs {
    /// A folder ingested into `collection` with the defaults, synced (`dedup DIR`).
    pub fn folder(collection: String, path: PathBuf) -> Self {
        IngestArgs {
            collection,
            inputs: vec![path],
            batch: DEFAULT_BATCH,
            sync: true,
            recipe: None,
            read: ReadArgs {
                format: crate::load::InputFormat::Text,
                text_field: None,
                id_field: "id".into(),
                tokens_field: None,
                rejects: None,
                strict: false,
                lossy_utf8: false,
                follow_symlinks: false,
                threads: None,
            },
            stdin_from: None,
        }
    }
}

/// Records per transaction when `--batch` is not given (ingest, import, dedup of a directory).
pub const DEFAULT_BATCH: usize = 10_000;

/// `--batch` of ingest and import: 1..=1,000,000 records per transaction (a batch's
/// capacity is allocated up front).
pub fn batch_size() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..=1_000_000)
}

/// What a load did.
#[derive(Default)]
struct Counts {
    added: u64,
    updated: u64,
    unchanged: u64,
    deleted: u64,
}

struct Loader<'a> {
    coll: &'a Collection,
    snap: Snapshot,
    batch: Batch,
    /// Replace the records of every key already stored (`upsert`), not only changed ones.
    upsert: bool,
    counts: Counts,
    /// xxh3-128 of every key read (duplicates across inputs; `--sync`).
    seen: HashSet<u128>,
    /// Whether `seen` holds every key, or only ids: a record without an id is keyed by its
    /// position in its input (row, line, relative path), unique within one input, so a
    /// single input without `--sync` keeps memory flat however long it is.
    track_all: bool,
    rejects: Rejects,
    strict: bool,
    /// Where the first and the last record of the pending batch were read.
    span: Option<(String, String)>,
}

impl Loader<'_> {
    /// Reports a bad record; in strict mode it ends the load (exit 2) with nothing more
    /// committed.
    fn reject(&mut self, bad: &Bad<'_>) -> Result<(), CliError> {
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
    /// rest in parallel, then writes them in input order and commits.
    fn process(&mut self, pool: &rayon::ThreadPool, records: Vec<SourceRecord>) -> Result<(), CliError> {
        let hashes = hashes(pool, &records);
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
        for p in prepare(pool, self.coll, todo) {
            self.push(p)?;
        }
        self.flush()
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

    /// Commits the pending batch; an error names the records it held.
    fn flush(&mut self) -> Result<(), CliError> {
        if let Some((first, last)) = self.span.take() {
            let s = self
                .coll
                .apply(&self.batch)
                .map_err(|e| CliError::from(e).context(format!("the batch of records {first} to {last}")))?;
            self.counts.added += s.inserted;
            self.counts.updated += s.replaced;
            self.counts.deleted += s.deleted;
            self.batch.clear();
            self.snap = self.coll.snapshot()?;
        }
        Ok(())
    }

    /// Deletes the stored keys no input held, in batches of `batch`.
    fn delete_unseen(&mut self, batch: usize) -> Result<(), CliError> {
        let snap = self.coll.snapshot()?;
        for rec in snap.into_scan() {
            let rec = rec?;
            if !self.seen.contains(&xxh3_128(&rec.key)) {
                self.batch.delete(&rec.key);
                let key = String::from_utf8_lossy(&rec.key).into_owned();
                match &mut self.span {
                    Some((_, last)) => *last = format!("key `{key}`"),
                    None => self.span = Some((format!("key `{key}`"), format!("key `{key}`"))),
                }
                if self.batch.len() >= batch {
                    self.flush()?;
                }
            }
        }
        self.flush()
    }
}

/// Items read from a source at a time (between progress updates).
const READ_CHUNK: usize = 1024;

/// Items read in one go: records and rejects in input order, and how the read ended.
struct Chunk {
    records: Vec<SourceRecord>,
    rejects: Vec<Reject>,
    /// An input that cannot be read on (not a strict-mode reject, which is in `rejects`).
    failure: Option<ReadError>,
    /// The source has no more items.
    ended: bool,
}

/// Whether `text` has no token under `tokenizer` (the collection's recipe). A text with a
/// letter or digit is tokenized only when it is sketched.
fn tokenless(tokenizer: &Tokenizer, rec: &SourceRecord) -> bool {
    matches!(&rec.content, Content::Text(t) if !t.chars().any(char::is_alphanumeric) && tokenizer.tokens(t).is_empty())
}

/// Reads up to `max` items; stops early at the end, a failure or a strict-mode reject. A text
/// without tokens under `tokenizer` is a reject, in input order with the reader's.
fn read_chunk(source: &mut dyn RecordSource, max: usize, tokenizer: &Tokenizer, strict: bool) -> Chunk {
    let mut chunk = Chunk { records: Vec::new(), rejects: Vec::new(), failure: None, ended: false };
    for _ in 0..max {
        match source.next() {
            None => {
                chunk.ended = true;
                break;
            }
            Some(Ok(Ok(rec))) if tokenless(tokenizer, &rec) => {
                chunk.rejects.push(Reject::new(rec.origin, RejectReason::NoTokens));
                if strict {
                    break;
                }
            }
            Some(Ok(Ok(rec))) => chunk.records.push(rec),
            Some(Ok(Err(reject))) | Some(Err(ReadError::Rejected(reject))) => chunk.rejects.push(reject),
            Some(Err(e)) => {
                chunk.failure = Some(e);
                chunk.ended = true;
                break;
            }
        }
    }
    chunk
}

pub fn ingest(session: &mut Session, args: &IngestArgs) -> Result<(), CliError> {
    load(session, args, false).map(drop)
}

/// `ingest`, returning the fields of its `--json` summary (`dedup FILE` reports from them).
pub fn ingest_report(session: &mut Session, args: &IngestArgs) -> Result<serde_json::Value, CliError> {
    load(session, args, false)
}

/// `upsert`: as `ingest`, but a key already stored gets the new record.
pub fn upsert(session: &mut Session, args: &IngestArgs) -> Result<(), CliError> {
    load(session, args, true).map(drop)
}

fn load(session: &mut Session, args: &IngestArgs, upsert: bool) -> Result<serde_json::Value, CliError> {
    let opts = args.read.options();
    let default = if args.read.is_u64(&args.inputs[0]) { fingerprint_config()? } else { text_config()? };
    let default = with_recipe(default, args.recipe.as_deref())?;
    session.create_missing = true;
    let coll = session.collection_or_create(&args.collection, default)?;
    check_recipe(&coll, args.recipe.as_deref())?;
    for input in args.inputs.iter().filter(|i| args.read.is_u64(i)) {
        if coll.params().kind() != SketchKind::SimHash || coll.params().bits() != 64 {
            return Err(CliError::Usage(format!(
                "{}: u64 fingerprints need a 64-bit simhash collection, `{}` is {}",
                input.display(),
                coll.name(),
                coll.params()
            )));
        }
    }
    let tokenizer = coll.config().tokenizer;
    let pool = pool(args.read.threads)?;
    let start = Instant::now();
    let mut progress = Progress::new(total_bytes(&args.inputs));
    let mut loader = Loader {
        coll: &coll,
        snap: coll.snapshot()?,
        batch: Batch::with_capacity(args.batch),
        upsert,
        counts: Counts::default(),
        seen: HashSet::new(),
        track_all: args.sync || args.inputs.len() > 1,
        rejects: Rejects::new(args.read.rejects.as_deref(), !args.read.strict)?,
        strict: args.read.strict,
        span: None,
    };
    let mut docs = 0u64;
    for input in &args.inputs {
        let mut source = match &args.stdin_from {
            Some(spool) if input.as_os_str() == "-" => crate::load::open_spool(spool, &opts),
            _ => sketchdb::io::read::open(input, &opts).map_err(read_error),
        }?;
        let mut pending: Vec<SourceRecord> = Vec::with_capacity(args.batch.min(1 << 16));
        loop {
            // Parsing runs on the pool too (a JSONL reader parses lines ahead in parallel).
            let chunk = pool.install(|| read_chunk(&mut *source, READ_CHUNK, &tokenizer, args.read.strict));
            docs += chunk.records.len() as u64;
            for rec in chunk.records {
                pending.push(rec);
                if pending.len() >= args.batch {
                    loader.process(&pool, std::mem::take(&mut pending))?;
                }
            }
            // After the records read before them: a strict-mode reject ends its chunk, and
            // the whole batches before it are committed, the pending one is not.
            for reject in &chunk.rejects {
                loader.reject(&Bad::read(reject))?;
            }
            progress.update(docs, source.summary().bytes_read);
            if let Some(e) = chunk.failure {
                // What was read whole before the failure is kept.
                loader.process(&pool, pending)?;
                loader.rejects.finish()?;
                progress.finish();
                return Err(read_error(e));
            }
            if chunk.ended {
                break;
            }
        }
        loader.process(&pool, pending)?;
        loader.rejects.skipped(&source.summary().skipped);
        progress.input_done(source.summary().bytes_read);
    }
    let mut sync_note = String::new();
    if args.sync {
        if loader.rejects.blocking_sync() == 0 {
            loader.delete_unseen(args.batch)?;
        } else {
            sync_note = format!("; --sync deleted nothing: {} records were rejected", loader.rejects.blocking_sync());
        }
    }
    loader.rejects.finish()?;
    progress.finish();
    let secs = start.elapsed().as_secs_f64();
    let c = &loader.counts;
    let bytes = progress.bytes();
    let (by_reason, skipped) = loader.rejects.json();
    let fields = json!({"collection": coll.name(), "records": c.added + c.updated, "inserted": c.added,
                        "replaced": c.updated, "added": c.added, "updated": c.updated, "unchanged": c.unchanged,
                        "deleted": c.deleted, "rejected": loader.rejects.count(), "rejects": by_reason,
                        "skipped": loader.rejects.skipped_count(), "skipped_entries": skipped,
                        "documents": docs, "bytes": bytes, "seconds": secs});
    let verb = if upsert { "upserted" } else { "ingested" };
    let mut human = format!(
        "{verb} {} records into `{}`: {} added, {} updated, {} unchanged, {} deleted, {} rejected",
        c.added + c.updated,
        coll.name(),
        c.added,
        c.updated,
        c.unchanged,
        c.deleted,
        loader.rejects.count()
    );
    let breakdown = loader.rejects.breakdown();
    if !breakdown.is_empty() {
        human.push_str(&format!(" ({breakdown})"));
    }
    if let Some(w) = loader.rejects.where_listed() {
        human.push_str(&format!("; {w}"));
    }
    human.push_str(&sync_note);
    human.push_str(&format!(
        "; {docs} documents, {:.1} MB in {secs:.2} s ({:.0} docs/s, {:.1} MB/s)",
        bytes as f64 / 1e6,
        docs as f64 / secs.max(1e-9),
        bytes as f64 / 1e6 / secs.max(1e-9)
    ));
    summary(if upsert { "upsert" } else { "ingest" }, &human, fields.clone());
    Ok(fields)
}
