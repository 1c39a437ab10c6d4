//! The reading stage of a load: every input opened in turn and read in chunks of
//! [`READ_CHUNK`] items (reading, decompression and parsing; JSONL lines are parsed on the
//! load's pool), in input order. [`Reader`] is an iterator over those chunks; [`spawn`] runs
//! it on a thread of its own, ahead of the consumer by at most [`CHUNKS_AHEAD`] chunks, so
//! reading overlaps sketching and committing while memory stays bounded.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sketchdb::Tokenizer;
use sketchdb::io::{Content, ReadError, ReadOptions, RecordSource, Reject, RejectReason, Skipped, SourceRecord};

use crate::error::CliError;

/// Items read from a source at a time.
pub const READ_CHUNK: usize = 1024;

/// Chunks the reading thread may hold ready beyond the one being consumed: with chunks of
/// at most [`READ_CHUNK`] records, memory holds at most this many more chunks than the
/// serial load does.
pub const CHUNKS_AHEAD: usize = 4;

/// Items read in one go: records and rejects in input order, and how the read ended.
pub struct Chunk {
    pub records: Vec<SourceRecord>,
    pub rejects: Vec<Reject>,
    /// An input that cannot be read on (not a strict-mode reject, which is in `rejects`).
    pub failure: Option<ReadError>,
    /// Bytes of the current input consumed so far (for progress).
    pub bytes: u64,
}

/// What the reading stage hands on, in input order.
pub enum Read {
    /// Items of the current input.
    Chunk(Chunk),
    /// The current input is finished: the folder entries it skipped and the bytes it read.
    InputDone { skipped: Vec<Skipped>, bytes: u64 },
    /// An input could not be opened; nothing follows.
    OpenFailed(CliError),
}

/// The reading stage as an iterator: chunks of each input, then its end, input after input.
/// It ends after an input that fails (to open or to read) and after a strict-mode reject.
pub struct Reader {
    inputs: std::vec::IntoIter<PathBuf>,
    /// Where the input `-` is read from instead of standard input (a spooled copy).
    stdin_from: Option<PathBuf>,
    opts: ReadOptions,
    source: Option<Box<dyn RecordSource>>,
    tokenizer: Tokenizer,
    pool: Arc<rayon::ThreadPool>,
    done: bool,
    /// The end of an input, handed on after its last chunk.
    pending: Option<Read>,
    /// Time spent reading (including the parsing it waits for).
    busy: Duration,
}

impl Reader {
    /// Reads `inputs` with `opts` (the input `-` from `stdin_from` when given); a text with
    /// no token under `tokenizer` (the collection's recipe) is rejected here, in input order
    /// with the reader's rejects. Parsing runs on `pool`.
    pub fn new(
        inputs: Vec<PathBuf>,
        stdin_from: Option<PathBuf>,
        opts: ReadOptions,
        tokenizer: Tokenizer,
        pool: Arc<rayon::ThreadPool>,
    ) -> Self {
        Reader {
            inputs: inputs.into_iter(),
            stdin_from,
            opts,
            source: None,
            tokenizer,
            pool,
            done: false,
            pending: None,
            busy: Duration::ZERO,
        }
    }

    /// Time spent so far reading, decompressing and parsing.
    pub fn busy(&self) -> Duration {
        self.busy
    }

    fn step(&mut self) -> Option<Read> {
        if self.done {
            return None;
        }
        let Some(source) = self.source.as_mut() else {
            let input = self.inputs.next()?;
            let opened = match &self.stdin_from {
                Some(spool) if input.as_os_str() == "-" => super::open_spool(spool, &self.opts),
                _ => sketchdb::io::read::open(&input, &self.opts).map_err(super::read_error),
            };
            return match opened {
                Ok(source) => {
                    self.source = Some(source);
                    self.step()
                }
                Err(e) => {
                    self.done = true;
                    Some(Read::OpenFailed(e))
                }
            };
        };
        let (tokenizer, strict) = (&self.tokenizer, self.opts.strict);
        let (chunk, ended) = self.pool.install(|| read_chunk(&mut **source, READ_CHUNK, tokenizer, strict));
        if chunk.failure.is_some() || (strict && !chunk.rejects.is_empty()) {
            self.done = true;
            return Some(Read::Chunk(chunk));
        }
        if !ended {
            return Some(Read::Chunk(chunk));
        }
        let summary = source.summary();
        let done = Read::InputDone { skipped: summary.skipped.clone(), bytes: summary.bytes_read };
        self.source = None;
        if chunk.records.is_empty() && chunk.rejects.is_empty() {
            return Some(done);
        }
        // The chunk first, then the end of its input.
        self.pending = Some(done);
        Some(Read::Chunk(chunk))
    }
}

