//! Write transactions: inserts, upserts and deletes of one collection, all or nothing.
//!
//! Within a transaction every touched page is built once: the open tail page is loaded (or
//! started) on the first append and written back when full or at the end; a page that loses
//! rows to deletes is loaded once, its tombstone bits set, and written back at the end. Any
//! error drops the transaction uncommitted, so a failed batch leaves nothing behind.
//!
//! Semantics (also in `storage-format.md`):
//! * insert: a new row id (`next_row`, then incremented); a key already present is
//!   [`StorageError::DuplicateKey`].
//! * upsert: as insert when the key is absent; otherwise the old row is tombstoned and the
//!   key moves to a new row id. A stored row's columns never change after it is written.
//! * delete: the row is tombstoned and the key removed from `keys` and `rows`; deleting an
//!   absent key is not an error (it is counted in [`WriteSummary::missing`]).

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use super::MAX_KEY_LEN;
use super::catalog::{CollectionInfo, read_state};
use super::error::{StorageError, show_key};
use super::tables::{COLLECTION_STATE, COLLECTION_STATE_NAME, KEYS, PAGES, ROWS};
use crate::codec::meta::CollectionState;
use crate::codec::page::{PageBuilder, PageView};
use crate::codec::record::push_sketch;
use crate::sketch::sketch::Sketch;

/// One write of a batch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WriteOp<'a> {
    /// Insert; the key must be absent.
    Insert(&'a [u8], &'a Sketch),
    /// Insert or replace.
    Upsert(&'a [u8], &'a Sketch),
    /// Delete if present.
    Delete(&'a [u8]),
}

/// What a committed batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Keys that were absent and now have a record.
    pub inserted: u64,
    /// Keys whose record was replaced by an upsert.
    pub replaced: u64,
    /// Keys deleted.
    pub deleted: u64,
    /// Deletes of keys that were absent.
    pub missing: u64,
    /// The row id of the batch's first new row; new rows are `first_row..first_row + new_rows`,
    /// in batch order.
    pub first_row: u64,
    /// Rows written (inserts plus upserts).
    pub new_rows: u64,
}

/// Checks a user key's length.
pub(crate) fn check_key(info: &CollectionInfo, key: &[u8]) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::EmptyKey { collection: info.def.name.clone() });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(StorageError::KeyTooLong { collection: info.def.name.clone(), len: key.len(), max: MAX_KEY_LEN });
    }
    Ok(())
}

pub(crate) fn corrupt_page(
    info: &CollectionInfo,
    page: u64,
) -> impl FnOnce(crate::codec::error::CodecError) -> StorageError {
    let (collection, collection_id) = (info.def.name.clone(), info.def.id);
    move |source| StorageError::CorruptPage { collection, collection_id, page, source }
}

/// The pages one write transaction touches, each built once.
pub(crate) struct PageCache<'t, 'i> {
    info: &'i CollectionInfo,
    table: Table<'t, (u32, u64), &'static [u8]>,
    tail: Option<(u64, PageBuilder)>,
    dirty: BTreeMap<u64, PageBuilder>,
}

impl<'t, 'i> PageCache<'t, 'i> {
    pub(crate) fn new(txn: &'t WriteTransaction, info: &'i CollectionInfo) -> Result<Self, StorageError> {
        let table = txn.open_table(PAGES).map_err(StorageError::backend("open table"))?;
        Ok(PageCache { info, table, tail: None, dirty: BTreeMap::new() })
    }

    /// The page as stored, or `None`.
    fn load(&self, page_no: u64) -> Result<Option<PageBuilder>, StorageError> {
        let id = self.info.def.id;
        let Some(v) = self.table.get((id, page_no)).map_err(StorageError::backend("read page"))? else {
            return Ok(None);
        };
        let view =
            PageView::parse_expected(v.value(), &self.info.spec, page_no).map_err(corrupt_page(self.info, page_no))?;
        Ok(Some(PageBuilder::from_view(self.info.spec, &view)))
    }

