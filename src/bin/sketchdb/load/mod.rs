//! Loading records from corpora through `sketchdb::io`: the reading options every loading
//! command shares ([`ReadArgs`]), the rejects report, the progress bar, and the pipeline of
//! stages: reading ([`reader`]), sketching ([`loader`], on the pool of [`pipeline`]) and
//! committing ([`commit`]), joined by bounded queues so that memory holds a few chunks and
//! batches. `ingest`, `upsert` and the ingest step of `dedup DIR` use it.

pub mod commit;
pub mod import;
pub mod loader;
pub mod pipeline;
pub mod progress;
pub mod reader;
pub mod rejects;
pub mod signature_spec;
pub mod signatures;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use sketchdb::io::{Format, ReadError, ReadOptions, Select};

use crate::error::CliError;

/// The input format, when detection (extension, then first bytes) is not wanted.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Decide from the path: a directory is a folder of text files; else the extension
    /// (`.jsonl`, `.csv`, `.tsv`, `.parquet`, `.u64`, each optionally `.gz`/`.zst`), else the
    /// first bytes.
    Auto,
    /// A folder of text files (keys are paths relative to it).
    Text,
    /// JSON lines (plain, gzip or zstd).
    Jsonl,
    /// CSV with a header row.
    Csv,
    /// TSV with a header row.
    Tsv,
    /// Apache Parquet.
    Parquet,
    /// Raw little-endian u64 fingerprints, no header; keys are row indexes "0", "1", ...
    U64,
}

impl InputFormat {
    fn format(self) -> Option<Format> {
        match self {
            InputFormat::Auto => None,
            InputFormat::Text => Some(Format::Folder),
            InputFormat::Jsonl => Some(Format::Jsonl),
            InputFormat::Csv => Some(Format::Csv),
            InputFormat::Tsv => Some(Format::Tsv),
            InputFormat::Parquet => Some(Format::Parquet),
            InputFormat::U64 => Some(Format::U64),
        }
    }
}

/// How inputs are read: format, fields, bad records, threads.
#[derive(Args, Debug, Clone)]
pub struct ReadArgs {
    /// Input format (`--input-format` is the same; `dedup` takes only `--input-format`, its
    /// `--format` being the clusters' output format).
    #[arg(long = "format", id = "input_format", visible_alias = "input-format", value_name = "FORMAT", value_enum,
          default_value_t = InputFormat::Auto)]
    pub format: InputFormat,
    /// The text field: a dotted path into JSON objects (`meta.body`), or a CSV/Parquet column
    /// [default: text; a JSONL record may instead hold `tokens` or `simhash`].
    #[arg(long, value_name = "FIELD", conflicts_with = "tokens_field")]
    pub text_field: Option<String>,
    /// The id field (dotted path or column); while it is `id`, a record without `id` may use
    /// `key`. Without an id the key is `file:line` (`file:row` for Parquet).
    #[arg(long, value_name = "FIELD", default_value = "id")]
    pub id_field: String,
    /// Read pre-tokenized records from this field: an array of u64 token hashes, or of
    /// strings (each string one set element, hashed with the collection's token seed).
    #[arg(long, value_name = "FIELD")]
    pub tokens_field: Option<String>,
    /// Write every rejected record to FILE, one JSON object a line (`origin`, `key`,
    /// `reason`, `message`).
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,
    /// Stop at the first bad record with exit code 2; only batches committed before it stay.
    #[arg(long)]
    pub strict: bool,
    /// Replace invalid UTF-8 with U+FFFD instead of rejecting the record (or skipping the
    /// file of a folder as binary).
    #[arg(long)]
    pub lossy_utf8: bool,
    /// Follow symbolic links inside folders (loops are detected either way).
    #[arg(long)]
    pub follow_symlinks: bool,
    /// Worker threads that parse, tokenize and sketch (default: every core). With two or
    /// more, reading, decompression (gzip, zstd) and committing also run on threads of their
    /// own, overlapped with them (a batch is written as its records are sketched, and
    /// committed once whole); with one, every stage runs in turn. The records stored (and
    /// their row ids) do not depend on it. `dedup` also joins on this many threads (of a
    /// stored collection too); its clusters do not depend on it either.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Option<usize>,
}

