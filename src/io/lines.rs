//! JSONL read in two steps, for callers that parse on threads of their own: [`Lines`] reads
//! an input's raw lines in chunks ([`RawLines`]: reading, decompression and line splitting,
//! which are serial), and [`LineParser::parse`] turns one line of a chunk into a record or a
//! reject (JSON parsing, field selection and every check that looks at one record alone),
//! on any thread, in any order. [`DuplicateIds`] is the one check that depends on the records
//! before: it must see the parsed records in input order.
//!
//! Reading a chunk, parsing its lines and applying [`DuplicateIds`] in order yields exactly
//! the items [`read::open`](super::read::open) yields for the same input (the JSONL reader is
//! built from these parts).
//!
//! ```
//! use sketchdb::io::{ReadOptions, read, DuplicateIds, Opened};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("docs.jsonl");
//! std::fs::write(&path, "{\"id\": \"a\", \"text\": \"x y\"}\n{\"id\": \"a\", \"text\": \"z\"}\nnot json\n")?;
//! let Opened::Lines(mut lines) = read::open_lines(&path, &ReadOptions::default())? else { unreachable!() };
//! let parser = lines.parser();
//! let mut chunk = lines.next_chunk(1024, 1 << 20).unwrap();
//! assert!(chunk.take_failure().is_none());
//! let mut dups = DuplicateIds::new(&ReadOptions::default());
//! let items: Vec<_> = (0..chunk.len()).map(|i| parser.parse(&chunk, i)).collect();
//! let (first, second) = (items[0].as_ref().unwrap(), items[1].as_ref().unwrap());
//! assert_eq!((first.key.as_str(), dups.check(first)), ("a", Ok(())));
//! assert_eq!(second.origin.to_string(), format!("{}:2", path.display()));
//! assert!(dups.check(second).is_err());
//! assert!(items[2].is_err());
//! assert!(lines.next_chunk(1024, 1 << 20).is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use xxhash_rust::xxh3::xxh3_128;

use super::error::{ReadError, Reject, RejectReason};
use super::fields::Fields;
use super::options::ReadOptions;
use super::record::{Content, Origin, Position, Raw, SourceRecord};
use super::source::Stream;

/// The raw lines of one JSONL input, read chunk by chunk in input order.
pub struct Lines {
    path: Arc<Path>,
    reader: Stream,
    /// The number of the last line read (1-based).
    line: u64,
    max: u64,
    /// Bytes of the input consumed (the compressed position under a decompressor).
    bytes: Arc<AtomicU64>,
    parser: Arc<LineParser>,
    ended: bool,
    spare: Spare,
}

/// A chunk of raw lines: non-blank lines with their numbers, in input order, and lines over
/// the size limit (already rejects). Ends early with the input's failure, if any. Dropped,
/// it hands its buffer back to its [`Lines`] for a later chunk.
pub struct RawLines {
    buf: Vec<u8>,
    entries: Vec<Entry>,
    failure: Option<ReadError>,
    bytes: u64,
    spare: Spare,
}

/// Buffers of dropped chunks, at most [`SPARE_BUFFERS`], reused by the next chunks: a chunk's
/// buffer is megabytes, and a fresh one costs page faults (and a copy at each doubling).
type Spare = Arc<Mutex<Vec<Vec<u8>>>>;

/// Buffers kept for reuse, at most.
const SPARE_BUFFERS: usize = 8;

impl Drop for RawLines {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        if let Ok(mut spare) = self.spare.lock()
            && spare.len() < SPARE_BUFFERS
        {
            spare.push(buf);
        }
    }
}

/// One entry of a chunk: a line's number and its bytes' end in the chunk's buffer (it starts
/// where the previous line ends), or a line over the limit.
enum Entry {
    Line { line: u64, start: usize, end: usize },
    TooLong(u64),
}

/// Turns a raw line into a record: parsing, field selection, and the checks that look at one
/// record alone (key present and within the limit, content present). Shared by the threads
/// that parse.
pub struct LineParser {
    path: Arc<Path>,
    fields: Fields,
    lossy: bool,
    keep_raw: bool,
    keep_empty: bool,
    max: u64,
    max_key_len: usize,
}

