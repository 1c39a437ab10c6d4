//! What `dedup` reads: a stored collection, or a file, folder or standard input (`-`)
//! ingested first into a collection named after it (synced, so the collection holds exactly
//! the input's records), read with every option `ingest` takes.
//!
//! The input is read a second time for `--keep` and `--write-deduplicated`. Standard input
//! cannot be read twice, so then it is first copied, streaming, to a spool file (beside the
//! `--write-deduplicated` output, else in `$TMPDIR`), removed when dedup ends; both passes
//! read the spool under the name `-`, so keys without an id field are `-:LINE` either way.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use sketchdb::io::{Content, ReadOptions, RecordSource, SourceRecord, read};
use sketchdb::{Collection, Tokenizer};
use xxhash_rust::xxh3::xxh3_128;

use super::ingest::{IngestArgs, ingest_report};
use crate::error::CliError;
use crate::load::pipeline::content_hash;
use crate::load::{ReadArgs, check_recipe, open_spool, read_error};
use crate::output::note;
use crate::session::Session;

/// The collection standard input is ingested into.
pub const STDIN_COLLECTION: &str = "(stdin)";

/// What ingest did with a record read again: stored it; rejected it for having no token
/// under the collection's recipe (dedup keeps it: it cannot be anyone's duplicate); or
/// rejected it otherwise (a duplicate key, content the collection cannot sketch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    Yes,
    NoTokens,
    Rejected,
}

/// The input a dedup ingested, read again for `--keep` and the outputs.
pub struct Input {
    /// The path given (`-` for standard input).
    pub path: PathBuf,
    /// The copy of standard input, when it was kept (deleted on drop).
    spool: Option<tempfile::TempPath>,
    pub options: ReadOptions,
}

impl Input {
    /// The file holding the input's bytes: the path, or the spool of standard input.
    pub fn file(&self) -> &Path {
        self.spool.as_deref().unwrap_or(&self.path)
    }

    /// A fresh pass over the input, keeping each record's raw form.
    fn read(&self) -> Result<Box<dyn RecordSource>, CliError> {
        let mut options = self.options.clone();
        options.keep_raw = true;
        // Records without tokens are kept; duplicate keys are told apart by content hash.
        options.keep_empty = true;
        options.reject_duplicates = false;
        match &self.spool {
            Some(spool) => open_spool(spool, &options).map(|o| o.into_records(&options)),
            None if self.path.as_os_str() == "-" => {
                Err(CliError::Runtime("standard input was not kept for a second pass".into()))
            }
            None => read::open(&self.path, &options).map_err(read_error),
        }
    }

    /// Each record of the input with what ingest did with it (records the reader rejects as
    /// malformed are passed over: they were not stored, and ingest reported them).
    pub fn each(
        &self,
        coll: &Collection,
        mut f: impl FnMut(SourceRecord, Stored) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let snap = coll.snapshot()?;
        let tokenizer = coll.config().tokenizer;
        // xxh3-128 of the keys met as stored: a later record with the same key and content
        // was rejected by ingest as a duplicate.
        let mut seen: HashSet<u128> = HashSet::new();
        for item in self.read()? {
            match item {
                Ok(Ok(rec)) => {
                    let stored = match snap.stored_hash(&rec.key)? {
                        Some((_, Some(h))) if h == content_hash(&rec.content) => {
                            if seen.insert(xxh3_128(rec.key.as_bytes())) { Stored::Yes } else { Stored::Rejected }
                        }
                        _ if nothing_to_compare(&tokenizer, &rec.content) => Stored::NoTokens,
                        _ => Stored::Rejected,
                    };
                    f(rec, stored)?;
                }
                Ok(Err(_reject)) => {}
                Err(e) => return Err(read_error(e)),
            }
        }
        Ok(())
    }
}

/// Whether `content` has no token under `tokenizer` (the collection's recipe): an empty
/// text or token list, or a text the recipe finds no token in (ingest's test: a text with a
/// letter or digit is taken to have tokens).
fn nothing_to_compare(tokenizer: &Tokenizer, content: &Content) -> bool {
    match content {
        Content::Text(t) => !t.chars().any(char::is_alphanumeric) && tokenizer.tokens(t).is_empty(),
        Content::Tokens(t) => t.is_empty(),
        Content::Terms(t) => t.iter().all(String::is_empty),
        _ => false,
    }
}

