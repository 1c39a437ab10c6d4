//! The reader layer's errors: [`Reject`] for one bad record (the stream goes on) and
//! [`ReadError`] for input that cannot be read on.

use std::path::PathBuf;

use thiserror::Error;

use super::record::Origin;

/// Why a record was rejected. Every reason is about the one record; the records around it
/// are still read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RejectReason {
    /// The line is not one JSON value, or its JSON is malformed.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// The line is valid JSON but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// The record has no value (or `null`) at the selected field.
    #[error("missing field `{0}`")]
    MissingField(String),
    /// The selected text or id field holds something other than a string (or, for ids, an
    /// integer).
    #[error("field `{field}` is not a string (found {found})")]
    NotAString {
        /// The field's dotted path or column name.
        field: String,
        /// What it holds instead (`number`, `array`, ...).
        found: &'static str,
    },
    /// The record's bytes are not UTF-8 where text is required (and lossy decoding is off).
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// Offset of the first invalid byte inside the line, cell or file.
        offset: usize,
    },
    /// The text is empty.
    #[error("empty text")]
    EmptyText,
    /// The token list is empty, or (reported by a loader that tokenizes) the text has no
    /// token under the collection's tokenizer: it cannot be similar to anything.
    #[error("no tokens: nothing to sketch under the collection's tokenizer")]
    NoTokens,
    /// The tokens field is not an array of unsigned 64-bit integers or of strings.
    #[error("field `{0}` is not an array of u64 or of strings")]
    BadTokens(String),
    /// The fingerprint field is not 1 to 32 hex digits (optionally `0x`) or an unsigned
    /// integer.
    #[error("field `{field}`: {detail}")]
    BadFingerprint {
        /// The field's dotted path.
        field: String,
        /// What is wrong with it.
        detail: String,
    },
    /// With [`Select::AnyOne`](super::Select::AnyOne), the record holds more than one of the
    /// text, tokens and fingerprint fields.
    #[error("a record needs exactly one of `{0}`")]
    AmbiguousContent(String),
    /// The key (the id, or the origin when there is no id) is empty.
    #[error("empty key")]
    EmptyKey,
    /// The key is longer than the database accepts.
    #[error("key of {len} bytes is over the limit of {max}")]
    KeyTooLong {
        /// The key's length in bytes.
        len: usize,
        /// The limit ([`ReadOptions::max_key_len`](super::ReadOptions::max_key_len)).
        max: usize,
    },
    /// An earlier record of the same input had the same key.
    #[error("duplicate key `{0}` in this input")]
    DuplicateKey(String),
    /// The line, CSV record or file is larger than
    /// [`ReadOptions::max_record_bytes`](super::ReadOptions::max_record_bytes).
    #[error("record larger than {max} bytes")]
    TooLarge {
        /// The limit.
        max: u64,
    },
    /// A CSV/TSV record that the CSV parser refuses (a wrong number of fields, ...).
    #[error("malformed CSV record: {0}")]
    Csv(String),
    /// A file of a folder that could not be opened or read.
    #[error("unreadable: {0}")]
    Unreadable(String),
}

/// One record that was skipped: where it is and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{origin}: {reason}")]
#[non_exhaustive]
pub struct Reject {
    /// The record's `file:line`, `file:row` or file.
    pub origin: Origin,
    /// Why it was skipped.
    pub reason: RejectReason,
}

impl Reject {
    /// A reject of the record at `origin`.
    pub fn new(origin: Origin, reason: RejectReason) -> Self {
        Reject { origin, reason }
    }
}

/// Input that cannot be read on. Each variant names the file (and the position where one
/// is known).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The input could not be opened or inspected.
    #[error("{path}: {source}")]
    Open {
        /// The path as given (`-` for standard input).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Reading or decompressing failed part-way.
    #[error("{at}: {source}")]
    Io {
        /// Where reading stopped.
        at: Origin,
        /// The cause (a decompression failure reads as `InvalidData`).
        #[source]
        source: std::io::Error,
    },
    /// Neither the extension nor the first bytes say which format the input is in.
    #[error(
        "{path}: unknown input format: neither its name nor its first bytes tell (expected JSONL, CSV/TSV, Parquet, \
         u64 or a folder); name it (the CLI's --input-format, ReadOptions::format)"
    )]
    UnknownFormat {
        /// The input.
        path: PathBuf,
    },
    /// The selected text, id or tokens column does not exist in a CSV header or a Parquet
    /// schema (every row would be rejected).
    #[error("{path}: no column `{column}` (columns: {available})")]
    MissingColumn {
        /// The input.
        path: PathBuf,
        /// The column asked for.
        column: String,
        /// The columns the input has, comma-separated.
        available: String,
    },
    /// A column of an unsupported type (a text column that is neither string nor binary, ...).
    #[error("{path}: column `{column}` has type {found}, expected {expected}")]
    ColumnType {
        /// The input.
        path: PathBuf,
        /// The column.
        column: String,
        /// Its type.
        found: String,
        /// What the reader accepts there.
        expected: &'static str,
    },
    /// The CSV header row cannot be read.
    #[error("{path}: bad CSV header: {detail}")]
    Header {
        /// The input.
        path: PathBuf,
        /// The CSV parser's message.
        detail: String,
    },
    /// The Parquet file's metadata or data cannot be decoded.
    #[error("{at}: Parquet: {detail}")]
    Parquet {
        /// The file, and the row where reading stopped when known.
        at: Origin,
        /// The Parquet reader's message.
        detail: String,
    },
    /// A raw u64 fingerprint file whose length is not a multiple of 8 bytes.
    #[error("{path}: {bytes} bytes is not a whole number of little-endian u64 fingerprints")]
    Truncated {
        /// The input.
        path: PathBuf,
        /// Its length in bytes (as far as read, for a stream).
        bytes: u64,
    },
    /// The options do not fit the input (Parquet support not compiled in, a folder given as
    /// standard input, ...).
    #[error("{path}: {detail}")]
    Unsupported {
        /// The input.
        path: PathBuf,
        /// What is not supported.
        detail: String,
    },
    /// In strict mode, the first bad record.
    #[error("{0}")]
    Rejected(Reject),
}
