//! Opening an input: [`open`] for a path (or `-`), [`from_reader`] for any byte stream; the
//! format and the decompressor are chosen from the extension and the first bytes.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::ahead::Ahead;
use super::check::{Checked, Counting};
use super::delimited::Delimited;
use super::error::ReadError;
use super::jsonl::Jsonl;
use super::jsonl::U64s;
use super::lines::Lines;
use super::options::{Format, ReadOptions};
use super::record::{Origin, Position};

pub(crate) use super::source::Stream;
pub use super::source::{Item, RecordSource};

/// Opens `path` for reading records: `-` is standard input, a directory is read as a folder of
/// text files.
///
/// The format is [`ReadOptions::format`] when set, else the extension (`.jsonl`, `.ndjson`,
/// `.json`, `.csv`, `.tsv`, `.parquet`, `.u64`, each optionally followed by `.gz`, `.zst` or
/// `.zstd`), else the first bytes after decompression (Parquet's `PAR1`, or `{` for JSONL).
/// Compression is always detected from the first bytes (gzip `1f 8b`, all members; zstd
/// `28 b5 2f fd`, all frames), whatever the extension.
pub fn open(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    open_lines(path, opts).map(|o| o.into_records(opts))
}

/// An opened input: JSONL as raw [`Lines`], for a caller that parses them on threads of its
/// own; any other format as records.
#[non_exhaustive]
pub enum Opened {
    /// A JSONL input, not yet parsed.
    Lines(Lines),
    /// Any other input.
    Records(Box<dyn RecordSource>),
}

impl Opened {
    /// The input as records, whatever its format (JSONL lines parsed on the calling
    /// thread's rayon pool, checked and counted as [`open`] does).
    pub fn into_records(self, opts: &ReadOptions) -> Box<dyn RecordSource> {
        match self {
            Opened::Records(r) => r,
            Opened::Lines(lines) => {
                let bytes = lines.counter();
                Box::new(Checked::new(Jsonl::new(lines), opts, bytes))
            }
        }
    }
}

