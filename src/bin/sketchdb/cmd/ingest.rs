//! `ingest`: text directories, JSONL records and raw u64 fingerprint files, in batched
//! transactions, with a progress bar on stderr. Keys already stored are skipped, so an
//! interrupted ingest can simply be run again. An error about a record names where it was
//! read (`file:line`, or the file).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use sketchdb::recipes::{KeyError, check_key, fingerprint_config, text_config};
use sketchdb::{Batch, Collection, Sketch, SketchKind, Snapshot};

use crate::error::CliError;
use crate::input::{InputRecord, JsonlReader, Origin, fingerprint_records, text_files, text_record};
use crate::output::summary;
use crate::session::Session;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Decide from the path: a directory is text, `.jsonl`/`.json` JSONL, `.u64` fingerprints.
    Auto,
    /// A directory of text files (keys are paths relative to it).
    Text,
    /// JSON lines: {"key","text"} or {"key","tokens":[u64..]} or {"key","simhash":"hex"}.
    Jsonl,
    /// Raw little-endian u64 fingerprints, no header; keys are row indexes "0", "1", ...
    U64,
}

#[derive(Args, Debug, Clone)]
pub struct IngestArgs {
    /// The collection (created with defaults when missing: MinHash k=128 for text and
    /// tokens, 64-bit SimHash for fingerprints).
    pub collection: String,
    /// Input files or directories (`-` reads JSONL from stdin).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Input format.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// Records per transaction (1 to 1,000,000).
    #[arg(long, default_value_t = DEFAULT_BATCH, value_parser = batch_size())]
    pub batch: usize,
}

/// Records per transaction when `--batch` is not given (ingest, import, dedup of a directory).
pub const DEFAULT_BATCH: usize = 10_000;

/// `--batch` of ingest and import: 1..=1,000,000 records per transaction (a batch's
/// capacity is allocated up front).
pub fn batch_size() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..=1_000_000)
}

fn detect(path: &Path, format: Format) -> Format {
    if format != Format::Auto {
        return format;
    }
    if path.is_dir() {
        return Format::Text;
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("u64") => Format::U64,
        _ => Format::Jsonl,
    }
}

/// A progress bar on stderr; `what` = "bytes" counts in human units (KiB, MiB, ...).
fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let counts = if what == "bytes" {
        "{bytes}/{total_bytes} {bytes_per_sec}".to_string()
    } else {
        format!("{{human_pos}}/{{human_len}} {what} {{per_sec}}")
    };
    let style = ProgressStyle::with_template(&format!("{{spinner}} [{{bar:30}}] {counts} ETA {{eta}}"))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar
}

/// Turns a record into a sketch for `coll`.
fn sketch_of(coll: &Collection, rec: &InputRecord) -> Result<Sketch, CliError> {
    rec.payload.content().sketch(coll).map_err(|e| CliError::Input(format!("record `{}`: {e}", rec.key)))
}

struct Loader<'a> {
    coll: &'a Collection,
    snap: Snapshot,
    batch: Batch,
    batch_size: usize,
    /// Replace the records of keys already stored instead of skipping them.
    upsert: bool,
    added: u64,
    replaced: u64,
    skipped: u64,
    seen: std::collections::HashSet<String>,
    /// Where the first and the last record of the pending batch were read.
    span: Option<(Origin, Origin)>,
}

