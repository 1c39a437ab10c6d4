//! The shared parts of the writers: the output target (format and compression from the file
//! name), the byte sink, typed rows and the values `--keep FIELD` compares.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Rows per Parquet record batch (and the unit the Parquet writers flush).
pub const BATCH_ROWS: usize = 8192;

/// An output file's format, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    /// JSON lines.
    Jsonl,
    /// Comma-separated values with a header row.
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// Apache Parquet.
    Parquet,
    /// Plain text, one value per line.
    Lines,
}

/// The compression of an output file, from its last extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// None.
    Plain,
    /// gzip (`.gz`).
    Gzip,
    /// zstd (`.zst`, `.zstd`).
    Zstd,
}

/// An output file: its path, format and compression.
#[derive(Clone, Debug)]
pub struct Target {
    pub path: PathBuf,
    pub format: OutFormat,
    pub compression: Compression,
}

impl Target {
    /// The target `path` names: format and compression from its extensions; `option` names
    /// the command-line option in errors.
    pub fn of(path: &Path, option: &str) -> Result<Target, CliError> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_ascii_lowercase();
        let (rest, compression) = match name.rsplit_once('.') {
            Some((rest, "gz")) => (rest.to_string(), Compression::Gzip),
            Some((rest, "zst" | "zstd")) => (rest.to_string(), Compression::Zstd),
            _ => (name.clone(), Compression::Plain),
        };
        let format = match rest.rsplit_once('.').map(|(_, ext)| ext) {
            Some("jsonl" | "ndjson" | "json") => OutFormat::Jsonl,
            Some("csv") => OutFormat::Csv,
            Some("tsv" | "tab") => OutFormat::Tsv,
            Some("parquet" | "pq") => OutFormat::Parquet,
            Some("txt") => OutFormat::Lines,
            _ => {
                return Err(CliError::Usage(format!(
                    "{option} {}: unknown output format (name it .jsonl, .csv, .tsv, .parquet or .txt, \
                     optionally with .gz or .zst)",
                    path.display()
                )));
            }
        };
        if format == OutFormat::Parquet && compression != Compression::Plain {
            return Err(CliError::Usage(format!(
                "{option} {}: Parquet compresses its own pages; drop the .gz/.zst suffix",
                path.display()
            )));
        }
        Ok(Target { path: path.to_path_buf(), format, compression })
    }
}

/// A byte stream to a file, compressed as its target says; [`ByteSink::finish`] ends the
/// compressed stream and flushes (errors are reported, not lost on drop).
pub enum ByteSink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

impl ByteSink {
    /// Creates (or truncates) the target's file.
    pub fn create(t: &Target) -> Result<ByteSink, CliError> {
        let file = BufWriter::new(File::create(&t.path).map_err(|e| CliError::io(&t.path, e))?);
        Ok(match t.compression {
            Compression::Plain => ByteSink::Plain(file),
            Compression::Gzip => ByteSink::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::default())),
            Compression::Zstd => ByteSink::Zstd(zstd::Encoder::new(file, 3).map_err(|e| CliError::io(&t.path, e))?),
        })
    }

    /// Ends the stream and flushes the file.
    pub fn finish(self) -> std::io::Result<()> {
        let mut file = match self {
            ByteSink::Plain(f) => f,
            ByteSink::Gzip(g) => g.finish()?,
            ByteSink::Zstd(z) => z.finish()?,
        };
        file.flush()
    }
}

impl Write for ByteSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            ByteSink::Plain(w) => w.write(buf),
            ByteSink::Gzip(w) => w.write(buf),
            ByteSink::Zstd(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            ByteSink::Plain(w) => w.flush(),
            ByteSink::Gzip(w) => w.flush(),
            ByteSink::Zstd(w) => w.flush(),
        }
    }
}

/// The type of a column of typed rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Bool,
    UInt,
    Float,
    Str,
}

/// A column of typed rows: its name and type (every column may hold nulls).
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
}

impl Column {
    pub fn new(name: impl Into<String>, ty: ColType) -> Column {
        Column { name: name.into(), ty }
    }
}

/// One value of a row, of its column's type (or null).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    UInt(u64),
    Float(f64),
    Str(String),
}

impl Cell {
    /// The value as CSV or text shows it (null: empty).
    pub fn text(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Bool(b) => b.to_string(),
            Cell::UInt(n) => n.to_string(),
            Cell::Float(x) => x.to_string(),
            Cell::Str(s) => s.clone(),
        }
    }

    /// The value as JSON.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Cell::Null => serde_json::Value::Null,
            Cell::Bool(b) => (*b).into(),
            Cell::UInt(n) => (*n).into(),
            Cell::Float(x) => serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, Into::into),
            Cell::Str(s) => s.clone().into(),
        }
    }
}

