//! The text formats: JSON lines, CSV/TSV (through the `csv` crate, which quotes commas,
//! quotes, `\r` and `\n`) and plain lines.

use std::io::Write;
use std::path::PathBuf;

use super::sink::{ByteSink, Cell, Column, RowSink, Target};
use crate::error::CliError;

/// Rows as JSON objects, one per line, fields in column order.
pub struct JsonlRows {
    out: ByteSink,
    path: PathBuf,
    /// Each column's name, JSON-quoted once.
    names: Vec<String>,
}

impl JsonlRows {
    pub fn create(target: &Target, columns: Vec<Column>) -> Result<JsonlRows, CliError> {
        let names = columns.iter().map(|c| serde_json::Value::from(c.name.as_str()).to_string()).collect();
        Ok(JsonlRows { out: ByteSink::create(target)?, path: target.path.clone(), names })
    }
}

impl RowSink for JsonlRows {
    fn row(&mut self, cells: Vec<Cell>) -> Result<(), CliError> {
        let mut line = String::from("{");
        for (i, (name, cell)) in self.names.iter().zip(&cells).enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push_str(name);
            line.push(':');
            line.push_str(&cell.json().to_string());
        }
        line.push_str("}\n");
        self.out.write_all(line.as_bytes()).map_err(|e| CliError::io(&self.path, e))
    }

    fn finish(self: Box<Self>) -> Result<(), CliError> {
        let path = self.path;
        self.out.finish().map_err(|e| CliError::io(&path, e))
    }
}

/// The first cell of each row, one per line (a `.txt` list of keys).
pub struct LineRows {
    out: ByteSink,
    path: PathBuf,
}

impl LineRows {
    pub fn create(target: &Target) -> Result<LineRows, CliError> {
        Ok(LineRows { out: ByteSink::create(target)?, path: target.path.clone() })
    }
}

impl RowSink for LineRows {
    fn row(&mut self, cells: Vec<Cell>) -> Result<(), CliError> {
        let first = cells.first().map(Cell::text).unwrap_or_default();
        if first.contains(['\n', '\r']) {
            return Err(CliError::Input(format!(
                "{}: the value {first:?} holds a line break; write a .jsonl list instead",
                self.path.display()
            )));
        }
        writeln!(self.out, "{first}").map_err(|e| CliError::io(&self.path, e))
    }

    fn finish(self: Box<Self>) -> Result<(), CliError> {
        let path = self.path;
        self.out.finish().map_err(|e| CliError::io(&path, e))
    }
}

/// A CSV/TSV writer over a (possibly compressed) file.
pub struct CsvOut {
    w: csv::Writer<ByteSink>,
    path: PathBuf,
}

impl CsvOut {
    /// A writer with delimiter `delimiter` (`,` or `\t`); the caller writes the header.
    pub fn create(target: &Target, delimiter: u8) -> Result<CsvOut, CliError> {
        let w = csv::WriterBuilder::new().delimiter(delimiter).from_writer(ByteSink::create(target)?);
        Ok(CsvOut { w, path: target.path.clone() })
    }

    fn err(&self, e: csv::Error) -> CliError {
        match e.into_kind() {
            csv::ErrorKind::Io(e) => CliError::io(&self.path, e),
            other => CliError::Io(format!("{}: {other:?}", self.path.display())),
        }
    }

    /// Writes one record.
    pub fn record<I, T>(&mut self, fields: I) -> Result<(), CliError>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.w.write_record(fields).map_err(|e| self.err(e))
    }

    /// Flushes and closes the file.
    pub fn finish(self) -> Result<(), CliError> {
        let path = self.path;
        let sink = self.w.into_inner().map_err(|e| CliError::io(&path, e.into_error()))?;
        sink.finish().map_err(|e| CliError::io(&path, e))
    }
}

/// Typed rows as CSV/TSV: the column names as header, null as an empty field.
pub struct CsvRows(CsvOut);

impl CsvRows {
    pub fn create(target: &Target, columns: Vec<Column>, delimiter: u8) -> Result<CsvRows, CliError> {
        let mut out = CsvOut::create(target, delimiter)?;
        out.record(columns.iter().map(|c| c.name.as_str()))?;
        Ok(CsvRows(out))
    }
}

impl RowSink for CsvRows {
    fn row(&mut self, cells: Vec<Cell>) -> Result<(), CliError> {
        self.0.record(cells.iter().map(Cell::text))
    }

    fn finish(self: Box<Self>) -> Result<(), CliError> {
        self.0.finish()
    }
}
