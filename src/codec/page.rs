//! Columnar pages: [`PageBuilder`] writes them, [`PageView`] reads them in place.
//!
//! A page value is `header (48) | tombstone bitmap | columns | key ends | key heap`:
//!
//! * the tombstone bitmap is `ceil(row_count / 64)` u64 words; bit `i % 64` of word `i / 64`
//!   set means row `first_row + i` is deleted; bits at and beyond `row_count` are zero;
//! * the columns follow, each `row_count * width` bytes (see [`super::layout`]);
//! * `row_count` u32 key ends: the key of row `i` is heap bytes `[end[i-1], end[i])` (with
//!   `end[-1] = 0`); ends strictly increase (keys are non-empty), each key is at most
//!   [`MAX_KEY_LEN`] bytes, and the last end equals `key_bytes`;
//! * the key heap: `key_bytes` bytes, the rows' keys back to back.
//!
//! The value is exactly [`page_len`]`(row_count, record_width, key_bytes)` bytes and its
//! crc32 covers every byte but the crc field itself. A page holds the contiguous run of row
//! ids `[first_row, first_row + row_count)`; `row_count <= capacity`.

use zerocopy::FromBytes;

use super::FORMAT_VERSION;
use super::error::CodecError;
use super::header::{FLAG_CARDINALITY, PAGE_HEADER_LEN, PAGE_MAGIC, PageHeader, page_crc};
use super::layout::{ColumnLayout, bitmap_len};
use crate::sketch::params::SketchKind;

const WHAT: &str = "page";

/// The longest user key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// The largest page capacity a collection definition or page header may state. A page of
/// at most 64 KiB holds fewer rows (each takes at least 6 bytes: a value, a key end and a
/// key byte); the bound keeps a damaged capacity from sizing a builder's buffers.
pub(crate) const MAX_PAGE_ROWS: u32 = 1 << 14;

/// What the owner of a page knows it must be: checked against the header on every read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageSpec {
    /// The owning collection.
    pub collection_id: u32,
    /// The collection's column layout.
    pub layout: ColumnLayout,
    /// The collection's maximum rows per page.
    pub capacity: u32,
}

/// The exact byte length of a page of `rows` rows of `record_width` bytes and `key_bytes`
/// bytes of keys.
pub(crate) fn page_len(rows: usize, record_width: usize, key_bytes: usize) -> usize {
    PAGE_HEADER_LEN + bitmap_len(rows) + rows * (record_width + 4) + key_bytes
}

/// Up to 8 little-endian bytes as a u64 (missing high bytes are 0).
pub(crate) fn read_le(bytes: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = bytes.len().min(8);
    a[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(a)
}

/// A checked, zero-copy view of a page value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageView<'a> {
    bytes: &'a [u8],
    layout: ColumnLayout,
    collection_id: u32,
    capacity: u32,
    first_row: u64,
    rows: usize,
    data: usize,
    ends: usize,
    heap: usize,
    /// Rows removed outside the page (`sketchdb.row_dead64`, or version 2's
    /// `sketchdb.row_dead` read by [`dead_words`]): the page's
    /// own tombstone bitmap ORed with these words is what the view reports. Empty: none.
    extra: &'a [u64],
}

