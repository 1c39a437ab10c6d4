//! The reading stage of a load: every input opened in turn and read in chunks, in input
//! order. A JSONL input is only split into lines here (reading, decompression, splitting):
//! its lines are parsed in the sketching jobs ([`super::pipeline`]), so the pool never waits
//! for the reader and the reader never queues behind sketching. Other formats are read and
//! parsed here. [`Reader`] is an iterator over those chunks; [`Reading::spawn`] runs it on a
//! thread of its own, ahead of the consumer by at most [`CHUNKS_AHEAD`] chunks, so reading
//! overlaps sketching and committing while memory stays bounded.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sketchdb::io::{LineParser, Opened, RawLines, ReadError, ReadOptions, RecordSource, Reject, Skipped, SourceRecord};

use crate::error::CliError;

/// Items read from a source at a time, at most.
pub const READ_CHUNK: usize = 1024;

/// The first chunk of a load holds this many items, each next one twice as many up to
/// [`READ_CHUNK`]: the first sketching job starts after a short read, not a full chunk's
/// (which, for a compressed input, is a full chunk's decompression).
pub const FIRST_CHUNK: usize = 64;

/// Bytes of raw lines in one chunk, at most (one line may pass it). Each chunk in flight
/// (up to [`CHUNKS_AHEAD`] read ahead, three being sketched) holds a buffer of this size
/// (reused, but first touched page by page): small enough that the buffers' first touches
/// stay few, large enough that a chunk is still many records to sketch.
pub const READ_CHUNK_BYTES: usize = 1 << 20;

/// Chunks the reading thread may hold ready beyond the one being consumed: with chunks of
/// at most [`READ_CHUNK`] records, memory holds at most this many more chunks than the
/// serial load does.
pub const CHUNKS_AHEAD: usize = 4;

/// What a chunk holds: records and rejects in input order, or raw JSONL lines with their
/// parser.
pub enum Items {
    Parsed(Vec<Result<SourceRecord, Reject>>),
    Raw(RawLines, Arc<LineParser>),
}

/// Items read in one go, and how the read ended.
pub struct Chunk {
    pub items: Items,
    /// An input that cannot be read on (not a strict-mode reject, which is in `items`).
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

/// An input being read.
enum Source {
    Records(Box<dyn RecordSource>),
    Lines(sketchdb::io::Lines),
}

/// The reading stage as an iterator: chunks of each input, then its end, input after input.
/// It ends after an input that fails (to open or to read) and after a strict-mode reject
/// found while reading (a JSONL line's is found when it is parsed, after the reading).
pub struct Reader {
    inputs: std::vec::IntoIter<PathBuf>,
    /// Where the input `-` is read from instead of standard input (a spooled copy).
    stdin_from: Option<PathBuf>,
    opts: ReadOptions,
    source: Option<Source>,
    /// Items the next chunk may hold.
    chunk: usize,
    done: bool,
    /// The end of an input, handed on after its last chunk.
    pending: Option<Read>,
    /// Time spent reading.
    busy: Duration,
}

impl Reader {
    /// Reads `inputs` with `opts` (the input `-` from `stdin_from` when given).
    pub fn new(inputs: Vec<PathBuf>, stdin_from: Option<PathBuf>, mut opts: ReadOptions) -> Self {
        // A Parquet batch is decoded whole before its first record is handed on: batches of
        // a read chunk let the first sketching job start early.
        opts.parquet_batch_rows = READ_CHUNK;
        Reader {
            inputs: inputs.into_iter(),
            stdin_from,
            opts,
            source: None,
            chunk: FIRST_CHUNK,
            done: false,
            pending: None,
            busy: Duration::ZERO,
        }
    }

    /// Time spent so far reading, decompressing and parsing (JSONL: splitting lines).
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
                _ => sketchdb::io::read::open_lines(&input, &self.opts).map_err(super::read_error),
            };
            return match opened {
                Ok(Opened::Lines(lines)) => {
                    self.source = Some(Source::Lines(lines));
                    self.step()
                }
                Ok(Opened::Records(records)) => {
                    self.source = Some(Source::Records(records));
                    self.step()
                }
                Ok(_) => {
                    self.done = true;
                    Some(Read::OpenFailed(CliError::Runtime("an input opened as an unknown kind (a bug)".into())))
                }
                Err(e) => {
                    self.done = true;
                    Some(Read::OpenFailed(e))
                }
            };
        };
        let max = self.chunk;
        self.chunk = (self.chunk * 2).min(READ_CHUNK);
        let (chunk, ended, skipped, bytes) = match source {
            Source::Lines(lines) => match lines.next_chunk(max, READ_CHUNK_BYTES) {
                Some(mut raw) => {
                    let failure = raw.take_failure();
                    let bytes = raw.bytes_read();
                    let chunk = Chunk { items: Items::Raw(raw, lines.parser()), failure, bytes };
                    (Some(chunk), false, Vec::new(), bytes)
                }
                None => (None, true, Vec::new(), lines.bytes_read()),
            },
            Source::Records(records) => {
                let (chunk, ended) = read_chunk(&mut **records, max);
                let summary = records.summary();
                (Some(chunk), ended, summary.skipped.clone(), summary.bytes_read)
            }
        };
        if let Some(chunk) = chunk {
            let strict_reject = self.opts.strict
                && matches!(&chunk.items, Items::Parsed(items) if items.last().is_some_and(Result::is_err));
            if chunk.failure.is_some() || strict_reject {
                self.done = true;
                return Some(Read::Chunk(chunk));
            }
            if !ended {
                return Some(Read::Chunk(chunk));
            }
            self.source = None;
            let done = Read::InputDone { skipped, bytes };
            if matches!(&chunk.items, Items::Parsed(items) if items.is_empty()) {
                return Some(done);
            }
            // The chunk first, then the end of its input.
            self.pending = Some(done);
            return Some(Read::Chunk(chunk));
        }
        self.source = None;
        Some(Read::InputDone { skipped, bytes })
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

/// Reads up to `max` items of a parsed source, and whether it ended; stops early at the end,
/// a failure or a strict-mode reject.
fn read_chunk(source: &mut dyn RecordSource, max: usize) -> (Chunk, bool) {
    let mut items = Vec::with_capacity(max);
    let mut failure = None;
    let mut ended = false;
    for _ in 0..max {
        match source.next() {
            None => {
                ended = true;
                break;
            }
            Some(Ok(item)) => items.push(item),
            Some(Err(ReadError::Rejected(reject))) => items.push(Err(reject)),
            Some(Err(e)) => {
                failure = Some(e);
                ended = true;
                break;
            }
        }
    }
    let bytes = source.summary().bytes_read;
    (Chunk { items: Items::Parsed(items), failure, bytes }, ended)
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