/// An id read twice inside one input ([`ReadOptions::reject_duplicates`]); records keyed by
/// their position are unique already. Costs 16 bytes per record with an id.
pub struct DuplicateIds {
    enabled: bool,
    /// xxh3-128 of every id accepted (a false duplicate needs a 128-bit collision).
    seen: HashSet<u128>,
}

impl DuplicateIds {
    /// The check as `opts` asks for it (off without `reject_duplicates`).
    pub fn new(opts: &ReadOptions) -> Self {
        DuplicateIds { enabled: opts.reject_duplicates, seen: HashSet::new() }
    }

    /// Whether `rec`'s id was accepted before (its reason) or not (it is remembered). Call in
    /// input order.
    pub fn check(&mut self, rec: &SourceRecord) -> Result<(), RejectReason> {
        let dup = self.enabled && rec.id.is_some() && !self.seen.insert(xxh3_128(rec.key.as_bytes()));
        if dup { Err(RejectReason::DuplicateKey(rec.key.clone())) } else { Ok(()) }
    }

    /// Forgets every id (the next input starts).
    pub fn clear(&mut self) {
        self.seen.clear();
    }
}

/// Whether `content` can be sketched as far as the reader can tell: non-empty text, a
/// non-empty token list, any fingerprint. Whether a text has tokens depends on the
/// collection's tokenizer (a recipe of character grams finds tokens in punctuation), so that
/// is decided by whoever tokenizes it.
pub(crate) fn check_content(content: &Content) -> Result<(), RejectReason> {
    match content {
        Content::Text(t) if t.is_empty() => Err(RejectReason::EmptyText),
        Content::Tokens(t) if t.is_empty() => Err(RejectReason::NoTokens),
        Content::Terms(t) if t.iter().all(String::is_empty) => Err(RejectReason::NoTokens),
        _ => Ok(()),
    }
}

/// The checks of one record alone: a key, within `max_key_len`, and (unless `keep_empty`)
/// content that can be sketched as far as a reader can tell.
pub(crate) fn check_record(rec: &SourceRecord, max_key_len: usize, keep_empty: bool) -> Result<(), RejectReason> {
    if rec.key.is_empty() {
        return Err(RejectReason::EmptyKey);
    }
    if rec.key.len() > max_key_len {
        return Err(RejectReason::KeyTooLong { len: rec.key.len(), max: max_key_len });
    }
    if !keep_empty {
        check_content(&rec.content)?;
    }
    Ok(())
}

impl Lines {
    pub(crate) fn new(path: Arc<Path>, reader: Stream, opts: &ReadOptions, bytes: Arc<AtomicU64>) -> Self {
        let parser = LineParser {
            path: Arc::clone(&path),
            fields: Fields::new(opts),
            lossy: opts.lossy_utf8,
            keep_raw: opts.keep_raw,
            keep_empty: opts.keep_empty,
            max: opts.max_record_bytes,
            max_key_len: opts.max_key_len,
        };
        let max = opts.max_record_bytes;
        Lines { path, reader, line: 0, max, bytes, parser: Arc::new(parser), ended: false, spare: Spare::default() }
    }

    /// The parser of this input's lines.
    pub fn parser(&self) -> Arc<LineParser> {
        Arc::clone(&self.parser)
    }

