//! [`PageBuilder`]: writes one columnar page (the layout is in [`super::page`]).
//!
//! A row is appended row-major into a small staging area and moved into the columns when
//! [`STAGE_ROWS`] rows have gathered (or the page is finished): writing a record's cells
//! straight into their columns touches one cache line per cell, a block transposed at once
//! touches one per column.

use zerocopy::little_endian::{U16, U32, U64};

use super::FORMAT_VERSION;
use super::error::CodecError;
use super::header::{CRC_OFFSET, FLAG_CARDINALITY, PAGE_HEADER_LEN, PAGE_MAGIC, PageHeader, page_crc};
use super::page::{MAX_KEY_LEN, PageSpec, PageView, page_len};

const WHAT: &str = "page";

/// Rows gathered row-major before they are moved into the columns.
const STAGE_ROWS: usize = 64;

/// Builds one page: rows are appended at the end of the page's run, rows may be marked
/// deleted, and [`PageBuilder::finish`] lays the columns out and seals the crc.
///
/// Internally each column has room for `capacity` rows; `finish` packs them to stride
/// `row_count`.
#[derive(Clone, Debug)]
pub(crate) struct PageBuilder {
    spec: PageSpec,
    first_row: u64,
    rows: usize,
    max_rows: usize,
    tombstones: Vec<u64>,
    /// Column `c` (at byte `prefix` of a record, `width` bytes an entry) holds row `i` at
    /// `prefix * max_rows + i * width`, for the rows before `settled`.
    data: Vec<u8>,
    /// Rows `settled..rows`, row-major: row `settled + r`'s cell of the column at `prefix`
    /// is at `r * record_width + prefix`. At most [`STAGE_ROWS`] rows; every reader looks
    /// here for them.
    staged: Vec<u8>,
    settled: usize,
    key_ends: Vec<u32>,
    keys: Vec<u8>,
}

impl PageBuilder {
    /// An empty page whose first row will be `first_row`.
    /// `spec.capacity` is 1..=[`MAX_PAGE_ROWS`](super::page::MAX_PAGE_ROWS) (checked where a spec comes from bytes).
    pub(crate) fn new(spec: PageSpec, first_row: u64) -> PageBuilder {
        let max_rows = spec.capacity as usize;
        PageBuilder {
            spec,
            first_row,
            rows: 0,
            max_rows,
            tombstones: vec![0; max_rows.div_ceil(64)],
            data: vec![0; max_rows * spec.layout.record_width()],
            staged: Vec::new(),
            settled: 0,
            key_ends: Vec::with_capacity(max_rows),
            keys: Vec::new(),
        }
    }

    /// A builder holding a copy of an existing page, with the page's own spec.
    pub(crate) fn from_view(view: &PageView<'_>) -> PageBuilder {
        let mut b = PageBuilder::new(view.spec(), view.first_row());
        let n = view.row_count();
        b.rows = n;
        b.settled = n;
        for w in 0..n.div_ceil(64) {
            b.tombstones[w] = view.tombstone_word(w);
        }
        for i in 0..n {
            b.keys.extend_from_slice(view.key(i));
            b.key_ends.push(b.keys.len() as u32);
        }
        for (prefix, width) in b.spec.layout.columns() {
            let src = view.column_at(prefix, width);
            let dst = prefix * b.max_rows;
            let len = src.len().min(width * n);
            if let (Some(d), Some(s)) = (b.data.get_mut(dst..dst + len), src.get(..len)) {
                d.copy_from_slice(s);
            }
        }
        b
    }

    /// The page's spec.
    pub(crate) fn spec(&self) -> &PageSpec {
        &self.spec
    }
    /// Row id of the page's first row.
    pub(crate) fn first_row(&self) -> u64 {
        self.first_row
    }
    /// Rows held so far.
    pub(crate) fn row_count(&self) -> usize {
        self.rows
    }
    /// The row id the next appended row gets.
    pub(crate) fn next_row(&self) -> u64 {
        self.first_row + self.rows as u64
    }
    /// Whether the page holds `capacity` rows.
    pub(crate) fn is_full(&self) -> bool {
        self.rows >= self.max_rows
    }
    /// The page's length after appending one more row with a key of `key_len` bytes.
    pub(crate) fn len_with(&self, key_len: usize) -> usize {
        page_len(self.rows + 1, self.spec.layout.record_width(), self.keys.len() + key_len)
    }

