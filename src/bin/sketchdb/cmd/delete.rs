//! `delete`: remove records by key, from the command line or a file of keys (one per line,
//! `-` for stdin), in batched transactions.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;
use sketchdb::Batch;

use super::ingest::{DEFAULT_BATCH, batch_size};
use crate::error::CliError;
use crate::output::summary;
use crate::session::Session;

#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("which").required(true).multiple(true).args(["keys", "keys_from"])))]
pub struct DeleteArgs {
    /// The collection.
    pub collection: String,
    /// Keys to delete.
    pub keys: Vec<String>,
    /// A file of keys to delete, one per line (`-` for stdin); blank lines are skipped.
    #[arg(long = "keys-from", value_name = "FILE")]
    pub keys_from: Option<PathBuf>,
    /// Keys per transaction (1 to 1,000,000).
    #[arg(long, default_value_t = DEFAULT_BATCH, value_parser = batch_size())]
    pub batch: usize,
}

/// The keys of a file, one per line (a trailing `\r` dropped); `-` reads stdin.
fn keys_of(path: &Path) -> Result<Vec<String>, CliError> {
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        crate::stdin::claim("--keys-from")?;
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        Box::new(BufReader::new(std::fs::File::open(path).map_err(|e| CliError::io(path, e))?))
    };
    let mut keys = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| CliError::Input(format!("{}:{}: {e}", path.display(), i + 1)))?;
        let key = line.strip_suffix('\r').unwrap_or(&line);
        if !key.trim().is_empty() {
            keys.push(key.to_string());
        }
    }
    Ok(keys)
}

pub fn delete(session: &mut Session, args: &DeleteArgs) -> Result<(), CliError> {
    let coll = session.collection(&args.collection)?;
    let mut keys = args.keys.clone();
    if let Some(path) = &args.keys_from {
        keys.extend(keys_of(path)?);
    }
    let start = std::time::Instant::now();
    let (mut deleted, mut missing) = (0u64, 0u64);
    let mut batch = Batch::with_capacity(args.batch.min(keys.len()));
    for chunk in keys.chunks(args.batch) {
        batch.clear();
        for k in chunk {
            batch.delete(k);
        }
        let s = coll.apply(&batch)?;
        deleted += s.deleted;
        missing += s.missing;
    }
    let secs = start.elapsed().as_secs_f64();
    summary(
        "delete",
        &format!("deleted {deleted} records from `{}` ({missing} keys not present) in {secs:.2}s", args.collection),
        json!({"collection": args.collection, "records": deleted, "missing": missing, "seconds": secs}),
    );
    Ok(())
}