    /// Removes a stored page (compaction), returning its builder copy.
    pub(crate) fn take(&mut self, page_no: u64) -> Result<Option<PageBuilder>, StorageError> {
        // The tail may hold rows appended in this transaction: store it before taking.
        self.flush_tail()?;
        if let Some(b) = self.dirty.remove(&page_no) {
            self.table.remove((self.info.def.id, page_no)).map_err(StorageError::backend("remove page"))?;
            return Ok(Some(b));
        }
        let b = self.load(page_no)?;
        if b.is_some() {
            self.table.remove((self.info.def.id, page_no)).map_err(StorageError::backend("remove page"))?;
        }
        Ok(b)
    }

    fn write(&mut self, page_no: u64, b: &PageBuilder) -> Result<(), StorageError> {
        let bytes = b.finish();
        self.table
            .insert((self.info.def.id, page_no), bytes.as_slice())
            .map_err(StorageError::backend("write page"))?;
        Ok(())
    }

    /// Appends a sketch as row `next_row` (which must be the collection's next row id).
    pub(crate) fn append(&mut self, next_row: u64, sketch: &Sketch) -> Result<u64, StorageError> {
        let page_no = self.info.spec.page_of(next_row);
        if self.tail.as_ref().is_none_or(|(p, _)| *p != page_no) {
            self.flush_tail()?;
            let b = match self.dirty.remove(&page_no) {
                Some(b) => b,
                None => self.load(page_no)?.unwrap_or_else(|| PageBuilder::new(self.info.spec, next_row)),
            };
            if b.row_count() > 0 && b.next_row() != next_row {
                return Err(StorageError::Inconsistent {
                    collection: self.info.def.name.clone(),
                    row: Some(next_row),
                    detail: format!("the tail page {page_no} ends at row {}, not at next_row", b.next_row()),
                });
            }
            self.tail = Some((page_no, b));
        }
        let Some((_, b)) = self.tail.as_mut() else {
            return unreachable_tail();
        };
        let row = push_sketch(b, sketch).map_err(corrupt_page(self.info, page_no))?;
        if b.is_full() {
            self.flush_tail()?;
        }
        Ok(row)
    }

    /// Appends row `i` of `view` verbatim (compaction) as row `next_row`.
    pub(crate) fn append_copy(&mut self, next_row: u64, view: &PageView<'_>, i: usize) -> Result<u64, StorageError> {
        let params = self.info.def.params;
        let sketch = crate::codec::record::decode_row(view, i, &params).map_err(|source| StorageError::CorruptRow {
            collection: self.info.def.name.clone(),
            page: self.info.spec.page_of(view.first_row()),
            row: view.first_row() + i as u64,
            source,
        })?;
        self.append(next_row, &sketch)
    }

    fn flush_tail(&mut self) -> Result<(), StorageError> {
        if let Some((p, b)) = self.tail.take() {
            if b.row_count() > 0 {
                self.write(p, &b)?;
            }
        }
        Ok(())
    }

    /// Tombstones `row`; fails if it is not a live row of its page.
    pub(crate) fn delete(&mut self, row: u64) -> Result<(), StorageError> {
        let page_no = self.info.spec.page_of(row);
        let inconsistent = |detail: String| StorageError::Inconsistent {
            collection: self.info.def.name.clone(),
            row: Some(row),
            detail,
        };
        let b = match &mut self.tail {
            Some((p, b)) if *p == page_no => b,
            _ => {
                if !self.dirty.contains_key(&page_no) {
                    let Some(b) = self.load(page_no)? else {
                        return Err(inconsistent(format!("a key maps to it but page {page_no} is missing")));
                    };
                    self.dirty.insert(page_no, b);
                }
                let Some(b) = self.dirty.get_mut(&page_no) else {
                    return unreachable_tail();
                };
                b
            }
        };
        let Some(i) = row.checked_sub(b.first_row()).map(|i| i as usize) else {
            return Err(inconsistent(format!("a key maps to it but page {page_no} starts at {}", b.first_row())));
        };
        match b.set_deleted(i) {
            Ok(true) => Ok(()),
            Ok(false) => Err(inconsistent("a key maps to a deleted row".into())),
            Err(_) => Err(inconsistent(format!("a key maps to it but page {page_no} ends at {}", b.next_row()))),
        }
    }

