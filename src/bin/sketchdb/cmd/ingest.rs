//! `ingest` and `upsert`: corpora read through `sketchdb::io` (JSONL plain/gz/zst, CSV/TSV,
//! Parquet, folders of text files, raw u64 fingerprints, `-` for stdin), sketched on all
//! cores and committed in input order in batched transactions.
//!
//! A bad record never aborts the run unless `--strict`: it is skipped, counted and reported
//! (the first few on stderr with `file:line` and the reason, all with `--rejects FILE`). A key
//! already stored is skipped when its record is unchanged, so an interrupted ingest can
//! simply be run again; `upsert` replaces every stored key's record.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use sketchdb::SketchKind;
use sketchdb::io::{DuplicateIds, ReadOptions, Reject, RejectReason, SourceRecord};
use sketchdb::recipes::{fingerprint_config, text_config};

use crate::error::CliError;
use crate::load::commit::Committer;
use crate::load::loader::{Loader, Ticket};
use crate::load::pipeline::{Step, pool};
use crate::load::progress::{Progress, total_bytes};
use crate::load::reader::{Items, Read, Reader, Reading};
use crate::load::rejects::{Bad, Rejects};
use crate::load::{ReadArgs, check_recipe, read_error, with_recipe};
use crate::output::summary;
use crate::session::Session;
use std::collections::VecDeque;

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

pub fn ingest(session: &mut Session, args: &IngestArgs) -> Result<(), CliError> {
    load(session, args, false).map(drop)
}

/// `ingest`, returning the fields of its `--json` summary (`dedup FILE` reports from them).
pub fn ingest_report(session: &mut Session, args: &IngestArgs) -> Result<serde_json::Value, CliError> {
    load(session, args, false)
}

/// Chunks whose parallel step may run ahead of the one being checked and batched.
const AHEAD: usize = 2;

/// What a chunk read holds beside its items: how its input ended, the progress after it,
/// and whether its JSONL lines are still to be checked for ids repeated in the input.
struct Rest {
    failure: Option<sketchdb::io::ReadError>,
    bytes: u64,
    raw: bool,
}

/// Chunks whose parallel step was started, oldest first, and the batch being filled: a batch
/// is `batch` records read (the unchanged and rejected ones count, not those the reader
/// rejected), `in_batch` of them pending.
struct Started {
    chunks: VecDeque<(Ticket, Rest)>,
    in_batch: usize,
    batch: usize,
    /// Records read whole so far.
    docs: u64,
    /// The ids of the current input's JSONL lines (other formats' readers check their own).
    ids: DuplicateIds,
}

impl Started {
    fn new(batch: usize, opts: &ReadOptions) -> Started {
        Started { chunks: VecDeque::new(), in_batch: 0, batch, docs: 0, ids: DuplicateIds::new(opts) }
    }

    /// Waits for the oldest started chunk and takes its items in input order: records are
    /// batched, rejects reported (in strict mode the first one ends the load: the whole
    /// batches before it are committed, the pending one is not), then how its input ended.
    fn take_oldest(&mut self, loader: &mut Loader<'_>, progress: &mut Progress) -> Result<(), CliError> {
        let Some((ticket, rest)) = self.chunks.pop_front() else { return Ok(()) };
        for step in loader.wait(ticket)? {
            let record = match step {
                Step::Rejected(reject) => {
                    loader.reject(&Bad::read(&reject))?;
                    continue;
                }
                Step::Tokenless(record) => record,
                Step::Record(w) => {
                    if let Some(reject) = self.repeated(rest.raw, &w.record) {
                        loader.reject(&Bad::read(&reject))?;
                        continue;
                    }
                    self.docs += 1;
                    self.in_batch += 1;
                    loader.add(w)?;
                    if self.in_batch == self.batch {
                        loader.flush()?;
                        self.in_batch = 0;
                    }
                    continue;
                }
            };
            let reject = self.repeated(rest.raw, &record).unwrap_or(Reject::new(record.origin, RejectReason::NoTokens));
            loader.reject(&Bad::read(&reject))?;
        }
        loader.pass_on()?;
        progress.update(self.docs, rest.bytes);
        if let Some(e) = rest.failure {
            // What was read whole before the failure is kept.
            loader.flush()?;
            loader.rejects.finish()?;
            progress.finish();
            return Err(read_error(e));
        }
        Ok(())
    }

    /// The reject of a JSONL record whose id came before in its input.
    fn repeated(&mut self, raw: bool, record: &SourceRecord) -> Option<Reject> {
        if !raw {
            return None;
        }
        self.ids.check(record).err().map(|reason| Reject::new(record.origin.clone(), reason))
    }

    /// [`Started::take_oldest`] until every started chunk is batched, in input order.
    fn take_all(&mut self, loader: &mut Loader<'_>, progress: &mut Progress) -> Result<(), CliError> {
        while !self.chunks.is_empty() {
            self.take_oldest(loader, progress)?;
        }
        Ok(())
    }
}

/// `upsert`: as `ingest`, but a key already stored gets the new record.
pub fn upsert(session: &mut Session, args: &IngestArgs) -> Result<(), CliError> {
    load(session, args, true).map(drop)
}