/// A streaming writer of typed rows.
pub trait RowSink {
    /// Writes one row: one cell per column, in column order.
    fn row(&mut self, cells: Vec<Cell>) -> Result<(), CliError>;
    /// Writes what is pending and closes the file.
    fn finish(self: Box<Self>) -> Result<(), CliError>;
}

/// A field's value as `--keep FIELD` compares it.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// Absent or null.
    Missing,
    /// Text, compared as text.
    Text(String),
    /// A number, compared as a number (above any text).
    Num(f64),
}

impl FieldValue {
    /// The value of a JSON field.
    pub fn of_json(v: Option<&serde_json::Value>) -> FieldValue {
        match v {
            Some(serde_json::Value::Number(n)) => n.as_f64().map_or(FieldValue::Missing, FieldValue::Num),
            Some(serde_json::Value::String(s)) => FieldValue::Text(s.clone()),
            Some(serde_json::Value::Bool(b)) => FieldValue::Num(f64::from(u8::from(*b))),
            _ => FieldValue::Missing,
        }
    }

    /// The value of a CSV field: a number when it parses as one, else text; empty is missing.
    pub fn of_text(s: &str) -> FieldValue {
        if s.is_empty() {
            FieldValue::Missing
        } else {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map_or_else(|| FieldValue::Text(s.to_string()), FieldValue::Num)
        }
    }

    /// Total order: missing < text (by bytes) < numbers (by value).
    pub fn cmp(&self, other: &FieldValue) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (FieldValue::Missing, FieldValue::Missing) => Ordering::Equal,
            (FieldValue::Missing, _) => Ordering::Less,
            (_, FieldValue::Missing) => Ordering::Greater,
            (FieldValue::Text(a), FieldValue::Text(b)) => a.cmp(b),
            (FieldValue::Text(_), FieldValue::Num(_)) => Ordering::Less,
            (FieldValue::Num(_), FieldValue::Text(_)) => Ordering::Greater,
            (FieldValue::Num(a), FieldValue::Num(b)) => a.total_cmp(b),
        }
    }
}

/// What dedup decided for a record, as `--cluster-column` writes it (`NAME_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The member kept for its cluster.
    Kept,
    /// A member dropped: a near-duplicate of its cluster's keeper.
    Duplicate,
    /// In no cluster: no near-duplicate found.
    Unique,
    /// No token under the collection's recipe (empty text, or none of the recipe's tokens):
    /// nothing to compare, so kept.
    NoTokens,
}

impl Status {
    /// The snake_case name written.
    pub fn name(self) -> &'static str {
        match self {
            Status::Kept => "kept",
            Status::Duplicate => "duplicate",
            Status::Unique => "unique",
            Status::NoTokens => "no_tokens",
        }
    }
}

/// The names of the columns `--cluster-column NAME` adds: `NAME` (the cluster id, null for a
/// record in no cluster), `NAME_keeper` (the key of the record kept for its cluster; its own
/// key outside clusters), `NAME_kept` (whether this record is kept) and `NAME_status`
/// ([`Status`]).
#[derive(Clone, Debug)]
pub struct AddedNames {
    pub cluster: String,
    pub keeper: String,
    pub kept: String,
    pub status: String,
}

impl AddedNames {
    pub fn new(name: &str) -> AddedNames {
        AddedNames {
            cluster: name.to_string(),
            keeper: format!("{name}_keeper"),
            kept: format!("{name}_kept"),
            status: format!("{name}_status"),
        }
    }

    /// The four names, in column order.
    pub fn all(&self) -> [&str; 4] {
        [&self.cluster, &self.keeper, &self.kept, &self.status]
    }

    pub(super) fn columns(&self) -> [Column; 4] {
        [
            Column::new(&self.cluster, ColType::UInt),
            Column::new(&self.keeper, ColType::Str),
            Column::new(&self.kept, ColType::Bool),
            Column::new(&self.status, ColType::Str),
        ]
    }
}

/// The added values of one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Added {
    /// The cluster's id (1-based, as dedup prints clusters), `None` outside clusters.
    pub cluster: Option<u64>,
    /// The key of the record kept for the cluster (the record's own key outside clusters).
    pub keeper: String,
    pub status: Status,
}

impl Added {
    /// Whether the record is kept (everything but a cluster's duplicates).
    pub fn kept(&self) -> bool {
        self.status != Status::Duplicate
    }

    pub(super) fn cells(&self) -> [Cell; 4] {
        [
            self.cluster.map_or(Cell::Null, Cell::UInt),
            Cell::Str(self.keeper.clone()),
            Cell::Bool(self.kept()),
            Cell::Str(self.status.name().to_string()),
        ]
    }
}
