//! The checks every format shares: content that has tokens, keys within the limit and unique
//! inside one input, counting, and strict mode. Format readers implement [`Parse`]; [`Checked`]
//! wraps one into a [`RecordSource`].

use std::collections::HashSet;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_128;

use super::error::{ReadError, Reject, RejectReason};
use super::options::ReadOptions;
use super::record::{Content, SourceRecord, Summary};
use super::source::{Item, RecordSource};

/// A format reader: yields parsed records, per-record rejects and fatal errors, and records
/// folder skips in `summary`. After a fatal error it is not called again.
pub(crate) trait Parse: Send {
    fn next_parsed(&mut self, summary: &mut Summary) -> Option<Item>;
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

/// A [`Parse`] with the shared checks applied.
pub(crate) struct Checked<P> {
    parse: P,
    strict: bool,
    reject_duplicates: bool,
    keep_empty: bool,
    max_key_len: usize,
    /// xxh3-128 of every accepted key (a false duplicate needs a 128-bit collision).
    seen: HashSet<u128>,
    summary: Summary,
    bytes: Arc<AtomicU64>,
    done: bool,
}

impl<P: Parse> Checked<P> {
    pub(crate) fn new(parse: P, opts: &ReadOptions, bytes: Arc<AtomicU64>) -> Self {
        Checked {
            parse,
            strict: opts.strict,
            reject_duplicates: opts.reject_duplicates,
            keep_empty: opts.keep_empty,
            max_key_len: opts.max_key_len,
            seen: HashSet::new(),
            summary: Summary::default(),
            bytes,
            done: false,
        }
    }

    fn check(&mut self, rec: &SourceRecord) -> Result<(), RejectReason> {
        if rec.key.is_empty() {
            return Err(RejectReason::EmptyKey);
        }
        if rec.key.len() > self.max_key_len {
            return Err(RejectReason::KeyTooLong { len: rec.key.len(), max: self.max_key_len });
        }
        if !self.keep_empty {
            check_content(&rec.content)?;
        }
        if self.reject_duplicates && rec.id.is_some() && !self.seen.insert(xxh3_128(rec.key.as_bytes())) {
            return Err(RejectReason::DuplicateKey(rec.key.clone()));
        }
        Ok(())
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