impl Loader<'_> {
    /// Adds a record to the pending batch; an error about it names its origin.
    fn push(&mut self, rec: InputRecord) -> Result<(), CliError> {
        let sketch = match self.sketch_if_new(&rec) {
            Ok(Some(sketch)) => sketch,
            Ok(None) => {
                self.skipped += 1;
                return Ok(());
            }
            Err(e) => return Err(e.context(rec.origin.to_string())),
        };
        if self.upsert {
            self.batch.upsert(&rec.key, sketch);
        } else {
            self.batch.insert(&rec.key, sketch);
        }
        match &mut self.span {
            Some((_, last)) => *last = rec.origin,
            None => self.span = Some((rec.origin.clone(), rec.origin)),
        }
        if self.batch.len() >= self.batch_size {
            self.flush()?;
        }
        Ok(())
    }

    /// The record's sketch, or `None` when its key is repeated in this input or (unless
    /// upserting) already stored, so an interrupted ingest can simply be run again.
    fn sketch_if_new(&mut self, rec: &InputRecord) -> Result<Option<Sketch>, CliError> {
        check_key(rec.key.as_bytes()).map_err(|e| {
            CliError::Input(match e {
                KeyError::Empty => "the record has an empty key".into(),
                too_long => format!("record {too_long}"),
            })
        })?;
        if (!self.upsert && self.snap.get(&rec.key)?.is_some()) || !self.seen.insert(rec.key.clone()) {
            return Ok(None);
        }
        sketch_of(self.coll, rec).map(Some)
    }

    /// Commits the pending batch; an error names the records it held.
    fn flush(&mut self) -> Result<(), CliError> {
        if let Some((first, last)) = self.span.take() {
            let s = self
                .coll
                .apply(&self.batch)
                .map_err(|e| CliError::from(e).context(format!("the batch of records {first} to {last}")))?;
            self.added += s.inserted;
            self.replaced += s.replaced;
            self.batch.clear();
            self.seen.clear();
            self.snap = self.coll.snapshot()?;
        }
        Ok(())
    }
}

pub fn ingest(session: &mut Session, args: &IngestArgs) -> Result<(), CliError> {
    load(session, args, false)
}

/// `upsert`: as `ingest`, but a key already stored gets the new record.
pub fn upsert(session: &mut Session, args: &IngestArgs) -> Result<(), CliError> {
    load(session, args, true)
}

fn load(session: &mut Session, args: &IngestArgs, upsert: bool) -> Result<(), CliError> {
    let first = detect(&args.inputs[0], args.format);
    let default = if first == Format::U64 { fingerprint_config()? } else { text_config()? };
    session.create_missing = true;
    let coll = session.collection_or_create(&args.collection, default)?;
    let start = Instant::now();
    let mut loader = Loader {
        coll: &coll,
        snap: coll.snapshot()?,
        batch: Batch::with_capacity(args.batch),
        batch_size: args.batch,
        upsert,
        added: 0,
        replaced: 0,
        skipped: 0,
        seen: Default::default(),
        span: None,
    };
    for input in &args.inputs {
        match detect(input, args.format) {
            Format::Text => {
                let files = text_files(input)?;
                let bar = progress(files.len() as u64, "files");
                for (key, path) in files {
                    loader.push(text_record(key, &path)?)?;
                    bar.inc(1);
                }
                bar.finish_and_clear();
            }
            Format::Jsonl | Format::Auto => {
                let total = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
                let bar = progress(total, "bytes");
                let mut reader = JsonlReader::open(input)?;
                while let Some(rec) = reader.next() {
                    loader.push(rec?)?;
                    bar.set_position(reader.bytes_read());
                }
                bar.finish_and_clear();
            }
            Format::U64 => {
                if coll.params().kind() != SketchKind::SimHash || coll.params().bits() != 64 {
                    return Err(CliError::Usage(format!(
                        "{}: u64 fingerprints need a 64-bit simhash collection, `{}` is {}",
                        input.display(),
                        coll.name(),
                        coll.params()
                    )));
                }
                let records = fingerprint_records(input)?;
                let bar = progress(records.len() as u64, "fingerprints");
                for (i, rec) in records.enumerate() {
                    loader.push(rec)?;
                    if i % 4096 == 0 {
                        bar.set_position(i as u64);
                    }
                }
                bar.finish_and_clear();
            }
        }
    }
    loader.flush()?;
    let secs = start.elapsed().as_secs_f64();
    let fields = json!({"collection": coll.name(), "records": loader.added + loader.replaced, "inserted": loader.added,
                        "replaced": loader.replaced, "skipped": loader.skipped, "seconds": secs});
    let rate = (loader.added + loader.replaced) as f64 / secs.max(1e-9);
    if upsert {
        let human = format!(
            "upserted {} records into `{}` ({} new, {} replaced) in {secs:.2}s ({rate:.0} records/s)",
            loader.added + loader.replaced,
            coll.name(),
            loader.added,
            loader.replaced
        );
        summary("upsert", &human, fields);
    } else {
        let human = format!(
            "ingested {} records into `{}` ({} already present, skipped) in {secs:.2}s ({rate:.0} records/s)",
            loader.added,
            coll.name(),
            loader.skipped
        );
        summary("ingest", &human, fields);
    }
    Ok(())
}
