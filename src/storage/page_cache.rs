//! The record pages of one write transaction ([`PageCache`]): every touched page is built
//! once. The open tail page is loaded (or started) on the first append and written back when
//! full or at the end; a page that loses rows to deletes is loaded once, its tombstone bits
//! set, and written back at the end. A large batch of inserts has its pages built on another
//! thread ([`build_pages`]) while the writer writes the keys.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use super::catalog::{CollectionInfo, page_fits};
use super::error::{StorageError, show_key};
use super::rules::{corrupt_page, inconsistent};
use super::tables::PAGES;
use crate::codec::page::{PageBuilder, PageView};
use crate::codec::record::{decode_row, push_sketch};
use crate::sketch::sketcher::Sketch;

/// The pages one write transaction touches, each built once. Pages are keyed by first row.
pub(crate) struct PageCache<'t, 'i> {
    info: &'i CollectionInfo,
    table: Table<'t, (u32, u64), &'static [u8]>,
    tail: Option<PageBuilder>,
    tail_looked_up: bool,
    dirty: BTreeMap<u64, PageBuilder>,
}

impl<'t, 'i> PageCache<'t, 'i> {
    pub(crate) fn new(txn: &'t WriteTransaction, info: &'i CollectionInfo) -> Result<Self, StorageError> {
        let table = txn.open_table(PAGES).map_err(StorageError::backend("open table"))?;
        Ok(PageCache { info, table, tail: None, tail_looked_up: false, dirty: BTreeMap::new() })
    }

    /// The stored page with the greatest first row `<= row`, as a builder.
    fn load_at_or_before(&self, row: u64) -> Result<Option<PageBuilder>, StorageError> {
        let id = self.info.def.id;
        let mut range = self.table.range((id, 0u64)..=(id, row)).map_err(StorageError::backend("read page"))?;
        let Some(entry) = range.next_back() else { return Ok(None) };
        let (k, v) = entry.map_err(StorageError::backend("read page"))?;
        let first = k.value().1;
        let view =
            PageView::parse_expected(v.value(), &self.info.spec, first).map_err(corrupt_page(self.info, first))?;
        Ok(Some(PageBuilder::from_view(&view)))
    }

    /// Removes a stored page (compaction), returning its builder copy.
    pub(crate) fn take(&mut self, first_row: u64) -> Result<Option<PageBuilder>, StorageError> {
        // The tail may hold rows appended in this transaction: store it before taking.
        self.flush_tail()?;
        self.tail_looked_up = false;
        let b = match self.dirty.remove(&first_row) {
            Some(b) => Some(b),
            None => self.load_at_or_before(first_row)?.filter(|b| b.first_row() == first_row),
        };
        if b.is_some() {
            self.table.remove((self.info.def.id, first_row)).map_err(StorageError::backend("remove page"))?;
        }
        Ok(b)
    }

    fn write(&mut self, b: &PageBuilder) -> Result<(), StorageError> {
        let mut guard = self
            .table
            .insert_reserve((self.info.def.id, b.first_row()), b.len())
            .map_err(StorageError::backend("write page"))?;
        b.finish_into(guard.as_mut());
        Ok(())
    }

    /// Appends `sketch` with `key` as row `next_row` (the collection's next row id).
    pub(crate) fn append(&mut self, next_row: u64, key: &[u8], sketch: &Sketch) -> Result<u64, StorageError> {
        self.find_tail(next_row)?;
        if let Some(t) = &self.tail
            && (t.is_full() || (t.row_count() > 0 && !page_fits(t.len_with(key.len()))))
        {
            self.flush_tail()?;
        }
        let tail = self.tail.get_or_insert_with(|| PageBuilder::new(self.info.spec, next_row));
        let first = tail.first_row();
        let row = push_sketch(tail, key, sketch).map_err(corrupt_page(self.info, first))?;
        if row != next_row {
            return Err(inconsistent(self.info, next_row, format!("the tail page appends at row {row}")));
        }
        Ok(row)
    }

    /// Looks up, once per transaction, the page the next append continues: the collection's
    /// last page when it ends at `next_row` and has room (else none; the append starts one).
    fn find_tail(&mut self, next_row: u64) -> Result<(), StorageError> {
        if self.tail.is_none() && !self.tail_looked_up {
            self.tail_looked_up = true;
            // The collection's last page: a copy dirtied earlier in this transaction
            // supersedes the stored one.
            let last_dirty = self.dirty.last_key_value().map(|(k, _)| *k);
            let stored = self.load_at_or_before(u64::MAX)?;
            let (last, was_dirty) = match (last_dirty, stored) {
                (Some(d), s) if s.as_ref().is_none_or(|s| d >= s.first_row()) => (self.dirty.remove(&d), true),
                (_, s) => (s, false),
            };
            if let Some(last) = last {
                if last.next_row() > next_row {
                    return Err(inconsistent(self.info, next_row, "a page holds rows at or past next_row"));
                }
                if last.next_row() == next_row && !last.is_full() {
                    self.tail = Some(last);
                } else if was_dirty {
                    self.dirty.insert(last.first_row(), last);
                }
            }
        }
        Ok(())
    }

