//! Telling a truncated database file from a file that is not a database: the storage
//! engine's header states how long the file is (its page size and region layout), so a file
//! that starts with the engine's header but is shorter than that was cut short (an
//! interrupted copy, a full disk), and is reported as such.
//!
//! The header (redb file format 3, its first 64 bytes): a 9-byte magic number, the god byte,
//! 2 bytes of padding, then little-endian `u32`s at offset 12 (page size), 16 (header pages
//! per region), 20 (data pages per full region), 24 (full regions) and 28 (data pages in the
//! trailing partial region). The file is one page of super-header, then each full region
//! (its header pages and data pages), then the trailing region, if it has data pages.

use std::io::Read;
use std::path::Path;

const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
const HEADER_LEN: usize = 32;

/// What the file's first bytes say about its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declared {
    /// Not the storage engine's header (another kind of file, or a damaged header).
    Unknown,
    /// The engine's magic number, but the file ends inside the header.
    CutInHeader,
    /// The length the header's layout gives.
    Len(u64),
}

fn u32_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

/// The length `header` (the file's first bytes) declares.
pub(crate) fn declared(header: &[u8]) -> Declared {
    if header.len() < MAGIC.len() || header[..MAGIC.len()] != MAGIC {
        return if !header.is_empty() && MAGIC.starts_with(header) { Declared::CutInHeader } else { Declared::Unknown };
    }
    if header.len() < HEADER_LEN {
        return Declared::CutInHeader;
    }
    let page = u32_at(header, 12);
    if !page.is_power_of_two() || !(512..=1 << 24).contains(&page) {
        return Declared::Unknown;
    }
    let (region_header, region_data) = (u32_at(header, 16), u32_at(header, 20));
    let (full, trailing) = (u32_at(header, 24), u32_at(header, 28));
    let trailing_pages = if trailing > 0 { region_header + trailing } else { 0 };
    // At most 2^32 regions of 2^33 pages of 2^24 bytes: the sum fits in u128, not always u64.
    let len = u128::from(page)
        * (1 + u128::from(full) * u128::from(region_header + region_data) + u128::from(trailing_pages));
    u64::try_from(len).map_or(Declared::Unknown, Declared::Len)
}

/// `Some((length, declared length))` when the file at `path` is shorter than its header says
/// (or ends inside the header: declared length 0 then).
pub(crate) fn truncated(path: &Path) -> Option<(u64, u64)> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut header = Vec::with_capacity(HEADER_LEN);
    f.by_ref().take(HEADER_LEN as u64).read_to_end(&mut header).ok()?;
    match declared(&header) {
        Declared::CutInHeader => Some((len, 0)),
        Declared::Len(want) if len < want => Some((len, want)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(page: u32, region_header: u32, region_data: u32, full: u32, trailing: u32) -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        h.extend([1, 0, 0]);
        for v in [page, region_header, region_data, full, trailing] {
            h.extend(v.to_le_bytes());
        }
        h
    }

    #[test]
    fn the_layout_gives_the_length() {
        // One page of super-header, one trailing region of 2 header + 10 data pages.
        assert_eq!(declared(&header(4096, 2, 100, 0, 10)), Declared::Len(4096 * 13));
        // Two full regions of 2 + 100 pages and no trailing region.
        assert_eq!(declared(&header(4096, 2, 100, 2, 0)), Declared::Len(4096 * (1 + 2 * 102)));
    }

    #[test]
    fn other_files_and_cut_headers_are_told_apart() {
        assert_eq!(declared(b"hello, not a database"), Declared::Unknown);
        assert_eq!(declared(b""), Declared::Unknown);
        assert_eq!(declared(&MAGIC[..4]), Declared::CutInHeader);
        assert_eq!(declared(&header(4096, 2, 100, 0, 10)[..20]), Declared::CutInHeader);
        assert_eq!(declared(&header(1000, 2, 100, 0, 10)), Declared::Unknown, "page size not a power of two");
    }

    #[test]
    fn a_real_file_cut_short_is_truncated_and_whole_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("db");
        crate::Database::create(&p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(truncated(&p), None, "a whole file");
        assert_eq!(declared(&bytes), Declared::Len(bytes.len() as u64), "the header states the file's length");
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(truncated(&p), Some((bytes.len() as u64 / 2, bytes.len() as u64)));
        std::fs::write(&p, &bytes[..5]).unwrap();
        assert_eq!(truncated(&p), Some((5, 0)));
    }
}