    /// Row index `i`'s key (empty if out of range).
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends.get(i - 1).map_or(0, |&e| e as usize) };
        let end = self.key_ends.get(i).map_or(0, |&e| e as usize);
        self.keys.get(start..end).unwrap_or(&[])
    }

    /// Marks row index `i` deleted; returns whether it was live.
    pub(crate) fn set_deleted(&mut self, i: usize) -> Result<bool, CodecError> {
        if i >= self.rows {
            return Err(CodecError::RowOutOfRange { index: i, rows: self.rows });
        }
        let word = &mut self.tombstones[i / 64];
        let was_live = *word >> (i % 64) & 1 == 0;
        *word |= 1 << (i % 64);
        Ok(was_live)
    }

    /// Marks deleted every row whose bit `words` has (a removed-rows bitmap of this page's
    /// current rows, see [`dead_words`]); fails when `words` does not fit the rows.
    pub(crate) fn or_deleted(&mut self, words: &[u64]) -> Result<(), CodecError> {
        let rows = self.rows;
        if words.len() != rows.div_ceil(64) || (!rows.is_multiple_of(64) && words[rows / 64] >> (rows % 64) != 0) {
            return Err(CodecError::field(
                "removed-rows bitmap",
                "bits",
                format!("{} words", words.len()),
                format!("bits of the page's {rows} rows only"),
            ));
        }
        for (t, w) in self.tombstones.iter_mut().zip(words) {
            *t |= w;
        }
        Ok(())
    }

    /// Appends a zeroed row with `key` and returns its index; fails when the page is full or
    /// the key is empty or longer than [`MAX_KEY_LEN`].
    pub(crate) fn begin_row(&mut self, key: &[u8]) -> Result<usize, CodecError> {
        if self.is_full() {
            return Err(CodecError::RowOutOfRange { index: self.rows, rows: self.max_rows });
        }
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(CodecError::field(WHAT, "key", format!("{} bytes", key.len()), "1..=1024 bytes"));
        }
        let end = u32::try_from(self.keys.len() + key.len())
            .map_err(|_| CodecError::field(WHAT, "key_bytes", "over 4 GiB", "under 4 GiB"))?;
        if self.rows - self.settled >= STAGE_ROWS {
            self.settle();
        }
        self.keys.extend_from_slice(key);
        self.key_ends.push(end);
        let width = self.spec.layout.record_width();
        self.staged.resize(self.staged.len() + width, 0);
        self.rows += 1;
        Ok(self.rows - 1)
    }

    /// [`Self::begin_row`], returning the new row's zeroed cells in signature order
    /// (see [`super::signature`]): the row is written by filling them.
    pub(crate) fn begin_row_cells(&mut self, key: &[u8]) -> Result<&mut [u8], CodecError> {
        let i = self.begin_row(key)?;
        let width = self.spec.layout.record_width();
        let at = (i - self.settled) * width;
        Ok(self.staged.get_mut(at..at + width).unwrap_or_default())
    }

    /// Moves the staged rows into their columns, one column at a time.
    fn settle(&mut self) {
        let n = self.rows - self.settled;
        if n == 0 {
            return;
        }
        let record = self.spec.layout.record_width();
        let (staged, data) = (&self.staged, &mut self.data);
        let (max_rows, settled) = (self.max_rows, self.settled);
        for (prefix, width) in self.spec.layout.columns() {
            let at = prefix * max_rows + settled * width;
            if let Some(dst) = data.get_mut(at..at + n * width) {
                match width {
                    1 => transpose::<1>(dst, staged, record, prefix),
                    2 => transpose::<2>(dst, staged, record, prefix),
                    4 => transpose::<4>(dst, staged, record, prefix),
                    8 => transpose::<8>(dst, staged, record, prefix),
                    _ => {
                        for (r, d) in dst.chunks_exact_mut(width).enumerate() {
                            if let Some(s) = staged.get(r * record + prefix..r * record + prefix + width) {
                                d.copy_from_slice(s);
                            }
                        }
                    }
                }
            }
        }
        self.staged.clear();
        self.settled = self.rows;
    }

    /// Where entry `i` of the column at `prefix` is: in the staging area or in `data`.
    fn cell(&self, prefix: usize, width: usize, i: usize) -> (bool, usize) {
        if i >= self.settled {
            (true, (i - self.settled) * self.spec.layout.record_width() + prefix)
        } else {
            (false, prefix * self.max_rows + i * width)
        }
    }

    /// Entry `i` of value column `j` (0 out of range).
    pub(crate) fn value(&self, j: usize, i: usize) -> u64 {
        let w = usize::from(self.spec.layout.value_width);
        self.get(j * w, w, i)
    }

    /// Entry `i` of word column `j` (0 out of range).
    pub(crate) fn word(&self, j: usize, i: usize) -> u64 {
        self.get(self.spec.layout.words_prefix() + 8 * j, 8, i)
    }

    /// Row `i`'s cardinality, if the layout has one (0 out of range).
    pub(crate) fn cardinality(&self, i: usize) -> Option<u64> {
        let layout = &self.spec.layout;
        layout.has_cardinality.then(|| self.get(layout.cardinality_prefix(), 8, i))
    }

    /// Entry `i` of the column of `width`-byte entries at `prefix` (bytes per row before it).
    fn get(&self, prefix: usize, width: usize, i: usize) -> u64 {
        let (staged, at) = self.cell(prefix, width, i);
        let bytes = if staged { &self.staged } else { &self.data };
        let mut b = [0u8; 8];
        if let Some(s) = bytes.get(at..at + width) {
            b[..width].copy_from_slice(s);
        }
        u64::from_le_bytes(b)
    }

    /// The page's final length.
    pub(crate) fn len(&self) -> usize {
        page_len(self.rows, self.spec.layout.record_width(), self.keys.len())
    }

    /// The page value: header, tombstones, packed columns and keys, crc sealed.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = vec![0u8; self.len()];
        self.finish_into(&mut out);
        out
    }

    /// Writes the page value into `out`, which must be exactly [`PageBuilder::len`] bytes
    /// (as the storage engine's reserved value space is); a shorter buffer gets a truncated, invalid page.
    pub(crate) fn finish_into(&mut self, out: &mut [u8]) {
        self.settle();
        let layout = &self.spec.layout;
        let n = self.rows;
        let width = layout.record_width();
        let header = PageHeader {
            magic: PAGE_MAGIC,
            format_version: U16::new(FORMAT_VERSION),
            header_len: U16::new(PAGE_HEADER_LEN as u16),
            crc32: U32::new(0),
            collection_id: U32::new(self.spec.collection_id),
            first_row: U64::new(self.first_row),
            row_count: U32::new(n as u32),
            capacity: U32::new(self.spec.capacity),
            record_width: U32::new(width as u32),
            sketch_kind: layout.kind.code(),
            value_width: layout.value_width,
            value_cols: U16::new(layout.value_cols),
            word_cols: U16::new(layout.word_cols),
            flags: if layout.has_cardinality { FLAG_CARDINALITY } else { 0 },
            reserved: 0,
            key_bytes: U32::new(self.keys.len() as u32),
        };
        let mut at = 0usize;
        let mut put = |src: &[u8]| {
            if let Some(d) = out.get_mut(at..at + src.len()) {
                d.copy_from_slice(src);
            }
            at += src.len();
        };
        put(zerocopy::IntoBytes::as_bytes(&header));
        for w in self.tombstones.iter().take(n.div_ceil(64)) {
            put(&w.to_le_bytes());
        }
        for (prefix, w) in layout.columns() {
            let start = prefix * self.max_rows;
            put(self.data.get(start..start + w * n).unwrap_or(&[]));
        }
        for e in &self.key_ends {
            put(&e.to_le_bytes());
        }
        put(&self.keys);
        let crc = page_crc(out);
        if let Some(c) = out.get_mut(CRC_OFFSET..CRC_OFFSET + 4) {
            c.copy_from_slice(&crc.to_le_bytes());
        }
    }
}

/// Copies entry `W` bytes wide at `prefix` of each staged record (`record` bytes apart) into
/// consecutive entries of `dst`.
fn transpose<const W: usize>(dst: &mut [u8], staged: &[u8], record: usize, prefix: usize) {
    for (d, rec) in dst.chunks_exact_mut(W).zip(staged.chunks_exact(record)) {
        if let Some(s) = rec.get(prefix..prefix + W) {
            d.copy_from_slice(s);
        }
    }
}
