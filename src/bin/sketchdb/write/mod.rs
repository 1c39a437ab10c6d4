//! Streaming writers for the files a command produces (dedup's outputs): one interface whose
//! format comes from the file name.
//!
//! - `.jsonl` / `.ndjson` / `.json`: one JSON object per line, fields in column order;
//! - `.csv` / `.tsv` (`.tab`): a header row, then one record per row, through the `csv` crate;
//! - `.parquet` / `.pq`: Apache Parquet through arrow, in row groups of [`BATCH_ROWS`];
//! - `.txt`: one value per line (lists of keys only).
//!
//! A trailing `.gz` or `.zst` (`.zstd`) compresses JSONL, CSV, TSV and text with gzip or zstd.
//! Rows go out as they come (Parquet: a batch at a time), so memory does not grow with the
//! output. [`rows`] writes typed rows; [`RecordWriter`] copies input records unchanged.

mod parquet;
mod records;
mod sink;
mod text;

pub use self::parquet::{column_values, copy_rows};
pub use records::{RecordWriter, rows};
pub use sink::{Added, AddedNames, Cell, ColType, Column, FieldValue, OutFormat, Status, Target};
