//! CSV and TSV with a header row (quoting and embedded newlines as the `csv` crate reads
//! them); columns are selected by header name.

use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::check::Parse;
use super::error::{ReadError, Reject, RejectReason};
use super::fields::content;
use super::options::{ReadOptions, Select};
use super::record::{Content, Origin, Position, Raw, SourceRecord, Summary};
use super::source::Item;

type Input = BufReader<Box<dyn Read + Send>>;

pub(crate) struct Delimited {
    path: Arc<Path>,
    reader: csv::Reader<Input>,
    names: Arc<[String]>,
    id: Option<usize>,
    /// The content columns present, with what each holds.
    content: Vec<(Select, usize)>,
    lossy: bool,
    keep_raw: bool,
    max: u64,
    record: csv::ByteRecord,
}

impl Delimited {
    pub(crate) fn new(path: Arc<Path>, input: Input, delimiter: u8, opts: &ReadOptions) -> Result<Self, ReadError> {
        let mut reader = csv::ReaderBuilder::new().delimiter(delimiter).has_headers(true).from_reader(input);
        let header =
            reader.byte_headers().map_err(|e| ReadError::Header { path: path.to_path_buf(), detail: e.to_string() })?;
        let names: Arc<[String]> = header
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let h = if i == 0 { h.strip_prefix(b"\xef\xbb\xbf").unwrap_or(h) } else { h };
                String::from_utf8_lossy(h).into_owned()
            })
            .collect();
        let find = |name: &str| names.iter().position(|n| n == name);
        let missing = |column: &str| ReadError::MissingColumn {
            path: path.to_path_buf(),
            column: column.to_owned(),
            available: names.join(", "),
        };
        let id = find(&opts.id_field).or_else(|| if opts.key_fallback() { find("key") } else { None });
        let wanted = [
            (Select::Text, &opts.text_field),
            (Select::Tokens, &opts.tokens_field),
            (Select::Fingerprint, &opts.fingerprint_field),
        ];
        let content: Vec<(Select, usize)> = match opts.select {
            Select::AnyOne => wanted.iter().filter_map(|(s, n)| find(n).map(|i| (*s, i))).collect(),
            s => wanted.iter().filter(|(w, _)| *w == s).filter_map(|(s, n)| find(n).map(|i| (*s, i))).collect(),
        };
        if content.is_empty() {
            let name = wanted.iter().find(|(s, _)| *s == opts.select).map_or(&opts.text_field, |(_, n)| n);
            return Err(missing(name));
        }
        Ok(Delimited {
            path,
            reader,
            names,
            id,
            content,
            lossy: opts.lossy_utf8,
            keep_raw: opts.keep_raw,
            max: opts.max_record_bytes,
            record: csv::ByteRecord::new(),
        })
    }

    fn cell(&self, i: usize) -> Result<String, RejectReason> {
        let bytes = self.record.get(i).unwrap_or_default();
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) if self.lossy => Ok(String::from_utf8_lossy(bytes).into_owned()),
            Err(e) => Err(RejectReason::InvalidUtf8 { offset: e.valid_up_to() }),
        }
    }

    fn parse(&self, origin: Origin) -> Result<SourceRecord, RejectReason> {
        if self.record.as_slice().len() as u64 > self.max {
            return Err(RejectReason::TooLarge { max: self.max });
        }
        let id = match self.id {
            Some(i) => Some(self.cell(i)?).filter(|s| !s.is_empty()),
            None => None,
        };
        let present: Vec<(Select, usize)> = if self.content.len() == 1 {
            self.content.clone()
        } else {
            self.content.iter().copied().filter(|(_, i)| self.record.get(*i).is_some_and(|c| !c.is_empty())).collect()
        };
        let (select, col) = match present.as_slice() {
            [one] => *one,
            [] => {
                return Err(RejectReason::MissingField(self.names.get(self.content[0].1).cloned().unwrap_or_default()));
            }
            _ => {
                let names: Vec<&str> =
                    self.content.iter().filter_map(|(_, i)| self.names.get(*i)).map(String::as_str).collect();
                return Err(RejectReason::AmbiguousContent(names.join("`, `")));
            }
        };
        let name = self.names.get(col).map_or("", String::as_str);
        let cell = self.cell(col)?;
        let content = match select {
            Select::Tokens => {
                let v: Value = serde_json::from_str(&cell).map_err(|_| RejectReason::BadTokens(name.to_owned()))?;
                content(Select::Tokens, name, v)?
            }
            Select::Fingerprint => content(Select::Fingerprint, name, Value::String(cell))?,
            _ => Content::Text(cell),
        };
        let key = id.clone().unwrap_or_else(|| origin.to_string());
        let raw = if self.keep_raw {
            let values =
                (0..self.record.len()).map(|i| String::from_utf8_lossy(&self.record[i]).into_owned()).collect();
            Raw::Fields { names: Arc::clone(&self.names), values }
        } else {
            Raw::None
        };
        Ok(SourceRecord { origin, id, key, content, raw })
    }
}

impl Parse for Delimited {
    fn next_parsed(&mut self, _: &mut Summary) -> Option<Item> {
        let mut record = std::mem::take(&mut self.record);
        let read = self.reader.read_byte_record(&mut record);
        self.record = record;
        let line = |p: Option<&csv::Position>| Position::Line(p.map_or(0, csv::Position::line));
        match read {
            Ok(false) => None,
            Ok(true) => {
                let origin = Origin::new(Arc::clone(&self.path), line(self.record.position()));
                Some(Ok(self.parse(origin.clone()).map_err(|r| Reject::new(origin, r))))
            }
            Err(e) => {
                let origin = Origin::new(Arc::clone(&self.path), line(e.position()));
                let message = e.to_string();
                match e.into_kind() {
                    csv::ErrorKind::Io(source) => Some(Err(ReadError::Io { at: origin, source })),
                    _ => Some(Ok(Err(Reject::new(origin, RejectReason::Csv(message))))),
                }
            }
        }
    }
}
