//! Fuzz entry points for the readers, shared by the `fuzz/` crate's targets and
//! `tests/io_fuzz_replay.rs`: arbitrary bytes in, every item drained, no panic. Inputs over
//! [`MAX_INPUT`] bytes are ignored and decompressed input is capped at [`MAX_EXPANDED`]
//! bytes, so memory stays bounded.

use std::io::Cursor;

use super::options::{Format, ReadOptions, Select};
use super::read::from_reader;

/// The largest input a target reads.
pub const MAX_INPUT: usize = 1 << 16;
/// The most bytes a target reads after decompression.
pub const MAX_EXPANDED: u64 = 4 << 20;

/// Options varied by the first input byte: content selection, lossy UTF-8, strict mode,
/// nested fields, raw retention.
fn options(flags: u8, format: Format) -> ReadOptions {
    ReadOptions {
        format: Some(format),
        select: match flags & 3 {
            0 => Select::Text,
            1 => Select::Tokens,
            2 => Select::Fingerprint,
            _ => Select::AnyOne,
        },
        lossy_utf8: flags & 4 != 0,
        strict: flags & 8 != 0,
        text_field: if flags & 16 != 0 { "meta.body".into() } else { "text".into() },
        keep_raw: flags & 32 != 0,
        max_record_bytes: 1 << 20,
        max_input_bytes: MAX_EXPANDED,
        parquet_batch_rows: 64,
        ..ReadOptions::default()
    }
}

fn drain(name: &str, format: Format, data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let (flags, body) = data.split_first().map_or((0, data), |(f, b)| (*f, b));
    let opts = options(flags, format);
    if let Ok(source) = from_reader(name, Cursor::new(body.to_vec()), &opts) {
        for item in source {
            drop(item);
        }
    }
}

/// With `magic` in front unless the body already starts with it, so the decompressor runs.
fn framed(magic: &[u8], data: &[u8]) -> Vec<u8> {
    let (flags, body) = data.split_first().map_or((0, data), |(f, b)| (*f, b));
    let mut out = vec![flags];
    if !body.starts_with(magic) {
        out.extend_from_slice(magic);
    }
    out.extend_from_slice(body);
    out
}

/// JSONL bytes (the first byte picks options).
pub fn fuzz_jsonl(data: &[u8]) {
    drain("fuzz.jsonl", Format::Jsonl, data);
}

/// CSV bytes (the first byte picks options; its top bit picks TSV).
pub fn fuzz_csv(data: &[u8]) {
    let tsv = data.first().is_some_and(|f| f & 0x80 != 0);
    drain("fuzz.csv", if tsv { Format::Tsv } else { Format::Csv }, data);
}

/// A Parquet file's bytes (the first byte picks options).
pub fn fuzz_parquet(data: &[u8]) {
    if cfg!(feature = "parquet") {
        drain("fuzz.parquet", Format::Parquet, data);
    }
}

/// A gzip stream of JSONL (the magic is added when missing).
pub fn fuzz_gzip(data: &[u8]) {
    drain("fuzz.jsonl.gz", Format::Jsonl, &framed(&super::read::GZIP_MAGIC, data));
}

/// A zstd stream of JSONL (the magic is added when missing).
pub fn fuzz_zstd(data: &[u8]) {
    drain("fuzz.jsonl.zst", Format::Jsonl, &framed(&super::read::ZSTD_MAGIC, data));
}