impl Iterator for Reader {
    type Item = Read;

    fn next(&mut self) -> Option<Read> {
        if let Some(done) = self.pending.take() {
            return Some(done);
        }
        let start = Instant::now();
        let item = self.step();
        self.busy += start.elapsed();
        item
    }
}

/// Whether `rec`'s text has no token under `tokenizer`. A text with a letter or digit is
/// tokenized only when it is sketched.
fn tokenless(tokenizer: &Tokenizer, rec: &SourceRecord) -> bool {
    matches!(&rec.content, Content::Text(t) if !t.chars().any(char::is_alphanumeric) && tokenizer.tokens(t).is_empty())
}

/// Reads up to `max` items, and whether the source ended; stops early at the end, a failure
/// or a strict-mode reject. A text without tokens under `tokenizer` is a reject.
fn read_chunk(source: &mut dyn RecordSource, max: usize, tokenizer: &Tokenizer, strict: bool) -> (Chunk, bool) {
    let mut chunk = Chunk { records: Vec::new(), rejects: Vec::new(), failure: None, bytes: 0 };
    let mut ended = false;
    for _ in 0..max {
        match source.next() {
            None => {
                ended = true;
                break;
            }
            Some(Ok(Ok(rec))) if tokenless(tokenizer, &rec) => {
                chunk.rejects.push(Reject::new(rec.origin, RejectReason::NoTokens));
                if strict {
                    break;
                }
            }
            Some(Ok(Ok(rec))) => chunk.records.push(rec),
            Some(Ok(Err(reject))) | Some(Err(ReadError::Rejected(reject))) => chunk.rejects.push(reject),
            Some(Err(e)) => {
                chunk.failure = Some(e);
                ended = true;
                break;
            }
        }
    }
    chunk.bytes = source.summary().bytes_read;
    (chunk, ended)
}

/// The reading stage, on the calling thread or on its own.
pub enum Reading {
    Inline(Box<Reader>),
    /// A thread runs the reader; its chunks come out of `rx` in input order, at most
    /// [`CHUNKS_AHEAD`] ready at a time. It ends with the reader, or when `rx` is dropped
    /// (after its current read), and returns its busy time.
    Thread {
        rx: Receiver<Read>,
        handle: JoinHandle<Duration>,
    },
}

impl Reading {
    /// Runs `reader` on a thread of its own.
    pub fn spawn(reader: Reader) -> Result<Self, CliError> {
        let (tx, rx) = sync_channel(CHUNKS_AHEAD);
        let handle = std::thread::Builder::new()
            .name("sketchdb-read".into())
            .spawn(move || {
                let mut reader = reader;
                for item in reader.by_ref() {
                    if tx.send(item).is_err() {
                        break;
                    }
                }
                reader.busy()
            })
            .map_err(|e| CliError::Runtime(format!("cannot start the reading thread: {e}")))?;
        Ok(Reading::Thread { rx, handle })
    }

    /// The time spent reading, once every chunk was taken. (A load that stops early drops
    /// the stage instead: its thread may be waiting on standard input.)
    pub fn finish(self) -> Duration {
        match self {
            Reading::Inline(reader) => reader.busy(),
            Reading::Thread { rx, handle } => {
                drop(rx);
                handle.join().unwrap_or_default()
            }
        }
    }
}

impl Iterator for Reading {
    type Item = Read;

    fn next(&mut self) -> Option<Read> {
        match self {
            Reading::Inline(reader) => reader.next(),
            Reading::Thread { rx, .. } => rx.recv().ok(),
        }
    }
}
