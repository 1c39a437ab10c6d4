//! Streaming readers for real corpora: JSONL (plain, gzip, zstd), CSV/TSV, Parquet, folders of
//! text files and raw little-endian u64 fingerprint files, behind one interface.
//!
//! [`read::open`] picks the format from the path's extension or the first bytes (gzip
//! `1f 8b`, zstd `28 b5 2f fd`, Parquet `PAR1`), or reads standard input for `-`, and returns a
//! [`RecordSource`]: an iterator of [`Item`]s. Each item is either a [`SourceRecord`] (origin,
//! id, key, content, and optionally the raw input for pass-through) or a [`Reject`] naming
//! the record's `file:line` (or `file:row`) and a typed [`RejectReason`]; a bad record never
//! ends the stream unless [`ReadOptions::strict`] is set. Only input that cannot be read on at
//! all (an unreadable file, a corrupt compressed stream, a Parquet footer that does not parse)
//! is a [`ReadError`].
//!
//! ```
//! use sketchdb::io::{Content, ReadOptions, read};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("docs.jsonl");
//! std::fs::write(&path, "{\"id\": \"a\", \"text\": \"the quick brown fox\", \"url\": \"x\"}\n{\"id\": \"b\"}\n")?;
//! let mut source = read::open(&path, &ReadOptions::default())?;
//! let first = source.next().unwrap()?.unwrap();
//! assert_eq!(first.key, "a");
//! assert!(matches!(first.content, Content::Text(ref t) if t == "the quick brown fox"));
//! let second = source.next().unwrap()?.unwrap_err();
//! assert_eq!(second.origin.to_string(), format!("{}:2", path.display()));
//! assert!(source.next().is_none());
//! assert_eq!((source.summary().records, source.summary().rejected), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! This layer sits above `sketch` and `codec` and below `db`: it imports nothing from the
//! storage, index, planner or db layers.
#![forbid(unsafe_code)]

mod ahead;
mod check;
mod delimited;
mod error;
mod fields;
mod folder;
#[doc(hidden)]
pub mod fuzz;
mod jsonl;
mod lines;
#[cfg(test)]
mod lines_tests;
mod options;
#[cfg(feature = "parquet")]
mod parquet;
#[cfg(feature = "parquet")]
mod parquet_footer;
pub mod read;
mod record;
mod source;
#[cfg(test)]
mod tests;

pub use error::{ReadError, Reject, RejectReason};
pub use lines::{DuplicateIds, LineParser, Lines, RawLines};
pub use options::{Format, ReadOptions, Select};
pub use read::{Item, Opened, RecordSource};
pub use record::{Content, Origin, Position, Raw, SkipReason, Skipped, SourceRecord, Summary};
