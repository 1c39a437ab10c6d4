//! The writers' front: [`rows`] (typed rows in the target's format) and input records
//! written back unchanged (dedup's `--write-deduplicated`), optionally with the
//! cluster columns added.
//!
//! What "unchanged" means per input: a JSONL line is copied byte for byte (the added fields
//! are appended inside its object); a CSV/TSV record keeps its header's columns and values
//! (any output format; every value is text); a folder's file becomes a record `{"id": its
//! key, "text": its text}`. Parquet rows are copied with [`super::copy_rows`], which keeps
//! the input's schema.

use std::io::Write;

use sketchdb::io::{Content, Raw, SourceRecord};

use super::parquet::ParquetRows;
use super::sink::{Added, AddedNames, ByteSink, Cell, ColType, Column, OutFormat, RowSink, Target};
use super::text::{CsvRows, JsonlRows, LineRows};
use crate::error::CliError;

enum State {
    /// Nothing written yet: the first record decides how.
    Empty,
    /// JSONL lines copied as read.
    Lines(Box<ByteSink>),
    /// Rows of named columns (CSV/TSV records, folder files).
    Rows(Box<dyn RowSink>),
}

/// Writes input records unchanged to one target, created with the first record.
pub struct RecordWriter {
    target: Target,
    names: Option<AddedNames>,
    state: State,
    written: u64,
}

impl RecordWriter {
    /// A writer to `target`, adding the cluster columns `names` when given.
    pub fn new(target: Target, names: Option<AddedNames>) -> RecordWriter {
        RecordWriter { target, names, state: State::Empty, written: 0 }
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn refuse(&self, what: &str, formats: &str) -> CliError {
        CliError::Usage(format!("--write-deduplicated {}: {what} is written as {formats}", self.target.path.display()))
    }

    fn start(&mut self, raw: &Raw) -> Result<(), CliError> {
        let mut extra: Vec<Column> = self.names.as_ref().map(|n| n.columns().to_vec()).unwrap_or_default();
        self.state = match raw {
            Raw::JsonLine(_) if self.target.format == OutFormat::Jsonl => {
                State::Lines(Box::new(ByteSink::create(&self.target)?))
            }
            Raw::JsonLine(_) => return Err(self.refuse("JSONL input", "JSONL (.jsonl, .jsonl.gz, .jsonl.zst)")),
            Raw::Fields { .. } | Raw::File(_) if self.target.format == OutFormat::Lines => {
                return Err(self.refuse("a record", "JSONL, CSV, TSV or Parquet"));
            }
            Raw::Fields { names, .. } => {
                if let Some(n) = &self.names
                    && let Some(dup) = n.all().into_iter().find(|a| names.iter().any(|h| h == a))
                {
                    return Err(CliError::Usage(format!(
                        "--cluster-column: the input already has a column `{dup}`; choose another name"
                    )));
                }
                let mut columns: Vec<Column> = names.iter().map(|h| Column::new(h, ColType::Str)).collect();
                columns.append(&mut extra);
                State::Rows(rows(&self.target, columns)?)
            }
            Raw::File(_) => {
                let mut columns = vec![Column::new("id", ColType::Str), Column::new("text", ColType::Str)];
                columns.append(&mut extra);
                State::Rows(rows(&self.target, columns)?)
            }
            Raw::ParquetRow(_) => return Err(self.refuse("Parquet input", "Parquet (.parquet)")),
            _ => return Err(CliError::Usage("--write-deduplicated: this input keeps no records to write".into())),
        };
        Ok(())
    }

    /// Writes `rec` (read with `keep_raw`), with `added` when the writer adds columns.
    pub fn write(&mut self, rec: &SourceRecord, added: &Added) -> Result<(), CliError> {
        if matches!(self.state, State::Empty) {
            self.start(&rec.raw)?;
        }
        let names = self.names.as_ref();
        match (&mut self.state, &rec.raw) {
            (State::Lines(out), Raw::JsonLine(line)) => {
                let line = match names {
                    Some(n) => {
                        with_fields(line, n, added).map_err(|m| CliError::Input(format!("{}: {m}", rec.origin)))?
                    }
                    None => line.clone(),
                };
                writeln!(out, "{line}").map_err(|e| CliError::io(&self.target.path, e))?;
            }
            (State::Rows(sink), Raw::Fields { values, .. }) => {
                let mut cells: Vec<Cell> = values.iter().map(|v| Cell::Str(v.clone())).collect();
                if names.is_some() {
                    cells.extend(added.cells());
                }
                sink.row(cells)?;
            }
            (State::Rows(sink), Raw::File(_)) => {
                let text = match &rec.content {
                    Content::Text(t) => t.clone(),
                    _ => String::new(),
                };
                let mut cells = vec![Cell::Str(rec.key.clone()), Cell::Str(text)];
                if names.is_some() {
                    cells.extend(added.cells());
                }
                sink.row(cells)?;
            }
            _ => {
                return Err(CliError::Input(format!(
                    "{}: the input's records differ in kind (one output holds one kind)",
                    rec.origin
                )));
            }
        }
        self.written += 1;
        Ok(())
    }

    /// Closes the output (an input without records still gets an empty file).
    pub fn finish(self) -> Result<(), CliError> {
        let path = self.target.path.clone();
        match self.state {
            State::Empty if self.target.format == OutFormat::Parquet => {
                rows(&self.target, vec![Column::new("id", ColType::Str), Column::new("text", ColType::Str)])?.finish()
            }
            State::Empty => ByteSink::create(&self.target)?.finish().map_err(|e| CliError::io(&path, e)),
            State::Lines(out) => out.finish().map_err(|e| CliError::io(&path, e)),
            State::Rows(sink) => sink.finish(),
        }
    }
}

/// The JSONL object `line` with the added fields appended before its closing brace (the
/// input's bytes are kept); an input that already has one of the names is refused.
fn with_fields(line: &str, names: &AddedNames, a: &Added) -> Result<String, String> {
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    if let Some(dup) = names.all().into_iter().find(|n| object.contains_key(*n)) {
        return Err(format!("the record already has a field `{dup}`; choose another --cluster-column name"));
    }
    let body = line.trim_end().strip_suffix('}').ok_or("not a JSON object")?;
    let mut out = String::with_capacity(line.len() + 64);
    out.push_str(body);
    for (i, (name, cell)) in names.all().into_iter().zip(a.cells()).enumerate() {
        if i > 0 || !object.is_empty() {
            out.push(',');
        }
        out.push_str(&serde_json::Value::from(name).to_string());
        out.push(':');
        out.push_str(&cell.json().to_string());
    }
    out.push('}');
    Ok(out)
}

/// A writer of rows with `columns` to `target`, in its format. A `.txt` target gets the
/// first column's values, one per line.
pub fn rows(target: &Target, columns: Vec<Column>) -> Result<Box<dyn RowSink>, CliError> {
    Ok(match target.format {
        OutFormat::Jsonl => Box::new(JsonlRows::create(target, columns)?),
        OutFormat::Csv => Box::new(CsvRows::create(target, columns, b',')?),
        OutFormat::Tsv => Box::new(CsvRows::create(target, columns, b'\t')?),
        OutFormat::Parquet => Box::new(ParquetRows::create(target, columns)?),
        OutFormat::Lines => Box::new(LineRows::create(target)?),
    })
}
