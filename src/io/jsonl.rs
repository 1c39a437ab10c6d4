//! The streamed formats that need no parser crate: JSONL (one JSON object per line, blank
//! lines skipped, lines over the size limit rejected without being buffered whole) and raw
//! little-endian u64 SimHash fingerprints (no header, 8 bytes a row, keyed by row index).

use std::collections::VecDeque;
use std::io::{BufRead, Read};

use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

use super::check::Parse;
use super::error::{ReadError, Reject, RejectReason};
use super::fields::Fields;
use super::options::ReadOptions;
use super::record::{Content, Origin, Position, Raw, SourceRecord, Summary};
use super::source::Item;
use super::source::Stream;

pub(crate) struct Jsonl {
    path: Arc<Path>,
    reader: Stream,
    line: u64,
    parser: LineParser,
    max: u64,
    /// Items read and parsed ahead, in input order.
    ahead: VecDeque<Item>,
    /// Whether the stream has ended (or failed).
    ended: bool,
}

/// Lines read before they are parsed together on the rayon pool of the calling thread (the
/// global pool, or the one a caller runs the reader in with `ThreadPool::install`). Memory
/// is bounded by this many lines...; the items come out in input order whatever the threads.
const PARSE_AHEAD: usize = 1024;
/// ... or until the lines read hold this many bytes (one line may be up to the record limit).
const PARSE_AHEAD_BYTES: usize = 4 << 20;

/// What parsing one line needs (shared by the threads that parse).
struct LineParser {
    path: Arc<Path>,
    fields: Fields,
    lossy: bool,
    keep_raw: bool,
}

/// One line read, not yet parsed.
enum Pending {
    Line(u64, Vec<u8>),
    Item(Item),
}

/// How reading one line ended.
enum Line {
    Eof,
    Read,
    /// Longer than the limit; the rest of it was consumed and dropped.
    TooLong,
}

impl Jsonl {
    pub(crate) fn new(path: Arc<Path>, reader: Stream, opts: &ReadOptions) -> Self {
        Jsonl {
            parser: LineParser {
                path: Arc::clone(&path),
                fields: Fields::new(opts),
                lossy: opts.lossy_utf8,
                keep_raw: opts.keep_raw,
            },
            path,
            reader,
            line: 0,
            max: opts.max_record_bytes,
            ahead: VecDeque::new(),
            ended: false,
        }
    }

    fn origin(&self) -> Origin {
        Origin::new(Arc::clone(&self.path), Position::Line(self.line))
    }

    /// Reads the next line into `buf` (with its `\n`), at most `max` bytes kept.
    fn read_line(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Line> {
        let n = <&mut Stream as Read>::take(&mut self.reader, self.max.saturating_add(1)).read_until(b'\n', buf)?;
        if n == 0 {
            return Ok(Line::Eof);
        }
        if buf.len() as u64 <= self.max {
            return Ok(Line::Read);
        }
        if buf.last() != Some(&b'\n') {
            loop {
                let avail = self.reader.fill_buf()?;
                if avail.is_empty() {
                    break;
                }
                match avail.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.reader.consume(i + 1);
                        break;
                    }
                    None => {
                        let n = avail.len();
                        self.reader.consume(n);
                    }
                }
            }
        }
        Ok(Line::TooLong)
    }
}

impl LineParser {
    fn parse(&self, line: u64, bytes: Vec<u8>) -> Result<SourceRecord, RejectReason> {
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) if self.lossy => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            Err(e) => return Err(RejectReason::InvalidUtf8 { offset: e.utf8_error().valid_up_to() }),
        };
        // A byte-order mark may open the first line.
        let json = if line == 1 { text.strip_prefix('\u{feff}').unwrap_or(&text) } else { &text };
        let mut value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| RejectReason::InvalidJson(e.to_string()))?;
        let (id, content) = self.fields.extract(&mut value)?;
        let origin = Origin::new(Arc::clone(&self.path), Position::Line(line));
        let key = id.clone().unwrap_or_else(|| origin.to_string());
        let raw = if self.keep_raw { Raw::JsonLine(text) } else { Raw::None };
        Ok(SourceRecord { origin, id, key, content, raw })
    }
}

impl Jsonl {
    /// The next non-blank line, or the item that ends or skips it (a line over the limit, a
    /// read error); `None` at the end.
    fn next_line(&mut self) -> Option<Pending> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            self.line += 1;
            match self.read_line(&mut buf) {
                Ok(Line::Eof) => return None,
                Ok(Line::Read) => {}
                Ok(Line::TooLong) => {
                    let reject = Reject::new(self.origin(), RejectReason::TooLarge { max: self.max });
                    return Some(Pending::Item(Ok(Err(reject))));
                }
                Err(source) => return Some(Pending::Item(Err(ReadError::Io { at: self.origin(), source }))),
            }
            while matches!(buf.last(), Some(b'\n' | b'\r')) {
                buf.pop();
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Pending::Line(self.line, std::mem::take(&mut buf)));
        }
    }

    /// Reads up to [`PARSE_AHEAD`] lines, then parses them in parallel into `ahead`.
    fn fill(&mut self) {
        let mut pending = Vec::with_capacity(PARSE_AHEAD);
        let mut bytes = 0;
        while pending.len() < PARSE_AHEAD && bytes < PARSE_AHEAD_BYTES {
            match self.next_line() {
                None => {
                    self.ended = true;
                    break;
                }
                Some(p @ Pending::Item(Err(_))) => {
                    pending.push(p);
                    self.ended = true;
                    break;
                }
                Some(p) => {
                    if let Pending::Line(_, b) = &p {
                        bytes += b.len();
                    }
                    pending.push(p);
                }
            }
        }
        let this = &self.parser;
        let parsed: Vec<Item> = pending
            .into_par_iter()
            .map(|p| match p {
                Pending::Item(item) => item,
                Pending::Line(line, bytes) => Ok(this
                    .parse(line, bytes)
                    .map_err(|r| Reject::new(Origin::new(Arc::clone(&this.path), Position::Line(line)), r))),
            })
            .collect();
        self.ahead.extend(parsed);
    }
}

impl Parse for Jsonl {
    fn next_parsed(&mut self, _: &mut Summary) -> Option<Item> {
        if self.ahead.is_empty() && !self.ended {
            self.fill();
        }
        self.ahead.pop_front()
    }
}

/// Raw fingerprints: the key is the row index (`0`, `1`, ...).
pub(crate) struct U64s {
    path: Arc<Path>,
    reader: Stream,
    row: u64,
}

impl U64s {
    pub(crate) fn new(path: Arc<Path>, reader: Stream) -> Self {
        U64s { path, reader, row: 0 }
    }
}

impl Parse for U64s {
    fn next_parsed(&mut self, _: &mut Summary) -> Option<Item> {
        let mut buf = [0u8; 8];
        let mut filled = 0;
        while filled < 8 {
            match self.reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    let at = Origin::new(Arc::clone(&self.path), Position::Row(self.row));
                    return Some(Err(ReadError::Io { at, source }));
                }
            }
        }
        match filled {
            0 => None,
            8 => {
                let row = self.row;
                self.row += 1;
                Some(Ok(Ok(SourceRecord {
                    origin: Origin::new(Arc::clone(&self.path), Position::Row(row)),
                    id: None,
                    key: row.to_string(),
                    content: Content::Fingerprint(u128::from(u64::from_le_bytes(buf))),
                    raw: Raw::None,
                })))
            }
            n => Some(Err(ReadError::Truncated { path: self.path.to_path_buf(), bytes: self.row * 8 + n as u64 })),
        }
    }
}
