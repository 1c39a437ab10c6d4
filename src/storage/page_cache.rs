//! The pages of one write transaction ([`PageCache`]): every touched page is built once. The
//! open tail page is loaded (or started) on the first append and written back when full or
//! at the end. A row removed from any other page is marked in its chunk's
//! `sketchdb.row_dead64` entry (one u64 per 64 rows, written at the end; see
//! [`super::dead`]): the page itself is not read unless an index needs the row's record.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use super::catalog::{CollectionInfo, page_fits};
use super::dead_write::DeadWriter;
use super::error::{StorageError, show_key};
use super::rules::{corrupt_page, inconsistent};
use super::tables::PAGES;
use crate::codec::page::{PageView, check_dead_words};
use crate::codec::page_builder::PageBuilder;
use crate::codec::record::{decode_row, push_sketch};
use crate::sketch::sketcher::Sketch;

/// The pages one write transaction touches, each built once. Pages are keyed by first row.
/// A row removed from a page the transaction does not otherwise rewrite is recorded in the
/// row's chunk entry in `sketchdb.row_dead64` instead (see [`super::dead`]); a page it
/// rewrites (the tail it appends to, a page compaction takes) absorbs its rows' bits.
pub(crate) struct PageCache<'t, 'i> {
    info: &'i CollectionInfo,
    table: Table<'t, (u32, u64), &'static [u8]>,
    dead: DeadWriter<'t>,
    tail: Option<PageBuilder>,
    tail_looked_up: bool,
    dirty: BTreeMap<u64, PageBuilder>,
}

impl<'t, 'i> PageCache<'t, 'i> {
    pub(crate) fn new(txn: &'t WriteTransaction, info: &'i CollectionInfo) -> Result<Self, StorageError> {
        let table = txn.open_table(PAGES).map_err(StorageError::backend("open table"))?;
        let dead = DeadWriter::new(txn, info)?;
        Ok(PageCache { info, table, dead, tail: None, tail_looked_up: false, dirty: BTreeMap::new() })
    }

    /// The stored page with the greatest first row `<= row`, as a builder of the page's own
    /// bytes (its side-table entry is checked against it, not folded in: see [`Self::fold`]).
    fn load_at_or_before(&mut self, row: u64) -> Result<Option<PageBuilder>, StorageError> {
        let id = self.info.def.id;
        let mut range = self.table.range((id, 0u64)..=(id, row)).map_err(StorageError::backend("read page"))?;
        let Some(entry) = range.next_back() else { return Ok(None) };
        let (k, v) = entry.map_err(StorageError::backend("read page"))?;
        let first = k.value().1;
        let view =
            PageView::parse_expected(v.value(), &self.info.spec, first).map_err(corrupt_page(self.info, first))?;
        if let Some(w) = self.dead.words(self.info, first, view.row_count())? {
            check_dead_words(&view, &w).map_err(corrupt_page(self.info, first))?;
        }
        Ok(Some(PageBuilder::from_view(&view)))
    }

    /// `b` (a stored page about to be rewritten) with its side-table entry folded into its
    /// tombstones and the entry removed.
    fn fold(&mut self, mut b: PageBuilder) -> Result<PageBuilder, StorageError> {
        if let Some(words) = self.dead.take(self.info, b.first_row(), b.row_count())? {
            b.or_deleted(&words).map_err(corrupt_page(self.info, b.first_row()))?;
        }
        Ok(b)
    }

    /// Removes a stored page (compaction), returning its builder copy with every removed
    /// row (the side table's included) marked.
    pub(crate) fn take(&mut self, first_row: u64) -> Result<Option<PageBuilder>, StorageError> {
        // The tail may hold rows appended in this transaction: store it before taking.
        self.flush_tail()?;
        self.tail_looked_up = false;
        let b = match self.dirty.remove(&first_row) {
            Some(b) => Some(b),
            None => match self.load_at_or_before(first_row)? {
                Some(b) if b.first_row() == first_row => Some(self.fold(b)?),
                _ => None,
            },
        };
        if b.is_some() {
            self.table.remove((self.info.def.id, first_row)).map_err(StorageError::backend("remove page"))?;
        }
        Ok(b)
    }

