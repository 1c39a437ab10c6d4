//! Reader options: format, field selection, strictness and limits.

use crate::codec::page::MAX_KEY_LEN;

/// An input format. [`ReadOptions::format`] `None` detects it (see [`read::open`]).
///
/// [`read::open`]: super::read::open
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// One JSON object per line (plain, gzip or zstd).
    Jsonl,
    /// Comma-separated values with a header row.
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// Apache Parquet (needs the `parquet` feature).
    Parquet,
    /// A folder of text files, one record per file.
    Folder,
    /// Raw little-endian u64 SimHash fingerprints, keyed by row index.
    U64,
}

/// Which field holds a record's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Select {
    /// Text at [`ReadOptions::text_field`].
    #[default]
    Text,
    /// Pre-tokenized input at [`ReadOptions::tokens_field`]: an array of u64 (token hashes)
    /// or of strings (terms).
    Tokens,
    /// A SimHash fingerprint at [`ReadOptions::fingerprint_field`]: 1 to 32 hex digits
    /// (optionally `0x`) or an unsigned integer.
    Fingerprint,
    /// Exactly one of the three fields, per record (the shell's `{"key", "text" | "tokens" |
    /// "simhash"}` records).
    AnyOne,
}

/// How to read an input. Build with [`ReadOptions::default`] and set fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The format, or `None` to detect it.
    pub format: Option<Format>,
    /// Which field holds the content.
    pub select: Select,
    /// Dotted path into JSON objects (`meta.body`), or a CSV/Parquet column name (a dotted
    /// path names a nested Parquet field). Default `text`.
    pub text_field: String,
    /// The id: dotted path or column name. Default `id`; while it is `id`, a record without
    /// an `id` but with a `key` uses `key`. Without either, the key is the record's origin.
    pub id_field: String,
    /// The tokens field for [`Select::Tokens`]. Default `tokens`.
    pub tokens_field: String,
    /// The fingerprint field for [`Select::Fingerprint`]. Default `simhash`.
    pub fingerprint_field: String,
    /// Turn the first rejected record into [`ReadError::Rejected`](super::ReadError::Rejected)
    /// and stop.
    pub strict: bool,
    /// Replace invalid UTF-8 with U+FFFD instead of rejecting the record (or skipping the file
    /// as binary).
    pub lossy_utf8: bool,
    /// Follow symbolic links inside a folder (loops are detected either way).
    pub follow_symlinks: bool,
    /// Keep each record's [`Raw`](super::Raw) input.
    pub keep_raw: bool,
    /// Reject a key (id) repeated inside one input. Costs 16 bytes per record.
    pub reject_duplicates: bool,
    /// Pass records with an empty text or an empty token list through instead of rejecting
    /// them (`EmptyText`, `NoTokens`), for a reader that keeps records it cannot compare.
    pub keep_empty: bool,
    /// The longest JSONL line, CSV record or folder file read; longer ones are rejected
    /// without being buffered whole (JSONL, folders).
    pub max_record_bytes: u64,
    /// The longest key, in bytes. Default: the database's limit.
    pub max_key_len: usize,
    /// The most bytes read from a stream after decompression; more is a
    /// [`ReadError::Io`](super::ReadError::Io) (a guard against decompression bombs).
    /// Default: no limit.
    pub max_input_bytes: u64,
    /// Rows per Parquet batch (memory is bounded by one batch of the selected columns).
    pub parquet_batch_rows: usize,
    /// Decompress a gzip or zstd stream on a thread of its own, ahead of the parser (at
    /// most 16 MiB ahead). The records read are the same either way. Default: off.
    pub decompress_thread: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            select: Select::Text,
            text_field: "text".into(),
            id_field: "id".into(),
            tokens_field: "tokens".into(),
            fingerprint_field: "simhash".into(),
            strict: false,
            lossy_utf8: false,
            follow_symlinks: false,
            keep_raw: false,
            reject_duplicates: true,
            keep_empty: false,
            max_record_bytes: 16 << 20,
            max_key_len: MAX_KEY_LEN,
            max_input_bytes: u64::MAX,
            parquet_batch_rows: 8192,
            decompress_thread: false,
        }
    }
}

impl ReadOptions {
    /// The shell's historical JSONL records: `{"key", "text" | "tokens" | "simhash"}`.
    pub fn shell_records() -> Self {
        ReadOptions { select: Select::AnyOne, ..ReadOptions::default() }
    }

    /// Whether the id falls back to `key` when `id` is absent.
    pub(crate) fn key_fallback(&self) -> bool {
        self.id_field == "id"
    }
}
