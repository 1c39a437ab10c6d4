//! Read snapshots: point gets and page scans over one consistent commit.
//!
//! Every page read checks the page's crc and header (against the collection, its layout and
//! capacity, and the page number it was found under) before any row is decoded, and every
//! row is decoded through the sketch's `from_parts`: a damaged page is an error naming the
//! collection and page, never a wrong sketch.

use redb::{ReadOnlyTable, ReadTransaction};

use super::catalog::{CollectionInfo, read_state};
use super::error::StorageError;
use super::tables::{COLLECTION_STATE, KEYS, PAGES, ROWS};
use super::writer::{check_key, corrupt_page};
use crate::codec::meta::CollectionState;
use crate::codec::page::PageView;
use crate::codec::record::decode_row;
use crate::sketch::sketch::Sketch;

/// A read transaction: every read through it sees the same commit, whatever writers do.
pub(crate) struct ReadSnapshot {
    txn: ReadTransaction,
}

/// A record as read: key, row id and sketch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowRecord {
    pub key: Vec<u8>,
    pub row: u64,
    pub sketch: Sketch,
}

fn open<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &ReadTransaction,
    def: redb::TableDefinition<K, V>,
) -> Result<Option<ReadOnlyTable<K, V>>, StorageError> {
    match txn.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(StorageError::backend("open table")(e)),
    }
}

impl super::store::Store {
    /// A snapshot of the last commit.
    pub(crate) fn snapshot(&self) -> Result<ReadSnapshot, StorageError> {
        Ok(ReadSnapshot { txn: self.begin_read()? })
    }
}

impl ReadSnapshot {
    /// The collection's state; `UnknownCollection` if it was dropped.
    pub(crate) fn state(&self, info: &CollectionInfo) -> Result<CollectionState, StorageError> {
        let Some(t) = open(&self.txn, COLLECTION_STATE)? else {
            return Err(StorageError::UnknownCollection { name: info.def.name.clone() });
        };
        read_state(&t, info)
    }

    /// The live row id of `key`, if any.
    pub(crate) fn row_of(&self, info: &CollectionInfo, key: &[u8]) -> Result<Option<u64>, StorageError> {
        check_key(info, key)?;
        let Some(keys) = open(&self.txn, KEYS)? else { return Ok(None) };
        Ok(keys.get((info.def.id, key)).map_err(StorageError::backend("read key"))?.map(|g| g.value()))
    }

    /// The record of `key`, if present.
    pub(crate) fn get(&self, info: &CollectionInfo, key: &[u8]) -> Result<Option<RowRecord>, StorageError> {
        self.state(info)?;
        let Some(row) = self.row_of(info, key)? else { return Ok(None) };
        let sketch = self.sketch_at(info, row)?;
        Ok(Some(RowRecord { key: key.to_vec(), row, sketch }))
    }

    /// The record at `row`, if it is live.
    pub(crate) fn get_row(&self, info: &CollectionInfo, row: u64) -> Result<Option<RowRecord>, StorageError> {
        self.state(info)?;
        let Some(rows) = open(&self.txn, ROWS)? else { return Ok(None) };
        let Some(key) = rows.get((info.def.id, row)).map_err(StorageError::backend("read row key"))? else {
            return Ok(None);
        };
        let key = key.value().to_vec();
        let sketch = self.sketch_at(info, row)?;
        Ok(Some(RowRecord { key, row, sketch }))
    }

    /// The sketch stored at `row`, which a key maps to (so it must be live).
    fn sketch_at(&self, info: &CollectionInfo, row: u64) -> Result<Sketch, StorageError> {
        let page_no = info.spec.page_of(row);
        let inconsistent =
            |detail: String| StorageError::Inconsistent { collection: info.def.name.clone(), row: Some(row), detail };
        let pages = open(&self.txn, PAGES)?.ok_or_else(|| inconsistent("the pages table is missing".into()))?;
        let guard = pages
            .get((info.def.id, page_no))
            .map_err(StorageError::backend("read page"))?
            .ok_or_else(|| inconsistent(format!("a key maps to it but page {page_no} is missing")))?;
        let view = PageView::parse_expected(guard.value(), &info.spec, page_no).map_err(corrupt_page(info, page_no))?;
        let i = row
            .checked_sub(view.first_row())
            .filter(|&i| i < view.row_count() as u64)
            .ok_or_else(|| inconsistent(format!("a key maps to it but page {page_no} does not hold it")))?
            as usize;
        if view.is_deleted(i) {
            return Err(inconsistent("a key maps to a deleted row".into()));
        }
        decode_row(&view, i, &info.def.params).map_err(|source| StorageError::CorruptRow {
            collection: info.def.name.clone(),
            page: page_no,
            row,
            source,
        })
    }