    /// Hands the page the next append continues (see [`Self::find_tail`]) to a builder on
    /// another thread ([`build_pages`]); none when the next append starts a page.
    pub(crate) fn take_tail(&mut self, next_row: u64) -> Result<Option<PageBuilder>, StorageError> {
        self.find_tail(next_row)?;
        Ok(self.tail.take())
    }

    /// Takes back what [`build_pages`] built: its full pages are stored, its last page
    /// becomes the tail (written at [`Self::flush`]).
    pub(crate) fn put_built(&mut self, built: BuiltPages) -> Result<(), StorageError> {
        for b in &built.full {
            self.write(b)?;
        }
        self.tail = built.last;
        Ok(())
    }

    fn flush_tail(&mut self) -> Result<(), StorageError> {
        if let Some(b) = self.tail.take()
            && b.row_count() > 0
        {
            self.write(&b)?;
        }
        Ok(())
    }

    /// Tombstones `row`, which must be a live row whose key is `key`; returns the row's
    /// sketch, for the index hook (indexes derive the entries to remove from it).
    pub(crate) fn delete(&mut self, row: u64, key: &[u8]) -> Result<Sketch, StorageError> {
        let info = self.info;
        let holds = |b: &PageBuilder| b.first_row() <= row && row < b.next_row();
        let b = match &mut self.tail {
            Some(t) if holds(t) => t,
            _ => {
                let cached = self.dirty.range(..=row).next_back().map(|(k, b)| (*k, holds(b)));
                let first = match cached {
                    Some((k, true)) => k,
                    _ => {
                        let b = self
                            .load_at_or_before(row)?
                            .filter(holds)
                            .ok_or_else(|| inconsistent(info, row, "a key maps to a row no page holds"))?;
                        let k = b.first_row();
                        self.dirty.insert(k, b);
                        k
                    }
                };
                self.dirty.get_mut(&first).ok_or_else(|| inconsistent(info, row, "page cache lost a page"))?
            }
        };
        let i = (row - b.first_row()) as usize;
        if b.key(i) != key {
            return Err(inconsistent(info, row, format!("the row's key is not {}", show_key(key))));
        }
        let sketch = decode_row(&*b, i, &info.def.params).map_err(|source| StorageError::CorruptRow {
            collection: info.def.name.clone(),
            page: b.first_row(),
            row,
            source: Box::new(source),
        })?;
        match b.set_deleted(i) {
            Ok(true) => Ok(sketch),
            Ok(false) => Err(inconsistent(info, row, "a key maps to a deleted row")),
            Err(e) => Err(inconsistent(info, row, e)),
        }
    }

    /// Writes every touched page back.
    pub(crate) fn flush(mut self) -> Result<(), StorageError> {
        self.flush_tail()?;
        for b in std::mem::take(&mut self.dirty).into_values() {
            self.write(&b)?;
        }
        Ok(())
    }
}

/// Batches of at least this many rows, all inserts, have their pages built on another
/// thread while this one writes the keys (below it, the thread costs more than it saves).
pub(crate) const BUILD_PAGES_MIN_ROWS: usize = 1024;

/// Pages [`build_pages`] filled: the full ones, in row order, and the last one (with room).
pub(crate) struct BuiltPages {
    full: Vec<PageBuilder>,
    last: Option<PageBuilder>,
}

/// Appends `rows` (key and sketch each) as rows `next_row, next_row + 1, ...` to `tail` (the
/// page the collection's next row continues, if any) and to new pages, exactly as
/// [`PageCache::append`] one at a time would.
pub(crate) fn build_pages(
    info: &CollectionInfo,
    mut tail: Option<PageBuilder>,
    mut next_row: u64,
    rows: &[(&[u8], &Sketch)],
) -> Result<BuiltPages, StorageError> {
    let mut full = Vec::with_capacity(rows.len() / info.spec.capacity.max(1) as usize + 1);
    for &(key, sketch) in rows {
        if let Some(t) = tail.take_if(|t| t.is_full() || (t.row_count() > 0 && !page_fits(t.len_with(key.len())))) {
            full.push(t);
        }
        let page = tail.get_or_insert_with(|| PageBuilder::new(info.spec, next_row));
        let first = page.first_row();
        let row = push_sketch(page, key, sketch).map_err(corrupt_page(info, first))?;
        if row != next_row {
            return Err(inconsistent(info, next_row, format!("the tail page appends at row {row}")));
        }
        next_row += 1;
    }
    Ok(BuiltPages { full, last: tail })
}
