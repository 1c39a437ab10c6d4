//! What every `import` shares: its arguments, and the writing pass that puts records into a
//! collection in batches, each key once, skipping or (with `--upsert`) replacing the keys
//! already stored.

use std::path::PathBuf;

use clap::Args;
use sketchdb::{Batch, CollectionConfig, Sketch};

use super::signature_spec::SpecArgs;
use crate::cmd::ingest::{DEFAULT_BATCH, batch_size};
use crate::error::CliError;

/// `import`: a collection written by `export`, or the signature Parquet of `sketchdb.spark`.
#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// The export file; or a signature Parquet (a file, a folder of part files, or the run
    /// folder of `python -m sketchdb.spark dedup`).
    pub input: PathBuf,
    /// Import into this collection instead of the one named in the file.
    #[arg(long)]
    pub into: Option<String>,
    /// Replace the records of keys already stored (by default they are kept and skipped).
    #[arg(long)]
    pub upsert: bool,
    /// Records per transaction (1 to 1,000,000).
    #[arg(long, default_value_t = DEFAULT_BATCH, value_parser = batch_size())]
    pub batch: usize,
    #[command(flatten)]
    pub spec: SpecArgs,
}

/// The writing pass of an import: batches of records whose keys are new (or, upserting,
/// any key), each key once.
pub struct Importer<'a> {
    coll: &'a sketchdb::Collection,
    snap: sketchdb::Snapshot,
    batch: Batch,
    batch_size: usize,
    /// Keys of the pending batch.
    pending: std::collections::HashSet<Vec<u8>>,
    upsert: bool,
    pub inserted: u64,
    pub replaced: u64,
    pub skipped: u64,
}

impl<'a> Importer<'a> {
    pub fn new(coll: &'a sketchdb::Collection, batch_size: usize, upsert: bool) -> Result<Self, CliError> {
        Ok(Importer {
            coll,
            snap: coll.snapshot()?,
            batch: Batch::with_capacity(batch_size),
            batch_size,
            pending: Default::default(),
            upsert,
            inserted: 0,
            replaced: 0,
            skipped: 0,
        })
    }

    pub fn push(&mut self, key: Vec<u8>, sketch: Sketch) -> Result<(), CliError> {
        if self.pending.contains(&key) || (!self.upsert && self.snap.get(&key)?.is_some()) {
            self.skipped += 1;
            return Ok(());
        }
        if self.upsert {
            self.batch.upsert(&key, sketch);
        } else {
            self.batch.insert(&key, sketch);
        }
        self.pending.insert(key);
        if self.batch.len() >= self.batch_size { self.flush() } else { Ok(()) }
    }

    pub fn flush(&mut self) -> Result<(), CliError> {
        let s = self.coll.apply(&self.batch)?;
        self.inserted += s.inserted;
        self.replaced += s.replaced;
        self.batch.clear();
        self.pending.clear();
        self.snap = self.coll.snapshot()?;
        Ok(())
    }
}

/// Whether an existing collection stores the same sketches and cuts text the same way.
pub fn check_same(have: &CollectionConfig, want: &CollectionConfig) -> Result<(), String> {
    have.params.check_compatible(&want.params).map_err(|e| e.to_string())?;
    if have.tokenizer != want.tokenizer {
        return Err(format!(
            "it cuts text with recipe `{}`, the signatures were made with `{}`",
            have.recipe().name(),
            want.recipe().name()
        ));
    }
    Ok(())
}
