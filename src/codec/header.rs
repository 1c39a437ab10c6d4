//! The columnar page header: 48 bytes at the start of every page value.
//!
//! ```text
//! offset width field          meaning
//!      0     4 magic          b"SKPG"
//!      4     2 format_version u16, FORMAT_VERSION (1)
//!      6     2 header_len     u16, 48: where the tombstone bitmap starts
//!      8     4 crc32          u32, crc32 (IEEE) of bytes 0..8 followed by bytes 12..end
//!     12     4 collection_id  u32, the owning collection
//!     16     8 first_row      u64, row id of the page's first row
//!     24     4 row_count      u32, rows in the page (1..=capacity)
//!     28     4 capacity       u32, the collection's maximum rows per page
//!     32     4 record_width   u32, bytes per row over all columns
//!     36     1 sketch_kind    u8, SketchKind code (1 MinHash, 2 b-bit, 3 OPH, 4 SimHash)
//!     37     1 value_width    u8, bytes per value column entry: 1, 2, 4 or 8
//!     38     2 value_cols     u16, number of value columns
//!     40     2 word_cols      u16, number of u64 auxiliary columns
//!     42     1 flags          u8, bit 0: a u64 cardinality column follows; others zero
//!     43     1 reserved       zero
//!     44     4 key_bytes      u32, total bytes of the keys in the key heap
//! ```
//!
//! All integers little-endian. The struct is `Unaligned`, so it is read in place from any
//! byte slice.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The page magic.
pub(crate) const PAGE_MAGIC: [u8; 4] = *b"SKPG";
/// Offset of `magic` ([u8; 4]).
pub(crate) const MAGIC_OFFSET: usize = 0;
/// Offset of `format_version` (u16).
pub(crate) const VERSION_OFFSET: usize = 4;
/// Offset of `header_len` (u16).
pub(crate) const HEADER_LEN_OFFSET: usize = 6;
/// Offset of `crc32` (u32).
pub(crate) const CRC_OFFSET: usize = 8;
/// Width of `crc32`.
pub(crate) const CRC_LEN: usize = 4;
/// Offset of `collection_id` (u32).
pub(crate) const COLLECTION_ID_OFFSET: usize = 12;
/// Offset of `first_row` (u64).
pub(crate) const FIRST_ROW_OFFSET: usize = 16;
/// Offset of `row_count` (u32).
pub(crate) const ROW_COUNT_OFFSET: usize = 24;
/// Offset of `capacity` (u32).
pub(crate) const CAPACITY_OFFSET: usize = 28;
/// Offset of `record_width` (u32).
pub(crate) const RECORD_WIDTH_OFFSET: usize = 32;
/// Offset of `sketch_kind` (u8).
pub(crate) const KIND_OFFSET: usize = 36;
/// Offset of `value_width` (u8).
pub(crate) const VALUE_WIDTH_OFFSET: usize = 37;
/// Offset of `value_cols` (u16).
pub(crate) const VALUE_COLS_OFFSET: usize = 38;
/// Offset of `word_cols` (u16).
pub(crate) const WORD_COLS_OFFSET: usize = 40;
/// Offset of `flags` (u8).
pub(crate) const FLAGS_OFFSET: usize = 42;
/// Offset of the reserved byte.
pub(crate) const RESERVED_OFFSET: usize = 43;
/// Offset of `key_bytes` (u32).
pub(crate) const KEY_BYTES_OFFSET: usize = 44;
/// The header's length; the tombstone bitmap starts here.
pub(crate) const PAGE_HEADER_LEN: usize = 48;
/// `flags` bit 0: the page has a cardinality column.
pub(crate) const FLAG_CARDINALITY: u8 = 1;

/// The page header as laid out on disk.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct PageHeader {
    pub magic: [u8; 4],
    pub format_version: U16,
    pub header_len: U16,
    pub crc32: U32,
    pub collection_id: U32,
    pub first_row: U64,
    pub row_count: U32,
    pub capacity: U32,
    pub record_width: U32,
    pub sketch_kind: u8,
    pub value_width: u8,
    pub value_cols: U16,
    pub word_cols: U16,
    pub flags: u8,
    pub reserved: u8,
    pub key_bytes: U32,
}

// The constants above are the spec; these assertions tie the struct to them.
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<PageHeader>() == PAGE_HEADER_LEN);
    assert!(offset_of!(PageHeader, magic) == MAGIC_OFFSET);
    assert!(offset_of!(PageHeader, format_version) == VERSION_OFFSET);
    assert!(offset_of!(PageHeader, header_len) == HEADER_LEN_OFFSET);
    assert!(offset_of!(PageHeader, crc32) == CRC_OFFSET);
    assert!(offset_of!(PageHeader, collection_id) == COLLECTION_ID_OFFSET);
    assert!(offset_of!(PageHeader, first_row) == FIRST_ROW_OFFSET);
    assert!(offset_of!(PageHeader, row_count) == ROW_COUNT_OFFSET);
    assert!(offset_of!(PageHeader, capacity) == CAPACITY_OFFSET);
    assert!(offset_of!(PageHeader, record_width) == RECORD_WIDTH_OFFSET);
    assert!(offset_of!(PageHeader, sketch_kind) == KIND_OFFSET);
    assert!(offset_of!(PageHeader, value_width) == VALUE_WIDTH_OFFSET);
    assert!(offset_of!(PageHeader, value_cols) == VALUE_COLS_OFFSET);
    assert!(offset_of!(PageHeader, word_cols) == WORD_COLS_OFFSET);
    assert!(offset_of!(PageHeader, flags) == FLAGS_OFFSET);
    assert!(offset_of!(PageHeader, reserved) == RESERVED_OFFSET);
    assert!(offset_of!(PageHeader, key_bytes) == KEY_BYTES_OFFSET);
};

/// The crc32 of a whole page except its `crc32` field.
pub(crate) fn page_crc(page: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(page.get(..CRC_OFFSET).unwrap_or(page));
    h.update(page.get(CRC_OFFSET + CRC_LEN..).unwrap_or(&[]));
    h.finalize()
}