fn load(session: &mut Session, args: &IngestArgs, upsert: bool) -> Result<serde_json::Value, CliError> {
    // Before the collection is created: a refused `-` leaves nothing behind.
    if args.stdin_from.is_none() && args.inputs.iter().any(|p| p.as_os_str() == "-") {
        crate::stdin::claim("the input")?;
    }
    let mut opts = args.read.options();
    let default = if args.read.is_u64(&args.inputs[0]) { fingerprint_config()? } else { text_config()? };
    let default = with_recipe(default, args.recipe.as_deref())?;
    let mut sync_note = String::new();
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
    let pool = pool(args.read.threads)?;
    let start = Instant::now();
    let mut progress = Progress::new(total_bytes(&args.inputs));
    let rejects = Rejects::new(args.read.rejects.as_deref(), !args.read.strict)?;
    // One thread: every stage in turn on this one. More: reading (and decompressing, on a
    // thread of its own: a gzip or zstd stream is serial) and committing run on threads of
    // their own beside the sketching pool, overlapped.
    let threaded = pool.current_num_threads() > 1;
    // A collection empty before this load holds only this load's keys after it: `--sync`
    // then has nothing to delete and skips its scan of every stored key.
    let fresh = args.sync && coll.snapshot()?.stats()?.live == 0;
    opts.decompress_thread = threaded;
    let mut started = Started::new(args.batch, &opts);
    let reader = Reader::new(args.inputs.clone(), args.stdin_from.clone(), opts);
    let (loader, reading) = std::thread::scope(|scope| -> Result<_, CliError> {
        let committer = if threaded { Committer::spawn(scope, &coll, args.batch)? } else { Committer::inline(&coll) };
        // Keys without an id are unique by position within one input: only ids need
        // tracking, unless several inputs or --sync need every key.
        let track_all = args.sync || args.inputs.len() > 1;
        let mut loader =
            Loader::new(&coll, &pool, committer, args.batch, upsert, track_all, rejects, args.read.strict)?;
        let mut reading = if threaded { Reading::spawn(reader)? } else { Reading::Inline(Box::new(reader)) };
        // With more than one thread, up to `AHEAD` chunks more than the oldest are worked on
        // while the oldest is checked and batched here; a batch is `--batch` records read,
        // whatever the chunks.
        for read in reading.by_ref() {
            let chunk = match read {
                Read::Chunk(chunk) => chunk,
                Read::InputDone { skipped, bytes } => {
                    started.take_all(&mut loader, &mut progress)?;
                    // A batch never spans two inputs.
                    loader.flush()?;
                    started.in_batch = 0;
                    started.ids.clear();
                    loader.rejects.skipped(&skipped);
                    progress.input_done(bytes);
                    continue;
                }
                Read::OpenFailed(e) => {
                    started.take_all(&mut loader, &mut progress)?;
                    loader.flush()?;
                    return Err(e);
                }
            };
            let raw = matches!(chunk.items, Items::Raw(..));
            let rest = Rest { failure: chunk.failure, bytes: chunk.bytes, raw };
            let stop = rest.failure.is_some();
            started.chunks.push_back((loader.start(chunk.items), rest));
            while started.chunks.len() > AHEAD || (stop && !started.chunks.is_empty()) {
                started.take_oldest(&mut loader, &mut progress)?;
            }
        }
        started.take_all(&mut loader, &mut progress)?;
        if args.sync {
            if loader.rejects.blocking_sync() == 0 {
                if !fresh {
                    loader.delete_unseen()?;
                }
            } else {
                sync_note =
                    format!("; --sync deleted nothing: {} records were rejected", loader.rejects.blocking_sync());
            }
        }
        Ok((loader.finish()?, reading))
    })?;
    let docs = started.docs;
    let (counts, mut rejects, times) = loader;
    let (sketch_time, commit_time) = (times.sketch, times.commit);
    let read_time = reading.finish();
    rejects.finish()?;
    progress.finish();
    let secs = start.elapsed().as_secs_f64();
    let c = &counts;
    let bytes = progress.bytes();
    let (by_reason, skipped) = rejects.json();
    let fields = json!({"collection": coll.name(), "records": c.added + c.updated, "inserted": c.added,
                        "replaced": c.updated, "added": c.added, "updated": c.updated, "unchanged": c.unchanged,
                        "deleted": c.deleted, "rejected": rejects.count(), "rejects": by_reason,
                        "skipped": rejects.skipped_count(), "skipped_entries": skipped,
                        "documents": docs, "bytes": bytes, "seconds": secs, "threads": pool.current_num_threads(),
                        "stage_seconds": {"read": read_time.as_secs_f64(), "sketch": sketch_time.as_secs_f64(),
                                          "commit": commit_time.as_secs_f64(), "tail": times.tail.as_secs_f64()}});
    let verb = if upsert { "upserted" } else { "ingested" };
    let mut human = format!(
        "{verb} {} records into `{}`: {} added, {} updated, {} unchanged, {} deleted, {} rejected",
        c.added + c.updated,
        coll.name(),
        c.added,
        c.updated,
        c.unchanged,
        c.deleted,
        rejects.count()
    );
    let breakdown = rejects.breakdown();
    if !breakdown.is_empty() {
        human.push_str(&format!(" ({breakdown})"));
    }
    if let Some(w) = rejects.where_listed() {
        human.push_str(&format!("; {w}"));
    }
    human.push_str(&sync_note);
    human.push_str(&format!(
        "; {docs} documents, {:.1} MB in {secs:.2} s ({:.0} docs/s, {:.1} MB/s)",
        bytes as f64 / 1e6,
        docs as f64 / secs.max(1e-9),
        bytes as f64 / 1e6 / secs.max(1e-9)
    ));
    let threads = pool.current_num_threads();
    human.push_str(&format!(
        "; {threads} thread{}, busy: read {:.2} s, sketch {:.2} s, commit {:.2} s",
        if threads == 1 { "" } else { "s" },
        read_time.as_secs_f64(),
        sketch_time.as_secs_f64(),
        commit_time.as_secs_f64()
    ));
    summary(if upsert { "upsert" } else { "ingest" }, &human, fields.clone());
    Ok(fields)
}