impl<'a> PageView<'a> {
    /// Checks everything a page says about itself: length, magic, version, crc, a known
    /// layout, the exact length, the key ends and the tombstone padding bits.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<PageView<'a>, CodecError> {
        let (h, _) = PageHeader::ref_from_prefix(bytes).map_err(|_| CodecError::Truncated {
            what: WHAT,
            need: PAGE_HEADER_LEN,
            got: bytes.len(),
        })?;
        if h.magic != PAGE_MAGIC {
            return Err(CodecError::BadMagic { what: WHAT, found: h.magic, expected: PAGE_MAGIC });
        }
        let version = h.format_version.get();
        if version != FORMAT_VERSION {
            return Err(CodecError::UnsupportedVersion { what: WHAT, found: version, supported: FORMAT_VERSION });
        }
        let stored = h.crc32.get();
        let computed = page_crc(bytes);
        if stored != computed {
            return Err(CodecError::Checksum { what: WHAT, stored, computed });
        }
        if usize::from(h.header_len.get()) != PAGE_HEADER_LEN {
            return Err(CodecError::field(WHAT, "header_len", h.header_len.get(), PAGE_HEADER_LEN));
        }
        let kind = SketchKind::from_code(h.sketch_kind)
            .ok_or_else(|| CodecError::field(WHAT, "sketch_kind", h.sketch_kind, "1..=4"))?;
        if !matches!(h.value_width, 1 | 2 | 4 | 8) {
            return Err(CodecError::field(WHAT, "value_width", h.value_width, "1, 2, 4 or 8"));
        }
        if h.flags & !FLAG_CARDINALITY != 0 || h.reserved != 0 {
            return Err(CodecError::field(WHAT, "flags", h.flags, "only bit 0 set, reserved byte zero"));
        }
        let layout = ColumnLayout {
            kind,
            value_cols: h.value_cols.get(),
            value_width: h.value_width,
            word_cols: h.word_cols.get(),
            has_cardinality: h.flags & FLAG_CARDINALITY != 0,
        };
        let width = layout.record_width();
        if h.record_width.get() as usize != width || width == 0 {
            return Err(CodecError::field(WHAT, "record_width", h.record_width.get(), width));
        }
        let rows = h.row_count.get() as usize;
        let capacity = h.capacity.get();
        if capacity > MAX_PAGE_ROWS {
            return Err(CodecError::field(WHAT, "capacity", capacity, format!("at most {MAX_PAGE_ROWS} rows")));
        }
        if rows == 0 || rows > capacity as usize {
            return Err(CodecError::field(WHAT, "row_count", rows, format!("1..={capacity} (the capacity)")));
        }
        let first_row = h.first_row.get();
        if first_row.checked_add(rows as u64).is_none() {
            return Err(CodecError::field(WHAT, "first_row", first_row, "a run of row ids below 2^64"));
        }
        let key_bytes = h.key_bytes.get() as usize;
        let need = page_len(rows, width, key_bytes);
        if bytes.len() != need {
            return Err(CodecError::field(WHAT, "length", bytes.len(), need));
        }
        let data = PAGE_HEADER_LEN + bitmap_len(rows);
        let ends = data + rows * width;
        let view = PageView {
            bytes,
            layout,
            collection_id: h.collection_id.get(),
            capacity,
            first_row,
            rows,
            data,
            ends,
            heap: ends + 4 * rows,
            extra: &[],
        };
        if !rows.is_multiple_of(64) && view.own_tombstone_word(rows / 64) >> (rows % 64) != 0 {
            return Err(CodecError::field(WHAT, "tombstones", "bits set past row_count", "zero padding bits"));
        }
        let mut prev = 0usize;
        for i in 0..rows {
            let end = view.key_end(i);
            if end <= prev || end - prev > MAX_KEY_LEN {
                return Err(CodecError::field(
                    WHAT,
                    "key_ends",
                    format!("row {i} ends at {end} after {prev}"),
                    "keys of 1..=1024 bytes",
                ));
            }
            prev = end;
        }
        if prev != key_bytes {
            return Err(CodecError::field(WHAT, "key_bytes", key_bytes, prev));
        }
        Ok(view)
    }

    /// [`PageView::parse`], then checks the page belongs where it was found: the collection,
    /// its layout and capacity, and the first row it is stored under.
    pub(crate) fn parse_expected(bytes: &'a [u8], spec: &PageSpec, first_row: u64) -> Result<PageView<'a>, CodecError> {
        let v = Self::parse(bytes)?;
        if v.collection_id != spec.collection_id {
            return Err(CodecError::field(WHAT, "collection_id", v.collection_id, spec.collection_id));
        }
        if v.layout != spec.layout {
            return Err(CodecError::field(WHAT, "layout", format!("{:?}", v.layout), format!("{:?}", spec.layout)));
        }
        if v.capacity != spec.capacity {
            return Err(CodecError::field(WHAT, "capacity", v.capacity, spec.capacity));
        }
        if v.first_row != first_row {
            return Err(CodecError::field(WHAT, "first_row", v.first_row, first_row));
        }
        Ok(v)
    }

    /// What the page says it belongs to: collection, layout and capacity.
    pub(crate) fn spec(&self) -> PageSpec {
        PageSpec { collection_id: self.collection_id, layout: self.layout, capacity: self.capacity }
    }

    /// The row id of row 0.
    pub(crate) fn first_row(&self) -> u64 {
        self.first_row
    }
    /// The number of rows (live and deleted).
    pub(crate) fn row_count(&self) -> usize {
        self.rows
    }
    /// The page's column layout.
    pub(crate) fn layout(&self) -> &ColumnLayout {
        &self.layout
    }
    /// One past the last row id.
    pub(crate) fn end_row(&self) -> u64 {
        self.first_row + self.rows as u64
    }
    /// The index of `row` in this page, if it holds it.
    pub(crate) fn index_of(&self, row: u64) -> Option<usize> {
        row.checked_sub(self.first_row).filter(|&i| i < self.rows as u64).map(|i| i as usize)
    }

    /// This view with the rows of `words` (a checked side-table bitmap of this page, see
    /// [`check_dead_words`]) reported deleted too.
    pub(crate) fn with_dead<'b>(self, words: &'b [u64]) -> PageView<'b>
    where
        'a: 'b,
    {
        PageView { extra: words, ..self }
    }

    /// The page's own tombstone word `w`.
    fn own_tombstone_word(&self, w: usize) -> u64 {
        let at = PAGE_HEADER_LEN + 8 * w;
        self.bytes.get(at..at + 8).map_or(0, read_le)
    }

    /// Tombstone word `w`: the page's own bits and the side table's.
    pub(super) fn tombstone_word(&self, w: usize) -> u64 {
        self.own_tombstone_word(w) | self.extra.get(w).copied().unwrap_or(0)
    }

    fn key_end(&self, i: usize) -> usize {
        let at = self.ends + 4 * i;
        self.bytes.get(at..at + 4).map_or(0, read_le) as usize
    }

    /// Whether row `i` (an index into the page) is deleted.
    pub(crate) fn is_deleted(&self, i: usize) -> bool {
        self.tombstone_word(i / 64) >> (i % 64) & 1 == 1
    }

    /// Number of deleted rows.
    pub(crate) fn deleted_count(&self) -> usize {
        (0..self.rows.div_ceil(64)).map(|w| self.tombstone_word(w).count_ones() as usize).sum()
    }

    /// Row `i`'s key (empty if out of range).
    pub(crate) fn key(&self, i: usize) -> &'a [u8] {
        if i >= self.rows {
            return &[];
        }
        let start = if i == 0 { 0 } else { self.key_end(i - 1) };
        self.bytes.get(self.heap + start..self.heap + self.key_end(i)).unwrap_or(&[])
    }

    pub(super) fn column_at(&self, prefix: usize, width: usize) -> &'a [u8] {
        let start = self.data + prefix * self.rows;
        self.bytes.get(start..start + width * self.rows).unwrap_or(&[])
    }

    /// Value column `j`: `row_count` entries of `value_width` bytes (empty if out of range).
    pub(crate) fn value_column(&self, j: usize) -> &'a [u8] {
        if j >= usize::from(self.layout.value_cols) {
            return &[];
        }
        let w = usize::from(self.layout.value_width);
        self.column_at(j * w, w)
    }

    /// All value columns, one after the other (`value_cols * row_count` entries).
    pub(crate) fn value_columns(&self) -> &'a [u8] {
        self.column_at(0, self.layout.words_prefix())
    }

    /// Auxiliary u64 column `j` (empty if out of range).
    pub(crate) fn word_column(&self, j: usize) -> &'a [u8] {
        if j >= usize::from(self.layout.word_cols) {
            return &[];
        }
        self.column_at(self.layout.words_prefix() + 8 * j, 8)
    }

    /// The cardinality column, if the layout has one.
    pub(crate) fn cardinality_column(&self) -> Option<&'a [u8]> {
        self.layout.has_cardinality.then(|| self.column_at(self.layout.cardinality_prefix(), 8))
    }

    /// Entry `i` of value column `j`, zero-extended.
    pub(crate) fn value(&self, j: usize, i: usize) -> u64 {
        let w = usize::from(self.layout.value_width);
        self.value_column(j).get(i * w..(i + 1) * w).map_or(0, read_le)
    }

    /// Entry `i` of word column `j`.
    pub(crate) fn word(&self, j: usize, i: usize) -> u64 {
        self.word_column(j).get(i * 8..(i + 1) * 8).map_or(0, read_le)
    }

    /// Row `i`'s cardinality, if the layout has one.
    pub(crate) fn cardinality(&self, i: usize) -> Option<u64> {
        self.cardinality_column().map(|c| c.get(i * 8..(i + 1) * 8).map_or(0, read_le))
    }

    /// Fails unless `i` is a row of this page.
    pub(crate) fn check_row(&self, i: usize) -> Result<(), CodecError> {
        if i >= self.rows {
            return Err(CodecError::RowOutOfRange { index: i, rows: self.rows });
        }
        Ok(())
    }
}

