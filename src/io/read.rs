//! Opening an input: [`open`] for a path (or `-`), [`from_reader`] for any byte stream.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::check::{Checked, Counting};
use super::delimited::Delimited;
use super::detect::{self, format_from_head, format_from_name};
use super::error::{ReadError, Reject};
use super::jsonl::Jsonl;
use super::options::{Format, ReadOptions};
use super::record::{Origin, Position, SourceRecord, Summary};
use super::u64s::U64s;

/// One item of a [`RecordSource`]: `Err` when the input cannot be read on (the source ends
/// after it), else a record or a rejected record (the source goes on).
pub type Item = Result<Result<SourceRecord, Reject>, ReadError>;

/// A stream of records from one input. Ends after the last record or the first
/// [`ReadError`] (with [`ReadOptions::strict`], the first reject is one).
pub trait RecordSource: Iterator<Item = Item> + Send {
    /// Counts so far, and the folder entries skipped.
    fn summary(&self) -> &Summary;
}

/// Opens `path` for reading records: `-` is standard input, a directory is read as a folder of
/// text files.
///
/// The format is [`ReadOptions::format`] when set, else the extension (`.jsonl`, `.ndjson`,
/// `.json`, `.csv`, `.tsv`, `.parquet`, `.u64`, each optionally followed by `.gz`, `.zst` or
/// `.zstd`), else the first bytes after decompression (Parquet's `PAR1`, or `{` for JSONL).
/// Compression is always detected from the first bytes (gzip `1f 8b`, all members; zstd
/// `28 b5 2f fd`, all frames), whatever the extension.
pub fn open(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    let path = path.as_ref();
    if path == Path::new("-") {
        return from_reader(path, std::io::stdin(), opts);
    }
    let open_err = |source| ReadError::Open { path: path.to_path_buf(), source };
    let meta = std::fs::metadata(path).map_err(open_err)?;
    if meta.is_dir() {
        return super::folder::open(path, opts);
    }
    let format = opts.format.or_else(|| format_from_name(path));
    match format {
        Some(Format::Folder) => {
            return Err(ReadError::Unsupported { path: path.into(), detail: "not a folder".into() });
        }
        Some(Format::Parquet) => return open_parquet_file(path, opts),
        Some(Format::U64) if meta.len() % 8 != 0 => {
            // A plain u64 file's length is checked before any record is read; a compressed
            // one's at its end.
            let mut head = [0u8; 4];
            let n = File::open(path).and_then(|mut f| f.read(&mut head)).map_err(open_err)?;
            if !head[..n].starts_with(&detect::GZIP_MAGIC) && !head[..n].starts_with(&detect::ZSTD_MAGIC) {
                return Err(ReadError::Truncated { path: path.into(), bytes: meta.len() });
            }
        }
        _ => {}
    }
    let file = File::open(path).map_err(open_err)?;
    from_stream(path.into(), Box::new(file), format, opts)
}

/// Reads records from `reader`, named `name` in origins and keys; the format is
/// [`ReadOptions::format`], else `name`'s extension, else the first bytes. A Parquet stream
/// is read into memory whole first (Parquet needs random access).
pub fn from_reader(
    name: impl AsRef<Path>,
    reader: impl Read + Send + 'static,
    opts: &ReadOptions,
) -> Result<Box<dyn RecordSource>, ReadError> {
    let name = name.as_ref();
    let format = opts.format.or_else(|| format_from_name(name));
    from_stream(name.into(), Box::new(reader), format, opts)
}

fn from_stream(
    path: Arc<Path>,
    reader: Box<dyn Read + Send>,
    format: Option<Format>,
    opts: &ReadOptions,
) -> Result<Box<dyn RecordSource>, ReadError> {
    let at = |source| ReadError::Io { at: Origin::new(Arc::clone(&path), Position::File), source };
    let bytes = Arc::new(AtomicU64::new(0));
    let counted: Box<dyn Read + Send> = Box::new(Counting::new(reader, Arc::clone(&bytes)));
    let stream = detect::decompress(counted).map_err(at)?;
    let stream: Box<dyn Read + Send> = if opts.max_input_bytes == u64::MAX {
        Box::new(stream)
    } else {
        Box::new(detect::Limit::new(stream, opts.max_input_bytes))
    };
    let (format, stream): (Format, Box<dyn Read + Send>) = match format {
        Some(f) => (f, stream),
        None => {
            let (head, stream) = detect::peek(stream, 64).map_err(at)?;
            match format_from_head(&head) {
                Some(f) => (f, stream),
                None => return Err(ReadError::UnknownFormat { path: path.to_path_buf() }),
            }
        }
    };
    let buffered = || std::io::BufReader::with_capacity(1 << 16, stream);
    Ok(match format {
        Format::Jsonl => Box::new(Checked::new(Jsonl::new(path, Box::new(buffered()), opts), opts, bytes)),
        Format::Csv => Box::new(Checked::new(Delimited::new(path, buffered(), b',', opts)?, opts, bytes)),
        Format::Tsv => Box::new(Checked::new(Delimited::new(path, buffered(), b'\t', opts)?, opts, bytes)),
        Format::U64 => Box::new(Checked::new(U64s::new(path, Box::new(buffered())), opts, bytes)),
        Format::Parquet => {
            let mut all = Vec::new();
            buffered().read_to_end(&mut all).map_err(at)?;
            open_parquet_bytes(path, all, opts)?
        }
        Format::Folder => {
            return Err(ReadError::Unsupported { path: path.to_path_buf(), detail: "a stream is not a folder".into() });
        }
    })
}

#[cfg(feature = "parquet")]
fn open_parquet_file(path: &Path, opts: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    super::parquet::open_file(path, opts)
}

#[cfg(feature = "parquet")]
fn open_parquet_bytes(path: Arc<Path>, all: Vec<u8>, opts: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    super::parquet::open_bytes(path, all, opts)
}

#[cfg(not(feature = "parquet"))]
fn open_parquet_file(path: &Path, _: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    Err(ReadError::Unsupported { path: path.into(), detail: "Parquet support is not compiled in".into() })
}

#[cfg(not(feature = "parquet"))]
fn open_parquet_bytes(path: Arc<Path>, _: Vec<u8>, _: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    open_parquet_file(&path, &ReadOptions::default())
}
