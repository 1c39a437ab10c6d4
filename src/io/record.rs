//! What a reader yields: records with their origin, and the summary of what it skipped.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where in its input a record sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Position {
    /// The whole file (a file of a folder).
    File,
    /// A 1-based line number (JSONL; the first line of a CSV/TSV record).
    Line(u64),
    /// A 0-based row index (Parquet, raw u64 files).
    Row(u64),
}

/// A record's origin: its input's path and its position there. Displays as `path:line`,
/// `path:row` or `path`; standard input displays as `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    path: Arc<Path>,
    at: Position,
}

impl Origin {
    /// The record at `at` of the input `path`.
    pub fn new(path: impl Into<Arc<Path>>, at: Position) -> Self {
        Origin { path: path.into(), at }
    }

    /// The input's path (`-` for standard input).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The position inside the input.
    pub fn position(&self) -> Position {
        self.at
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Position::File => write!(f, "{}", self.path.display()),
            Position::Line(n) | Position::Row(n) => write!(f, "{}:{n}", self.path.display()),
        }
    }
}

/// A record's content, as the selected fields gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// Text, to be tokenized by the collection's tokenizer.
    Text(String),
    /// Pre-hashed tokens (an array of u64).
    Tokens(Vec<u64>),
    /// Pre-tokenized terms (an array of strings), to be hashed by the caller.
    Terms(Vec<String>),
    /// A SimHash fingerprint given directly (hex string, integer, or a raw u64 file's row).
    Fingerprint(u128),
}

/// The input a record was read from, kept (with [`ReadOptions::keep_raw`]) so that a writer
/// can copy every input field unchanged.
///
/// [`ReadOptions::keep_raw`]: super::ReadOptions::keep_raw
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Raw {
    /// Not kept.
    #[default]
    None,
    /// The JSONL line, without its line ending, exactly as read (after lossy UTF-8
    /// replacement when that is on).
    JsonLine(String),
    /// A CSV/TSV record: the header's names and the record's fields.
    Fields {
        /// The header row.
        names: Arc<[String]>,
        /// The record's fields, in header order.
        values: Vec<String>,
    },
    /// A Parquet row: its 0-based index in the file (read the full row from the file).
    ParquetRow(u64),
    /// A file of a folder.
    File(PathBuf),
}

/// One record read from an input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceRecord {
    /// Where it was read.
    pub origin: Origin,
    /// The id field's value (an integer id rendered in decimal), if the record has one.
    pub id: Option<String>,
    /// The key to store it under: the id, else the relative path (folders), the row index
    /// (raw u64 files) or the origin `file:line` / `file:row`.
    pub key: String,
    /// The text, tokens or fingerprint.
    pub content: Content,
    /// The raw input, when kept.
    pub raw: Raw,
}

/// Why a folder entry was skipped without being a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its name starts with `.` (a hidden directory is not entered).
    Hidden,
    /// A symbolic link, not followed ([`ReadOptions::follow_symlinks`] is off).
    ///
    /// [`ReadOptions::follow_symlinks`]: super::ReadOptions::follow_symlinks
    Symlink,
    /// A directory already visited on this walk (a symlink loop or a second link to it).
    Loop,
    /// A NUL byte in its first 8 KiB, or invalid UTF-8 while lossy decoding is off.
    Binary,
    /// Not a regular file or directory (a socket, a device, a dangling link).
    Special,
}

/// A folder entry skipped without being a record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// The entry's path.
    pub path: PathBuf,
    /// Why.
    pub why: SkipReason,
}

/// What a source has read so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Records yielded.
    pub records: u64,
    /// Records rejected.
    pub rejected: u64,
    /// Input bytes consumed: the compressed position for compressed input, file bytes for
    /// folders (for progress).
    pub bytes_read: u64,
    /// Folder entries skipped (in walk order).
    pub skipped: Vec<Skipped>,
}

impl Summary {
    /// How many skipped entries had reason `why`.
    pub fn skipped_for(&self, why: SkipReason) -> usize {
        self.skipped.iter().filter(|s| s.why == why).count()
    }
}