    /// The input's name, as origins show it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the input read so far (before decompression).
    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The counter behind [`Lines::bytes_read`].
    pub(crate) fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.bytes)
    }

    /// Reads lines until the chunk holds `max_lines` lines or `max_bytes` bytes (one line
    /// may pass that, up to [`ReadOptions::max_record_bytes`]), the input ends or fails.
    /// `None` once the input has ended (or failed) and every line was handed out.
    pub fn next_chunk(&mut self, max_lines: usize, max_bytes: usize) -> Option<RawLines> {
        if self.ended {
            return None;
        }
        let buf = self.spare.lock().ok().and_then(|mut s| s.pop()).unwrap_or_default();
        let spare = Arc::clone(&self.spare);
        let mut chunk =
            RawLines { buf, entries: Vec::with_capacity(max_lines.min(4096)), failure: None, bytes: 0, spare };
        while chunk.entries.len() < max_lines.max(1) && chunk.buf.len() < max_bytes {
            self.line += 1;
            let start = chunk.buf.len();
            match self.read_line(&mut chunk.buf) {
                Ok(None) => {
                    self.ended = true;
                    break;
                }
                Ok(Some(false)) => {
                    chunk.buf.truncate(start);
                    chunk.entries.push(Entry::TooLong(self.line));
                }
                Ok(Some(true)) => {
                    while chunk.buf.len() > start && matches!(chunk.buf.last(), Some(b'\n' | b'\r')) {
                        chunk.buf.pop();
                    }
                    if chunk.buf[start..].iter().all(u8::is_ascii_whitespace) {
                        chunk.buf.truncate(start);
                        continue;
                    }
                    chunk.entries.push(Entry::Line { line: self.line, start, end: chunk.buf.len() });
                }
                Err(source) => {
                    let at = Origin::new(Arc::clone(&self.path), Position::Line(self.line));
                    chunk.failure = Some(ReadError::Io { at, source });
                    self.ended = true;
                    break;
                }
            }
        }
        chunk.bytes = self.bytes_read();
        if self.ended && chunk.entries.is_empty() && chunk.failure.is_none() {
            return None;
        }
        Some(chunk)
    }

    /// Appends the next line (with its `\n`) to `buf`: `None` at the end, `Some(false)` for a
    /// line over the limit (its bytes past the limit consumed and dropped; `buf` may hold its
    /// start), else `Some(true)`.
    fn read_line(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
        let n = <&mut Stream as Read>::take(&mut self.reader, self.max.saturating_add(1)).read_until(b'\n', buf)?;
        if n == 0 {
            return Ok(None);
        }
        if n as u64 <= self.max {
            return Ok(Some(true));
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
        Ok(Some(false))
    }
}

impl RawLines {
    /// Entries (lines and lines over the limit) in the chunk.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the chunk holds no entry (it may still hold a failure).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The error that ended the input after the chunk's entries, taken out.
    pub fn take_failure(&mut self) -> Option<ReadError> {
        self.failure.take()
    }

    /// Bytes of the input read when the chunk was complete (before decompression).
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

impl LineParser {
    /// The record of entry `i` of `chunk` (read from this parser's input), or why it is
    /// rejected.
    ///
    /// # Panics
    /// When `i >= chunk.len()`.
    #[allow(clippy::result_large_err)]
    pub fn parse(&self, chunk: &RawLines, i: usize) -> Result<SourceRecord, Reject> {
        let origin = |line| Origin::new(Arc::clone(&self.path), Position::Line(line));
        match chunk.entries[i] {
            Entry::TooLong(line) => Err(Reject::new(origin(line), RejectReason::TooLarge { max: self.max })),
            Entry::Line { line, start, end } => {
                let rec = self.parse_line(line, &chunk.buf[start..end]).map_err(|r| Reject::new(origin(line), r))?;
                match check_record(&rec, self.max_key_len, self.keep_empty) {
                    Ok(()) => Ok(rec),
                    Err(reason) => Err(Reject::new(rec.origin, reason)),
                }
            }
        }
    }

    fn parse_line(&self, line: u64, bytes: &[u8]) -> Result<SourceRecord, RejectReason> {
        let lossy;
        let text = match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) if self.lossy => {
                lossy = String::from_utf8_lossy(bytes).into_owned();
                &lossy
            }
            Err(e) => return Err(RejectReason::InvalidUtf8 { offset: e.valid_up_to() }),
        };
        // A byte-order mark may open the first line.
        let json = if line == 1 { text.strip_prefix('\u{feff}').unwrap_or(text) } else { text };
        let mut value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| RejectReason::InvalidJson(e.to_string()))?;
        let (id, content) = self.fields.extract(&mut value)?;
        let origin = Origin::new(Arc::clone(&self.path), Position::Line(line));
        let key = id.clone().unwrap_or_else(|| origin.to_string());
        let raw = if self.keep_raw { Raw::JsonLine(text.to_owned()) } else { Raw::None };
        Ok(SourceRecord { origin, id, key, content, raw })
    }
}
