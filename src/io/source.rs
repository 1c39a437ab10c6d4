//! What every reader yields: a [`RecordSource`] of [`Item`]s, and the byte [`Stream`] the
//! line-based readers take. The readers and [`super::read`] (which opens them) share these.

use std::io::BufRead;

use super::error::{ReadError, Reject};
use super::record::{SourceRecord, Summary};

/// One item of a [`RecordSource`]: `Err` when the input cannot be read on (the source ends
/// after it), else a record or a rejected record (the source goes on).
pub type Item = Result<Result<SourceRecord, Reject>, ReadError>;

/// A stream of records from one input. Ends after the last record or the first
/// [`ReadError`] (with [`ReadOptions::strict`](super::ReadOptions::strict), the first reject is one).
pub trait RecordSource: Iterator<Item = Item> + Send {
    /// Counts so far, and the folder entries skipped.
    fn summary(&self) -> &Summary;
}

/// A boxed, sendable byte stream.
pub(crate) type Stream = Box<dyn BufRead + Send>;