    /// Writes every touched page back.
    pub(crate) fn flush(mut self) -> Result<(), StorageError> {
        self.flush_tail()?;
        for (p, b) in std::mem::take(&mut self.dirty) {
            self.write(p, &b)?;
        }
        Ok(())
    }
}

fn unreachable_tail<T>() -> Result<T, StorageError> {
    Err(StorageError::Inconsistent { collection: String::new(), row: None, detail: "page cache lost a page".into() })
}

/// Writes a collection's state.
pub(crate) fn write_state(
    txn: &WriteTransaction,
    info: &CollectionInfo,
    state: &CollectionState,
) -> Result<(), StorageError> {
    let bytes = state.encode().map_err(|source| StorageError::CorruptMeta {
        table: COLLECTION_STATE_NAME,
        key: info.def.id.to_string(),
        source,
    })?;
    txn.open_table(COLLECTION_STATE)
        .map_err(StorageError::backend("open table"))?
        .insert(info.def.id, bytes.as_slice())
        .map_err(StorageError::backend("write collection state"))?;
    Ok(())
}

/// Reads a collection's state inside a write transaction.
pub(crate) fn state_in(txn: &WriteTransaction, info: &CollectionInfo) -> Result<CollectionState, StorageError> {
    let t = txn.open_table(COLLECTION_STATE).map_err(StorageError::backend("open table"))?;
    read_state(&t, info)
}

impl super::store::Store {
    /// Applies `ops` to one collection in one transaction: all of them or, on any error,
    /// none.
    pub(crate) fn apply<'a>(
        &self,
        info: &CollectionInfo,
        ops: impl IntoIterator<Item = WriteOp<'a>>,
    ) -> Result<WriteSummary, StorageError> {
        let txn = self.begin_write()?;
        let mut state = state_in(&txn, info)?;
        let mut summary = WriteSummary { first_row: state.next_row, ..WriteSummary::default() };
        {
            let id = info.def.id;
            let mut keys = txn.open_table(KEYS).map_err(StorageError::backend("open table"))?;
            let mut rows = txn.open_table(ROWS).map_err(StorageError::backend("open table"))?;
            let mut pages = PageCache::new(&txn, info)?;
            let params = &info.def.params;
            for op in ops {
                match op {
                    WriteOp::Insert(key, sketch) | WriteOp::Upsert(key, sketch) => {
                        check_key(info, key)?;
                        params.check_compatible(sketch.params()).map_err(|source| StorageError::Incompatible {
                            collection: info.def.name.clone(),
                            source,
                        })?;
                        let row = state.next_row;
                        let old =
                            keys.insert((id, key), row).map_err(StorageError::backend("write key"))?.map(|g| g.value());
                        if let Some(old_row) = old {
                            if matches!(op, WriteOp::Insert(..)) {
                                return Err(StorageError::DuplicateKey {
                                    collection: info.def.name.clone(),
                                    key: show_key(key),
                                });
                            }
                            rows.remove((id, old_row)).map_err(StorageError::backend("write row key"))?;
                            pages.delete(old_row)?;
                            summary.replaced += 1;
                            state.deleted += 1;
                        } else {
                            summary.inserted += 1;
                            state.live += 1;
                        }
                        rows.insert((id, row), key).map_err(StorageError::backend("write row key"))?;
                        pages.append(row, sketch)?;
                        state.next_row += 1;
                        summary.new_rows += 1;
                    }
                    WriteOp::Delete(key) => {
                        check_key(info, key)?;
                        let old =
                            keys.remove((id, key)).map_err(StorageError::backend("delete key"))?.map(|g| g.value());
                        match old {
                            None => summary.missing += 1,
                            Some(old_row) => {
                                rows.remove((id, old_row)).map_err(StorageError::backend("delete row key"))?;
                                pages.delete(old_row)?;
                                summary.deleted += 1;
                                state.live = state.live.saturating_sub(1);
                                state.deleted += 1;
                            }
                        }
                    }
                }
            }
            pages.flush()?;
        }
        write_state(&txn, info, &state)?;
        txn.commit().map_err(StorageError::backend("commit"))?;
        Ok(summary)
    }
}