/// The words of a `sketchdb.row_dead` value: the page's removed rows as a bitmap laid out
/// like its tombstone bitmap (u64 little-endian words, bit `i % 64` of word `i / 64` = row
/// `first_row + i`). The value's length must be a nonzero multiple of 8.
pub(crate) fn dead_words(bytes: &[u8]) -> Result<Vec<u64>, CodecError> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(8) {
        return Err(CodecError::field("removed-rows bitmap", "length", bytes.len(), "a nonzero multiple of 8 bytes"));
    }
    Ok(bytes.chunks_exact(8).map(read_le).collect())
}

/// The value bytes of a removed-rows bitmap (version 2's entries; tests).
#[cfg(test)]
pub(crate) fn dead_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Checks a removed-rows bitmap against the page it belongs to: exactly the page's
/// tombstone length, no bit at or past `row_count`, at least one bit, and no bit the page's
/// own bitmap already has (a row is removed in one place only).
pub(crate) fn check_dead_words(view: &PageView<'_>, words: &[u64]) -> Result<(), CodecError> {
    const WHAT: &str = "removed-rows bitmap";
    let rows = view.row_count();
    if words.len() != rows.div_ceil(64) {
        return Err(CodecError::field(WHAT, "length", words.len() * 8, bitmap_len(rows)));
    }
    if !rows.is_multiple_of(64) && words[rows / 64] >> (rows % 64) != 0 {
        let past = (rows / 64) * 64 + (63 - words[rows / 64].leading_zeros() as usize);
        return Err(CodecError::field(
            WHAT,
            "bits",
            format!("row index {past} removed"),
            format!("rows below the page's row_count {rows}"),
        ));
    }
    if words.iter().all(|&w| w == 0) {
        return Err(CodecError::field(WHAT, "bits", "no row", "at least one removed row"));
    }
    if let Some(w) = (0..words.len()).find(|&w| words[w] & view.own_tombstone_word(w) != 0) {
        let i = w * 64 + (words[w] & view.own_tombstone_word(w)).trailing_zeros() as usize;
        return Err(CodecError::field(WHAT, "bits", format!("row index {i} removed twice"), "rows live in the page"));
    }
    Ok(())
}