    fn write(&mut self, b: &mut PageBuilder) -> Result<(), StorageError> {
        let mut guard = self
            .table
            .insert_reserve((self.info.def.id, b.first_row()), b.len())
            .map_err(StorageError::backend("write page"))?;
        b.finish_into(guard.as_mut());
        Ok(())
    }

    /// Appends `sketch` with `key` as row `next_row` (the collection's next row id).
    pub(crate) fn append(&mut self, next_row: u64, key: &[u8], sketch: &Sketch) -> Result<u64, StorageError> {
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
                    // The tail is rewritten: it absorbs its side-table entry.
                    self.tail = Some(if was_dirty { last } else { self.fold(last)? });
                } else if was_dirty {
                    self.dirty.insert(last.first_row(), last);
                }
            }
        }
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

    fn flush_tail(&mut self) -> Result<(), StorageError> {
        if let Some(mut b) = self.tail.take()
            && b.row_count() > 0
        {
            self.write(&mut b)?;
        }
        Ok(())
    }

    /// Removes `row`, which must be a live row whose key is `key`; returns the row's sketch
    /// when `sketch` asks for it (an index hook that derives the entries to remove from it).
    /// A row of a page this transaction rewrites gets its tombstone bit (the page is in
    /// memory: its key and liveness are checked); any other row gets its bit in its chunk's
    /// side-table entry, and its page is read only when the sketch is asked for (then the
    /// key and the page's own tombstone are checked too). A row already in the side table is
    /// refused either way.
    pub(crate) fn delete(&mut self, row: u64, key: &[u8], sketch: bool) -> Result<Option<Sketch>, StorageError> {
        let info = self.info;
        let holds = |b: &PageBuilder| b.first_row() <= row && row < b.next_row();
        let b = match &mut self.tail {
            Some(t) if holds(t) => t,
            _ => match self.dirty.range_mut(..=row).next_back() {
                Some((_, b)) if holds(b) => b,
                _ if sketch => return self.delete_stored(row, key).map(Some),
                _ => return self.dead.mark(info, row).map(|()| None),
            },
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
            Ok(true) => Ok(Some(sketch)),
            Ok(false) => Err(inconsistent(info, row, "a key maps to a deleted row")),
            Err(e) => Err(inconsistent(info, row, e)),
        }
    }

    /// [`Self::delete`] of a row of a stored page this transaction does not rewrite, reading
    /// the page for the row's sketch.
    fn delete_stored(&mut self, row: u64, key: &[u8]) -> Result<Sketch, StorageError> {
        let info = self.info;
        let id = info.def.id;
        let mut range = self.table.range((id, 0u64)..=(id, row)).map_err(StorageError::backend("read page"))?;
        let entry = range.next_back().ok_or_else(|| inconsistent(info, row, "a key maps to a row no page holds"))?;
        let (k, v) = entry.map_err(StorageError::backend("read page"))?;
        let first = k.value().1;
        let page = PageView::parse_expected(v.value(), &info.spec, first).map_err(corrupt_page(info, first))?;
        let i = page.index_of(row).ok_or_else(|| inconsistent(info, row, "a key maps to a row no page holds"))?;
        let words = self.dead.words(info, first, page.row_count())?;
        let view = super::rules::overlay(info, page, words.as_deref())?;
        if view.key(i) != key {
            return Err(inconsistent(info, row, format!("the row's key is not {}", show_key(key))));
        }
        if view.is_deleted(i) {
            return Err(inconsistent(info, row, "a key maps to a deleted row"));
        }
        let sketch = super::reader::decode(info, &view, first, i)?;
        self.dead.mark(info, row)?;
        Ok(sketch)
    }

    /// Writes every touched page and side-table entry back.
    pub(crate) fn flush(mut self) -> Result<(), StorageError> {
        self.flush_tail()?;
        for mut b in std::mem::take(&mut self.dirty).into_values() {
            self.write(&mut b)?;
        }
        let PageCache { info, table, dead, .. } = self;
        drop(table);
        dead.flush(info)
    }
}
