//! Decompression ahead of the parser: a gzip or zstd stream is inherently serial, so with
//! [`ReadOptions::decompress_thread`](super::ReadOptions::decompress_thread) it is inflated on
//! a thread of its own into blocks that the line reader takes in order, while the caller
//! parses (and sketches) what came before. At most [`BLOCKS_AHEAD`] blocks of [`BLOCK`]
//! bytes wait, so memory stays bounded whatever the input's size.
//!
//! The blocks carry the stream's bytes exactly, in order; a read error is handed on after
//! every byte read before it, so the records before a corrupt spot are read as without the
//! thread, and the error names the same line. The thread ends at the end of the stream, at
//! its first error, or after its current block once the reader is dropped.

use std::io::{self, BufRead, ErrorKind, Read};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};

/// Bytes per block handed from the decompressing thread to the reader.
pub(crate) const BLOCK: usize = 256 << 10;
/// Blocks decompressed ahead of the reader (with [`BLOCK`], 16 MiB).
pub(crate) const BLOCKS_AHEAD: usize = 64;

/// What the decompressing thread hands on, in stream order.
enum Message {
    Data(Vec<u8>),
    /// The stream failed here; nothing follows.
    Failed(io::Error),
    /// The stream ended; nothing follows.
    End,
}

/// The reading end: a [`BufRead`] over the blocks of the thread.
pub(crate) struct Ahead {
    rx: Receiver<Message>,
    /// Emptied blocks, sent back for reuse.
    spare: Sender<Vec<u8>>,
    block: Vec<u8>,
    pos: usize,
    /// Set once the stream ended (`None`) or failed (the error, repeated on every later read).
    finished: Option<Option<(ErrorKind, String)>>,
}

impl Ahead {
    /// Starts a thread reading `inner` to its end ahead of the returned reader.
    pub(crate) fn spawn(mut inner: Box<dyn Read + Send>) -> io::Result<Self> {
        let (tx, rx) = sync_channel(BLOCKS_AHEAD);
        let (spare, spares) = channel();
        std::thread::Builder::new().name("sketchdb-inflate".into()).spawn(move || pump(&mut *inner, &tx, &spares))?;
        Ok(Ahead { rx, spare, block: Vec::new(), pos: 0, finished: None })
    }
}

/// Reads `inner` in blocks into `tx` until its end, its first error, or the reader's drop.
fn pump(inner: &mut dyn Read, tx: &SyncSender<Message>, spares: &Receiver<Vec<u8>>) {
    loop {
        let mut block = match spares.try_recv() {
            Ok(mut b) => {
                b.clear();
                b.resize(BLOCK, 0);
                b
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => vec![0; BLOCK],
        };
        let mut filled = 0;
        let mut failure = None;
        while filled < BLOCK {
            match inner.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        block.truncate(filled);
        let end = filled < BLOCK;
        // The bytes read before an error or the end go first.
        if filled > 0 && tx.send(Message::Data(block)).is_err() {
            return;
        }
        if let Some(e) = failure {
            let _ = tx.send(Message::Failed(e));
            return;
        }
        if end {
            let _ = tx.send(Message::End);
            return;
        }
    }
}

impl BufRead for Ahead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.block.len() {
            match &self.finished {
                Some(None) => return Ok(&[]),
                Some(Some((kind, message))) => return Err(io::Error::new(*kind, message.clone())),
                None => {}
            }
            match self.rx.recv() {
                Ok(Message::Data(next)) => {
                    let used = std::mem::replace(&mut self.block, next);
                    self.pos = 0;
                    if used.capacity() > 0 {
                        let _ = self.spare.send(used);
                    }
                }
                Ok(Message::End) => self.finished = Some(None),
                Ok(Message::Failed(e)) => {
                    self.finished = Some(Some((e.kind(), e.to_string())));
                    return Err(e);
                }
                Err(_) => {
                    let message = "the decompressing thread stopped unexpectedly";
                    self.finished = Some(Some((ErrorKind::Other, message.into())));
                    return Err(io::Error::other(message));
                }
            }
        }
        Ok(&self.block[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.block.len());
    }
}

impl Read for Ahead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `data` in reads of at most `step` bytes, then fails with `InvalidData` when
    /// `fail` (else ends).
    struct Feed {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail: bool,
    }

    impl Read for Feed {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at == self.data.len() {
                return if self.fail { Err(io::Error::new(ErrorKind::InvalidData, "corrupt deflate")) } else { Ok(0) };
            }
            let n = buf.len().min(self.step).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn every_byte_arrives_in_order_across_many_blocks() {
        // More than BLOCKS_AHEAD blocks, so the thread waits for the reader and blocks are reused.
        let data = bytes(BLOCK * (BLOCKS_AHEAD + 3) + 12_345);
        for step in [1 << 20, 4093] {
            let feed = Feed { data: data.clone(), at: 0, step, fail: false };
            let mut ahead = Ahead::spawn(Box::new(feed)).unwrap();
            let mut out = Vec::new();
            ahead.read_to_end(&mut out).unwrap();
            assert_eq!(out, data);
            assert_eq!(ahead.read(&mut [0u8; 8]).unwrap(), 0, "the end is sticky");
        }
    }

    #[test]
    fn an_error_comes_after_every_byte_before_it_and_repeats() {
        let data = bytes(BLOCK * 2 + 777);
        let mut ahead = Ahead::spawn(Box::new(Feed { data: data.clone(), at: 0, step: 10_000, fail: true })).unwrap();
        let mut out = Vec::new();
        let err = ahead.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData);
        assert_eq!(out, data);
        let again = ahead.fill_buf().unwrap_err();
        assert_eq!((again.kind(), again.to_string()), (ErrorKind::InvalidData, "corrupt deflate".to_string()));
    }

    #[test]
    fn lines_read_through_it_equal_the_lines_of_the_stream() {
        let text: String = (0..50_000).map(|i| format!("{{\"id\": {i}, \"text\": \"line {i}\"}}\n")).collect();
        let feed = Feed { data: text.clone().into_bytes(), at: 0, step: 3001, fail: false };
        let ahead = Ahead::spawn(Box::new(feed)).unwrap();
        let lines: Vec<String> = ahead.lines().collect::<Result<_, _>>().unwrap();
        assert_eq!(lines, text.lines().map(str::to_string).collect::<Vec<_>>());
    }

    /// Sets its flag when dropped (the stream closed).
    struct Closes(Feed, std::sync::Arc<std::sync::atomic::AtomicBool>);

    impl Read for Closes {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Drop for Closes {
        fn drop(&mut self) {
            self.1.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn dropping_the_reader_early_ends_the_thread_and_closes_the_stream() {
        let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let feed = Feed { data: bytes(BLOCK * (BLOCKS_AHEAD + 10)), at: 0, step: 1 << 16, fail: false };
        let mut ahead = Ahead::spawn(Box::new(Closes(feed, std::sync::Arc::clone(&closed)))).unwrap();
        let mut first = [0u8; 100];
        ahead.read_exact(&mut first).unwrap();
        drop(ahead);
        // The thread's next send fails, it returns and drops the stream.
        for _ in 0..6000 {
            if closed.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the stream was still open a minute after the reader was dropped");
    }
}