impl ReadArgs {
    /// The library's reading options for these arguments.
    pub fn options(&self) -> ReadOptions {
        let mut opts = ReadOptions::default();
        opts.format = self.format.format();
        opts.id_field.clone_from(&self.id_field);
        match (&self.text_field, &self.tokens_field) {
            (_, Some(tokens)) => {
                opts.select = Select::Tokens;
                opts.tokens_field.clone_from(tokens);
            }
            (Some(text), None) => {
                opts.select = Select::Text;
                opts.text_field.clone_from(text);
            }
            // The shell's records: exactly one of `text`, `tokens` or `simhash`.
            (None, None) => opts.select = Select::AnyOne,
        }
        opts.strict = self.strict;
        opts.lossy_utf8 = self.lossy_utf8;
        opts.follow_symlinks = self.follow_symlinks;
        opts
    }

    /// Whether `opts.format` is the raw fingerprint format, given or detected from `path`.
    pub fn is_u64(&self, path: &std::path::Path) -> bool {
        self.format == InputFormat::U64
            || (self.format == InputFormat::Auto
                && !path.is_dir()
                && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.to_ascii_lowercase().trim_end_matches(".gz").trim_end_matches(".zst").ends_with(".u64")
                }))
    }
}

/// The input in `spool`, a copy of standard input, named `-` as standard input's are.
pub fn open_spool(spool: &std::path::Path, opts: &ReadOptions) -> Result<sketchdb::io::Opened, CliError> {
    let file = std::fs::File::open(spool).map_err(|e| CliError::io(spool, e))?;
    sketchdb::io::read::lines_from_reader("-", file, opts).map_err(read_error)
}

/// A reader's error as the CLI's: a file that cannot be opened or read is an I/O error (exit
/// 1); anything about the input's content (a corrupt or truncated compressed stream, a
/// missing column, a bad record in strict mode) is bad input (exit 2).
pub fn read_error(e: ReadError) -> CliError {
    // A decoder reports a corrupt stream as `InvalidData` and a truncated one as
    // `UnexpectedEof` (a plain file read ends with 0 bytes instead).
    let content = |source: &std::io::Error| {
        matches!(source.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof)
    };
    match e {
        ReadError::Open { ref source, .. } | ReadError::Io { ref source, .. } if !content(source) => {
            CliError::Io(e.to_string())
        }
        other => CliError::Input(other.to_string()),
    }
}

/// `default` with the named recipe (`--recipe` of ingest and dedup): a compatibility recipe
/// also fixes the sketch parameters (its reference library's MinHash at its own k).
pub fn with_recipe(
    default: sketchdb::CollectionConfig,
    name: Option<&str>,
) -> Result<sketchdb::CollectionConfig, CliError> {
    let Some(name) = name else { return Ok(default) };
    let recipe = sketchdb::Recipe::preset(name)?;
    let mut config = default.with_recipe(recipe);
    if let Some(params) = recipe.compat_params(None)? {
        config.params = params;
    }
    Ok(config)
}

/// Refuses (exit 2) `--recipe NAME` for an existing collection made with another recipe: its
/// stored sketches are comparable only with sketches made the same way.
pub fn check_recipe(coll: &sketchdb::Collection, name: Option<&str>) -> Result<(), CliError> {
    match name {
        Some(name) if coll.config().recipe().name() != sketchdb::Recipe::preset(name)?.name() => {
            Err(CliError::Usage(format!(
                "--recipe {name}: collection `{}` exists with recipe {} (a collection keeps the recipe it was \
                 created with; create another collection for {name})",
                coll.name(),
                coll.config().recipe().name()
            )))
        }
        _ => Ok(()),
    }
}