/// Copies standard input to a new spool file in `dir`, streaming.
fn spool_stdin(dir: &Path) -> Result<tempfile::TempPath, CliError> {
    let mut file =
        tempfile::Builder::new().prefix(".sketchdb-stdin-").tempfile_in(dir).map_err(|e| CliError::io(dir, e))?;
    let copied = std::io::copy(&mut std::io::stdin().lock(), file.as_file_mut());
    copied.map_err(|e| CliError::Io(format!("copying standard input to {}: {e}", file.path().display())))?;
    Ok(file.into_temp_path())
}

/// What dedup joins: the collection, the input it was ingested from (if any) and the
/// number of the input's records without tokens (not stored: ingest rejected them as
/// `empty_text` or `no_tokens`).
pub struct Prepared {
    pub name: String,
    pub input: Option<Input>,
    pub no_tokens: u64,
    /// What ingesting the input took (`seconds`, `documents`, `bytes`, `threads` and the busy
    /// `stage_seconds` of reading, sketching and committing); null for a stored collection.
    pub ingest: serde_json::Value,
}

/// The collection to join, ingesting (and syncing) a file, folder or standard input first.
/// `second_pass`: the input will be read again (standard input is spooled in `spool_dir`).
pub fn prepare(
    session: &mut Session,
    target: &str,
    recipe: Option<&str>,
    read: &ReadArgs,
    second_pass: bool,
    spool_dir: &Path,
) -> Result<Prepared, CliError> {
    let path = Path::new(target);
    let stdin = target == "-";
    if stdin {
        crate::stdin::claim("dedup")?;
    }
    if !stdin && !path.exists() {
        if recipe.is_some() {
            check_recipe(&session.db()?.collection(target)?, recipe)?;
        }
        return Ok(Prepared { name: target.to_string(), input: None, no_tokens: 0, ingest: serde_json::Value::Null });
    }
    let name = if stdin { STDIN_COLLECTION.to_string() } else { folder_collection(path)? };
    let what = if stdin {
        "standard input".to_string()
    } else {
        format!("{} {}", if path.is_dir() { "folder" } else { "file" }, path.display())
    };
    note(&format!("sketchdb: {what} -> collection `{name}` in {}", session.path().display()));
    let spool = if stdin && second_pass { Some(spool_stdin(spool_dir)?) } else { None };
    let mut args = IngestArgs::folder(name.clone(), path.to_path_buf());
    args.recipe = recipe.map(str::to_owned);
    args.read = read.clone();
    args.stdin_from = spool.as_ref().map(|s| s.to_path_buf());
    let report = ingest_report(session, &args)?;
    let count = |reason: &str| report["rejects"][reason].as_u64().unwrap_or(0);
    let no_tokens = count("empty_text") + count("no_tokens");
    let input = Input { path: path.to_path_buf(), spool, options: args.read.options() };
    let ingest = serde_json::json!({"seconds": report["seconds"], "documents": report["documents"],
        "bytes": report["bytes"], "threads": report["threads"], "stage_seconds": report["stage_seconds"]});
    Ok(Prepared { name, input: Some(input), no_tokens, ingest })
}

/// The collection a folder (or file) is ingested into: its canonical path, so two folders
/// with the same name never share one (a path over the 255-byte name limit keeps its last
/// 200 bytes after a hash of the whole).
pub fn folder_collection(path: &Path) -> Result<String, CliError> {
    let canon = path.canonicalize().map_err(|e| CliError::io(path, e))?;
    let full = canon.to_string_lossy().into_owned();
    if full.len() <= sketchdb::recipes::MAX_COLLECTION_NAME_LEN {
        return Ok(full);
    }
    let mut cut = full.len() - 200;
    while !full.is_char_boundary(cut) {
        cut += 1;
    }
    Ok(format!("{:016x}...{}", xxhash_rust::xxh3::xxh3_64(full.as_bytes()), &full[cut..]))
}
