//! The benchmarks' inputs: `{"key", "tokens" | "text" | "simhash"}` JSON lines read strictly
//! (the first malformed record is an error naming its file and line) and raw u64 fingerprint
//! files. Corpora for `ingest` are read through `sketchdb::io` instead (`crate::load`).

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::error::CliError;

/// One ingestable record, whatever the input format.
#[derive(Debug, Clone)]
pub enum Payload {
    /// Text (the benchmarks read token sets only).
    Text,
    /// Pre-hashed tokens (a set).
    Tokens(Vec<u64>),
    /// A SimHash fingerprint (the benchmarks read these from u64 files).
    Fingerprint,
}

/// Where a record came from: `path:line` for a line of a JSONL file, the path alone for a
/// whole text file or a fingerprint file (whose keys are the fingerprints' row indexes).
#[derive(Debug, Clone)]
pub struct Origin {
    path: Arc<Path>,
    line: Option<usize>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(n) => write!(f, "{}:{n}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// A keyed record read from an input file.
#[derive(Debug, Clone)]
pub struct InputRecord {
    pub key: String,
    pub payload: Payload,
    /// Where it was read; errors about the record start with it.
    pub origin: Origin,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRecord {
    key: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tokens: Option<Vec<u64>>,
    #[serde(default)]
    simhash: Option<String>,
}

/// Parses a fingerprint of up to 32 hex digits, with or without `0x`.
pub fn parse_hex_fingerprint(s: &str) -> Result<u128, String> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if digits.is_empty() || digits.len() > 32 {
        return Err(format!("`{s}` is not 1 to 32 hex digits"));
    }
    u128::from_str_radix(digits, 16).map_err(|_| format!("`{s}` is not a hexadecimal fingerprint"))
}

/// The longest input line accepted (a record larger than this is refused, not buffered).
pub const MAX_LINE_BYTES: u64 = 16 << 20;

/// Streams `{"key", "text"|"tokens"|"simhash"}` lines, one record per line; blank lines skip.
pub struct JsonlReader {
    path: Arc<Path>,
    reader: BufReader<Box<dyn Read>>,
    line_no: usize,
    done: bool,
}

impl JsonlReader {
    pub fn open(path: &Path) -> Result<Self, CliError> {
        let file: Box<dyn Read> = if path == Path::new("-") {
            crate::stdin::claim("the input")?;
            Box::new(std::io::stdin())
        } else {
            Box::new(File::open(path).map_err(|e| CliError::io(path, e))?)
        };
        Ok(JsonlReader { path: path.into(), reader: BufReader::with_capacity(1 << 20, file), line_no: 0, done: false })
    }

    fn bad(&self, msg: impl std::fmt::Display) -> CliError {
        CliError::Input(format!("{}:{}: {msg}", self.path.display(), self.line_no))
    }
}

impl Iterator for JsonlReader {
    type Item = Result<InputRecord, CliError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let mut buf = Vec::new();
            let read = (&mut self.reader).take(MAX_LINE_BYTES + 1).read_until(b'\n', &mut buf);
            self.line_no += 1;
            match read {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.bad(e)));
                }
            }
            if buf.len() as u64 > MAX_LINE_BYTES {
                self.done = true;
                return Some(Err(self.bad(format!("line longer than {} MiB", MAX_LINE_BYTES >> 20))));
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            let Ok(line) = String::from_utf8(buf) else {
                self.done = true;
                return Some(Err(self.bad("not valid UTF-8")));
            };
            if line.trim().is_empty() {
                continue;
            }
            let rec: JsonRecord = match serde_json::from_str(&line) {
                Ok(r) => r,
                Err(e) => return Some(Err(self.bad(format!("malformed JSON record: {e}")))),
            };
            let payload = match (rec.text, rec.tokens, rec.simhash) {
                (Some(_), None, None) => Payload::Text,
                (None, Some(t), None) => Payload::Tokens(t),
                (None, None, Some(h)) => match parse_hex_fingerprint(&h) {
                    Ok(_) => Payload::Fingerprint,
                    Err(e) => return Some(Err(self.bad(format!("field `simhash`: {e}")))),
                },
                _ => {
                    return Some(Err(self.bad("a record needs exactly one of `text`, `tokens` or `simhash`")));
                }
            };
            let origin = Origin { path: Arc::clone(&self.path), line: Some(self.line_no) };
            return Some(Ok(InputRecord { key: rec.key, payload, origin }));
        }
    }
}

/// Reads a raw little-endian u64 fingerprint file (no header; row index = key).
pub fn read_u64_file(path: &Path) -> Result<Vec<u64>, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, e))?;
    if bytes.len() % 8 != 0 {
        return Err(CliError::Input(format!(
            "{}: {} bytes is not a whole number of little-endian u64 fingerprints",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect())
}
