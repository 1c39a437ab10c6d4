//! Choosing a format and a decompressor from the path's extension and the first bytes.

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use super::options::Format;

/// gzip's magic bytes.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// zstd's frame magic (0xFD2FB528, little-endian).
pub(crate) const ZSTD_MAGIC: [u8; 4] = 0xFD2F_B528_u32.to_le_bytes();
/// Parquet's leading (and trailing) magic.
pub(crate) const PARQUET_MAGIC: [u8; 4] = *b"PAR1";

/// A boxed, sendable byte stream.
pub(crate) type Stream = Box<dyn BufRead + Send>;

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
/// `cat a.gz b.gz` produces) or a zstd frame; unchanged otherwise.
pub(crate) fn decompress(reader: Box<dyn Read + Send>) -> io::Result<Stream> {
    let (head, reader) = peek(reader, 4)?;
    let reader = BufReader::with_capacity(1 << 16, reader);
    Ok(if head.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(reader)))
    } else if head.starts_with(&ZSTD_MAGIC) {
        Box::new(BufReader::with_capacity(1 << 16, zstd::stream::read::Decoder::with_buffer(reader)?))
    } else {
        Box::new(reader)
    })
}

/// Fails with `InvalidData` once more than `left` bytes have been read through it.
pub(crate) struct Limit<R> {
    inner: R,
    left: u64,
}

impl<R> Limit<R> {
    pub(crate) fn new(inner: R, limit: u64) -> Self {
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