/// [`open`], but a JSONL input comes back as raw [`Lines`].
pub fn open_lines(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Opened, ReadError> {
    let path = path.as_ref();
    if path == Path::new("-") {
        return lines_from_reader(path, std::io::stdin(), opts);
    }
    let open_err = |source| ReadError::Open { path: path.to_path_buf(), source };
    let meta = std::fs::metadata(path).map_err(open_err)?;
    if meta.is_dir() {
        return super::folder::open(path, opts).map(Opened::Records);
    }
    let format = opts.format.or_else(|| format_from_name(path));
    match format {
        Some(Format::Folder) => {
            return Err(ReadError::Unsupported { path: path.into(), detail: "not a folder".into() });
        }
        Some(Format::Parquet) => return open_parquet_file(path, opts).map(Opened::Records),
        Some(Format::U64) if meta.len() % 8 != 0 => {
            // A plain u64 file's length is checked before any record is read; a compressed
            // one's at its end.
            let mut head = [0u8; 4];
            let n = File::open(path).and_then(|mut f| f.read(&mut head)).map_err(open_err)?;
            if !head[..n].starts_with(&GZIP_MAGIC) && !head[..n].starts_with(&ZSTD_MAGIC) {
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
    lines_from_reader(name, reader, opts).map(|o| o.into_records(opts))
}

/// [`from_reader`], but a JSONL stream comes back as raw [`Lines`].
pub fn lines_from_reader(
    name: impl AsRef<Path>,
    reader: impl Read + Send + 'static,
    opts: &ReadOptions,
) -> Result<Opened, ReadError> {
    let name = name.as_ref();
    let format = opts.format.or_else(|| format_from_name(name));
    from_stream(name.into(), Box::new(reader), format, opts)
}

fn from_stream(
    path: Arc<Path>,
    reader: Box<dyn Read + Send>,
    format: Option<Format>,
    opts: &ReadOptions,
) -> Result<Opened, ReadError> {
    let at = |source| ReadError::Io { at: Origin::new(Arc::clone(&path), Position::File), source };
    let bytes = Arc::new(AtomicU64::new(0));
    let counted: Box<dyn Read + Send> = Box::new(Counting::new(reader, Arc::clone(&bytes)));
    let stream = decompress(counted, opts.decompress_thread).map_err(at)?;
    let stream: Box<dyn Read + Send> = if opts.max_input_bytes == u64::MAX {
        Box::new(stream)
    } else {
        Box::new(Limit::new(stream, opts.max_input_bytes))
    };
    let (format, stream): (Format, Box<dyn Read + Send>) = match format {
        Some(f) => (f, stream),
        None => {
            let (head, stream) = peek(stream, 64).map_err(at)?;
            match format_from_head(&head) {
                Some(f) => (f, stream),
                None => return Err(ReadError::UnknownFormat { path: path.to_path_buf() }),
            }
        }
    };
    let buffered = || BufReader::with_capacity(1 << 16, stream);
    Ok(Opened::Records(match format {
        Format::Jsonl => return Ok(Opened::Lines(Lines::new(path, Box::new(buffered()), opts, bytes))),
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
    }))
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

/// gzip's magic bytes.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// zstd's frame magic (0xFD2FB528, little-endian).
pub(crate) const ZSTD_MAGIC: [u8; 4] = 0xFD2F_B528_u32.to_le_bytes();
/// Parquet's leading (and trailing) magic.
pub(crate) const PARQUET_MAGIC: [u8; 4] = *b"PAR1";

/// The format named by the extension, ignoring a trailing `.gz`, `.zst` or `.zstd`.
pub(crate) fn format_from_name(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let name = ["gz", "zst", "zstd"]
        .iter()
        .find_map(|c| name.strip_suffix(c).and_then(|n| n.strip_suffix('.')))
        .unwrap_or(&name);
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "jsonl" | "ndjson" | "json" => Format::Jsonl,
        "csv" => Format::Csv,
        "tsv" | "tab" => Format::Tsv,
        "parquet" | "pq" => Format::Parquet,
        "u64" => Format::U64,
        _ => return None,
    })
}

/// The format the first bytes of (decompressed) content suggest: Parquet's magic, or a JSON
/// object's opening brace after whitespace.
pub(crate) fn format_from_head(head: &[u8]) -> Option<Format> {
    if head.starts_with(&PARQUET_MAGIC) {
        return Some(Format::Parquet);
    }
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Some(Format::Jsonl),
        _ => None,
    }
}

/// Reads up to `n` bytes from the front of `reader` and returns them with a stream that
/// still yields every byte (the head first).
pub(crate) fn peek(mut reader: Box<dyn Read + Send>, n: usize) -> io::Result<(Vec<u8>, Box<dyn Read + Send>)> {
    let mut head = Vec::with_capacity(n);
    (&mut reader).take(n as u64).read_to_end(&mut head)?;
    let rest: Box<dyn Read + Send> = Box::new(Cursor::new(head.clone()).chain(reader));
    Ok((head, rest))
}

/// `reader` decompressed when its first bytes are a gzip member (all members are read, as
/// `cat a.gz b.gz` produces) or a zstd frame, on a thread of its own when `thread`;
/// unchanged otherwise.
pub(crate) fn decompress(reader: Box<dyn Read + Send>, thread: bool) -> io::Result<Stream> {
    let (head, reader) = peek(reader, 4)?;
    let reader = BufReader::with_capacity(1 << 16, reader);
    let decoder: Box<dyn Read + Send> = if head.starts_with(&GZIP_MAGIC) {
        Box::new(flate2::bufread::MultiGzDecoder::new(reader))
    } else if head.starts_with(&ZSTD_MAGIC) {
        Box::new(zstd::stream::read::Decoder::with_buffer(reader)?)
    } else {
        return Ok(Box::new(reader));
    };
    Ok(if thread { Box::new(Ahead::spawn(decoder)?) } else { Box::new(BufReader::with_capacity(1 << 16, decoder)) })
}

/// Fails with `InvalidData` once more than `left` bytes have been read through it.
pub(crate) struct Limit<R> {
    inner: R,
    left: u64,
}

impl<R> Limit<R> {
    fn new(inner: R, limit: u64) -> Self {
        Limit { inner, left: limit }
    }
}

impl<R: Read> Read for Limit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "input larger than the limit (max_input_bytes) after decompression",
            )
        })?;
        Ok(n)
    }
}
