//! The checks every format shares: content that has tokens, keys within the limit and unique
//! inside one input, counting, and strict mode. Format readers implement [`Parse`]; [`Checked`]
//! wraps one into a [`RecordSource`].

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::{ReadError, Reject, RejectReason};
use super::lines::{DuplicateIds, check_record};
use super::options::ReadOptions;
use super::record::{SourceRecord, Summary};
use super::source::{Item, RecordSource};

/// A format reader: yields parsed records, per-record rejects and fatal errors, and records
/// folder skips in `summary`. After a fatal error it is not called again.
pub(crate) trait Parse: Send {
    fn next_parsed(&mut self, summary: &mut Summary) -> Option<Item>;
}

/// A [`Parse`] with the shared checks applied.
pub(crate) struct Checked<P> {
    parse: P,
    strict: bool,
    keep_empty: bool,
    max_key_len: usize,
    duplicates: DuplicateIds,
    summary: Summary,
    bytes: Arc<AtomicU64>,
    done: bool,
}

impl<P: Parse> Checked<P> {
    pub(crate) fn new(parse: P, opts: &ReadOptions, bytes: Arc<AtomicU64>) -> Self {
        Checked {
            parse,
            strict: opts.strict,
            keep_empty: opts.keep_empty,
            max_key_len: opts.max_key_len,
            duplicates: DuplicateIds::new(opts),
            summary: Summary::default(),
            bytes,
            done: false,
        }
    }

    fn check(&mut self, rec: &SourceRecord) -> Result<(), RejectReason> {
        check_record(rec, self.max_key_len, self.keep_empty)?;
        self.duplicates.check(rec)
    }
}

impl<P: Parse> Iterator for Checked<P> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        if self.done {
            return None;
        }
        let item = self.parse.next_parsed(&mut self.summary);
        self.summary.bytes_read = self.bytes.load(Ordering::Relaxed);
        let reject = match item {
            None => {
                self.done = true;
                return None;
            }
            Some(Err(e)) => {
                self.done = true;
                return Some(Err(e));
            }
            Some(Ok(Ok(rec))) => match self.check(&rec) {
                Ok(()) => {
                    self.summary.records += 1;
                    return Some(Ok(Ok(rec)));
                }
                Err(reason) => Reject::new(rec.origin, reason),
            },
            Some(Ok(Err(reject))) => reject,
        };
        self.summary.rejected += 1;
        if self.strict {
            self.done = true;
            return Some(Err(ReadError::Rejected(reject)));
        }
        Some(Ok(Err(reject)))
    }
}

impl<P: Parse> RecordSource for Checked<P> {
    fn summary(&self) -> &Summary {
        &self.summary
    }
}

/// Counts the bytes read through it (the compressed position, under a decompressor).
pub(crate) struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    pub(crate) fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Counting { inner, count }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
