//! The streamed formats that need no parser crate: JSONL (one JSON object per line, blank
//! lines skipped, lines over the size limit rejected without being buffered whole; read by
//! [`Lines`] and parsed on the calling thread's rayon pool) and raw
//! little-endian u64 SimHash fingerprints (no header, 8 bytes a row, keyed by row index).

use std::collections::VecDeque;
use std::io::Read;

use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

use super::check::Parse;
use super::error::ReadError;
use super::lines::{LineParser, Lines};
use super::record::{Content, Origin, Position, Raw, SourceRecord, Summary};
use super::source::Item;
use super::source::Stream;

pub(crate) struct Jsonl {
    lines: Lines,
    parser: Arc<LineParser>,
    /// Items read and parsed ahead, in input order.
    ahead: VecDeque<Item>,
}

/// Lines read before they are parsed together on the rayon pool of the calling thread (the
/// global pool, or the one a caller runs the reader in with `ThreadPool::install`). Memory
/// is bounded by this many lines...; the items come out in input order whatever the threads.
const PARSE_AHEAD: usize = 1024;
/// ... or until the lines read hold this many bytes (one line may be up to the record limit).
const PARSE_AHEAD_BYTES: usize = 4 << 20;

impl Jsonl {
    pub(crate) fn new(lines: Lines) -> Self {
        Jsonl { parser: lines.parser(), lines, ahead: VecDeque::new() }
    }

    /// Reads up to [`PARSE_AHEAD`] lines, then parses them in parallel into `ahead`.
    fn fill(&mut self) {
        let Some(mut chunk) = self.lines.next_chunk(PARSE_AHEAD, PARSE_AHEAD_BYTES) else { return };
        let parser = &self.parser;
        let parsed: Vec<Item> = (0..chunk.len()).into_par_iter().map(|i| Ok(parser.parse(&chunk, i))).collect();
        self.ahead.extend(parsed);
        if let Some(e) = chunk.take_failure() {
            self.ahead.push_back(Err(e));
        }
    }
}

impl Parse for Jsonl {
    fn next_parsed(&mut self, _: &mut Summary) -> Option<Item> {
        if self.ahead.is_empty() {
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