    /// Calls `f` with every page of the collection in row order, each checked. `f` returns
    /// `false` to stop early.
    pub(crate) fn for_each_page(
        &self,
        info: &CollectionInfo,
        mut f: impl FnMut(u64, &PageView<'_>) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        self.state(info)?;
        let Some(pages) = open(&self.txn, PAGES)? else { return Ok(()) };
        let id = info.def.id;
        for entry in pages.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))? {
            let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
            let page_no = k.value().1;
            let view = PageView::parse_expected(v.value(), &info.spec, page_no).map_err(corrupt_page(info, page_no))?;
            if !f(page_no, &view)? {
                break;
            }
        }
        Ok(())
    }

    /// The keys of live rows `first..end`, in row order.
    pub(crate) fn keys_of_rows(
        &self,
        info: &CollectionInfo,
        first: u64,
        end: u64,
    ) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        let Some(rows) = open(&self.txn, ROWS)? else { return Ok(vec![]) };
        let id = info.def.id;
        let mut out = Vec::new();
        if first >= end {
            return Ok(out);
        }
        for entry in rows.range((id, first)..(id, end)).map_err(StorageError::backend("scan row keys"))? {
            let (k, v) = entry.map_err(StorageError::backend("scan row keys"))?;
            out.push((k.value().1, v.value().to_vec()));
        }
        Ok(out)
    }

    /// Decodes every live row of a page, paired with its key. Live rows and row keys must
    /// agree (a live row without a key, or a key on a deleted row, is `Inconsistent`).
    pub(crate) fn page_records(
        &self,
        info: &CollectionInfo,
        page_no: u64,
        view: &PageView<'_>,
    ) -> Result<Vec<RowRecord>, StorageError> {
        let keys = self.keys_of_rows(info, view.first_row(), view.end_row())?;
        let mut keys = keys.into_iter().peekable();
        let mut out = Vec::with_capacity(view.row_count() - view.deleted_count());
        for i in 0..view.row_count() {
            let row = view.first_row() + i as u64;
            let key = match keys.peek() {
                Some((r, _)) if *r == row => keys.next().map(|(_, k)| k),
                _ => None,
            };
            match (view.is_deleted(i), key) {
                (true, None) => {}
                (false, Some(key)) => {
                    let sketch = decode_row(view, i, &info.def.params).map_err(|source| StorageError::CorruptRow {
                        collection: info.def.name.clone(),
                        page: page_no,
                        row,
                        source,
                    })?;
                    out.push(RowRecord { key, row, sketch });
                }
                (deleted, _) => {
                    return Err(StorageError::Inconsistent {
                        collection: info.def.name.clone(),
                        row: Some(row),
                        detail: if deleted {
                            "a deleted row still has a key".into()
                        } else {
                            "a live row has no key".into()
                        },
                    });
                }
            }
        }
        Ok(out)
    }

    /// Reads one stored page's raw bytes (tests and page dumps).
    pub(crate) fn raw_page(&self, info: &CollectionInfo, page_no: u64) -> Result<Option<Vec<u8>>, StorageError> {
        let Some(pages) = open(&self.txn, PAGES)? else { return Ok(None) };
        Ok(pages.get((info.def.id, page_no)).map_err(StorageError::backend("read page"))?.map(|g| g.value().to_vec()))
    }

    /// The page numbers of a collection, in order.
    pub(crate) fn page_numbers(&self, info: &CollectionInfo) -> Result<Vec<u64>, StorageError> {
        let Some(pages) = open(&self.txn, PAGES)? else { return Ok(vec![]) };
        let id = info.def.id;
        let mut out = vec![];
        for entry in pages.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))? {
            out.push(entry.map_err(StorageError::backend("scan pages"))?.0.value().1);
        }
        Ok(out)
    }
}

impl ReadSnapshot {
    /// The first page numbered `from` or later, with its live records decoded.
    pub(crate) fn next_page_records(
        &self,
        info: &CollectionInfo,
        from: u64,
    ) -> Result<Option<(u64, Vec<RowRecord>)>, StorageError> {
        let Some(pages) = open(&self.txn, PAGES)? else { return Ok(None) };
        let id = info.def.id;
        let mut range = pages.range((id, from)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))?;
        let Some(entry) = range.next() else { return Ok(None) };
        let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
        let page_no = k.value().1;
        let view = PageView::parse_expected(v.value(), &info.spec, page_no).map_err(corrupt_page(info, page_no))?;
        Ok(Some((page_no, self.page_records(info, page_no, &view)?)))
    }
}
