//! Read snapshots: point gets and page scans over one consistent commit.
//!
//! Every page read checks the page's crc and header (against the collection, its layout and
//! capacity, and the first row it is stored under) before any row is decoded, and every row
//! is decoded through the sketch's `from_parts`: a damaged page is an error naming the
//! collection and page, never a wrong sketch. Every page is read with its rows' removed-rows
//! entries (`sketchdb.row_dead64`, [`super::dead`]) ORed into its tombstones.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use redb::{AccessGuard, ReadOnlyTable, ReadTransaction};

use super::catalog::{CollectionInfo, read_state};
use super::dead::DeadTables;
use super::error::{StorageError, contain};
use super::index_tables::{BucketKey, BytesView, GroupKey, RowKey, RowsView, RunKey};
use super::rules::{check_key, corrupt_page, inconsistent, overlay};
use super::store::{LayerState, layer_state};
use super::tables::{
    COLLECTION_STATE, CONTENT_HASHES, INDEX_DEFS, KEYS, LSH_BUCKETS, LSH_DEAD, LSH_GROUPS_V1, LSH_ROWS, PAGES,
    ROW_DEAD, ROW_DEAD64, SIMHASH_BUCKETS,
};
use crate::codec::error::CodecError;
use crate::codec::meta::CollectionState;
use crate::codec::page::PageView;
use crate::codec::record::decode_row;
use crate::codec::rows::{decode_oph_rows_into, decode_rows};
use crate::sketch::oph_column::OphColumn;
use crate::sketch::sketcher::Sketch;

/// A read transaction: every read through it sees the same commit, whatever writers do.
pub(crate) struct ReadSnapshot {
    txn: ReadTransaction,
    store: u64,
    layer: LayerState,
    /// What layers above derived from this commit, by collection id and type (see
    /// [`ReadSnapshot::memo`]).
    memo: Mutex<Vec<Memo>>,
}

/// One derived value of [`ReadSnapshot::memo`]: its collection id, its type and the value.
type Memo = (u32, TypeId, Arc<dyn Any + Send + Sync>);

/// A record as read: key, row id and sketch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowRecord {
    pub key: Vec<u8>,
    pub row: u64,
    pub sketch: Sketch,
}

/// Opens a table in a read transaction; `None` if it was never created (a database with no
/// records yet has no pages or keys tables).
pub(crate) fn open<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &ReadTransaction,
    def: redb::TableDefinition<K, V>,
) -> Result<Option<ReadOnlyTable<K, V>>, StorageError> {
    match txn.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(StorageError::backend("open table")(e)),
    }
}

/// A stored page: its first row and its bytes (borrowed from redb's cache).
type PageEntry = (u64, AccessGuard<'static, &'static [u8]>);

impl super::store::Store {
    /// A snapshot of the last commit, begun now.
    pub(crate) fn snapshot(&self) -> Result<ReadSnapshot, StorageError> {
        Ok(ReadSnapshot {
            txn: contain("begin read", || self.begin_read())?,
            store: self.id,
            layer: self.layer.clone(),
            memo: Mutex::new(Vec::new()),
        })
    }

    /// A snapshot of the last commit: the one kept since this handle's last write when only
    /// this handle commits to the file, else one begun now (see [`super::current`]).
    pub(crate) fn current_snapshot(&self) -> Result<Arc<ReadSnapshot>, StorageError> {
        if !self.sole_writer {
            return Ok(Arc::new(self.snapshot()?));
        }
        if let Some(snap) = self.generation.kept::<ReadSnapshot>() {
            return Ok(snap);
        }
        self.generation.keep(|| self.snapshot())
    }

    /// Values the kept snapshot's memo holds (`None`: no snapshot is kept).
    pub(crate) fn kept_memo_len(&self) -> Option<usize> {
        self.generation.kept::<ReadSnapshot>().map(|s| s.memo_len())
    }
}

impl ReadSnapshot {
    /// The per-database state of type `T` of the database read (see [`LayerState`]).
    pub(crate) fn layer_state<T: std::any::Any + Send + Sync + Default>(&self) -> Option<std::sync::Arc<T>> {
        layer_state(&self.layer)
    }

    /// What `make` derives from this commit for collection `collection`, made once per
    /// snapshot and type (a failed `make` keeps nothing). `make` may read through this
    /// snapshot; two threads may both make it, and the first kept is the one returned.
    pub(crate) fn memo<T: Any + Send + Sync, E>(
        &self,
        collection: u32,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let ty = TypeId::of::<T>();
        let found = |memo: &[Memo]| {
            memo.iter()
                .find(|(c, t, _)| *c == collection && *t == ty)
                .and_then(|(_, _, v)| v.clone().downcast::<T>().ok())
        };
        if let Some(v) = found(&self.memo.lock()) {
            return Ok(v);
        }
        let made = Arc::new(make()?);
        let mut memo = self.memo.lock();
        if let Some(v) = found(&memo) {
            return Ok(v);
        }
        memo.push((collection, ty, made.clone()));
        Ok(made)
    }

    /// Values [`Self::memo`] holds.
    pub(crate) fn memo_len(&self) -> usize {
        self.memo.lock().len()
    }

    /// The read transaction (for the index layer's tables).
    pub(crate) fn txn(&self) -> &ReadTransaction {
        &self.txn
    }

    /// The [`super::store::Store::id`] of the database this snapshot reads.
    pub(crate) fn store_id(&self) -> u64 {
        self.store
    }

    /// The collection's state; `UnknownCollection` if it was dropped.
    pub(crate) fn state(&self, info: &CollectionInfo) -> Result<CollectionState, StorageError> {
        contain("read collection state", || {
            let Some(t) = open(&self.txn, COLLECTION_STATE)? else {
                return Err(StorageError::UnknownCollection { name: info.def.name.clone() });
            };
            read_state(&t, info)
        })
    }

    /// The live row id of `key`, if any.
    pub(crate) fn row_of(&self, info: &CollectionInfo, key: &[u8]) -> Result<Option<u64>, StorageError> {
        contain("read key", || {
            check_key(info, key)?;
            let Some(keys) = open(&self.txn, KEYS)? else { return Ok(None) };
            Ok(keys.get((info.def.id, key)).map_err(StorageError::backend("read key"))?.map(|g| g.value()))
        })
    }

    /// The content hash stored with `row` of collection `id`, if it was written with one
    /// (`sketchdb.content_hashes`, see `content_hash.rs`).
    pub(crate) fn content_hash(&self, id: u32, row: u64) -> Result<Option<u128>, StorageError> {
        contain("read content hash", || {
            let Some(t) = open(&self.txn, CONTENT_HASHES)? else { return Ok(None) };
            Ok(t.get((id, row)).map_err(StorageError::backend("read content hash"))?.map(|g| g.value()))
        })
    }

    /// The stored page with the greatest first row `<= row`.
    fn page_at_or_before(&self, info: &CollectionInfo, row: u64) -> Result<Option<PageEntry>, StorageError> {
        let Some(pages) = open(&self.txn, PAGES)? else { return Ok(None) };
        let id = info.def.id;
        let mut range = pages.range((id, 0u64)..=(id, row)).map_err(StorageError::backend("read page"))?;
        let Some(entry) = range.next_back() else { return Ok(None) };
        let (k, v) = entry.map_err(StorageError::backend("read page"))?;
        Ok(Some((k.value().1, v)))
    }

    /// The record of `key`, if present.
    pub(crate) fn get(&self, info: &CollectionInfo, key: &[u8]) -> Result<Option<RowRecord>, StorageError> {
        contain("get", || {
            self.state(info)?;
            let Some(row) = self.row_of(info, key)? else { return Ok(None) };
            let Some((first, guard)) = self.page_at_or_before(info, row)? else {
                return Err(inconsistent(info, row, "a key maps to a row no page holds"));
            };
            let view = PageView::parse_expected(guard.value(), &info.spec, first).map_err(corrupt_page(info, first))?;
            let words = self.dead_words(info, first, view.row_count())?;
            let view = overlay(info, view, words.as_deref())?;
            let i = view.index_of(row).ok_or_else(|| inconsistent(info, row, "a key maps to a row no page holds"))?;
            if view.is_deleted(i) {
                return Err(inconsistent(info, row, "a key maps to a deleted row"));
            }
            if view.key(i) != key {
                return Err(inconsistent(info, row, "a key maps to a row stored with another key"));
            }
            let sketch = decode(info, &view, first, i)?;
            Ok(Some(RowRecord { key: key.to_vec(), row, sketch }))
        })
    }

    /// The record at `row`, if it is live.
    pub(crate) fn get_row(&self, info: &CollectionInfo, row: u64) -> Result<Option<RowRecord>, StorageError> {
        Ok(self.get_rows(info, &[row])?.pop())
    }

    /// The live records among `rows` (ascending), in that order: the collection's state is
    /// read, its pages table opened and each page checked once for all the rows it holds
    /// (index candidates come sorted and often share pages). No rows: nothing is read.
    pub(crate) fn get_rows(&self, info: &CollectionInfo, rows: &[u64]) -> Result<Vec<RowRecord>, StorageError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        contain("get rows", || {
            self.state(info)?;
            let mut out = Vec::with_capacity(rows.len());
            let Some(pages) = open(&self.txn, PAGES)? else { return Ok(out) };
            let id = info.def.id;
            let mut i = 0;
            while i < rows.len() {
                let start = i;
                let mut range = pages.range((id, 0u64)..=(id, rows[i])).map_err(StorageError::backend("read page"))?;
                if let Some(entry) = range.next_back() {
                    let (k, v) = entry.map_err(StorageError::backend("read page"))?;
                    let first = k.value().1;
                    let view =
                        PageView::parse_expected(v.value(), &info.spec, first).map_err(corrupt_page(info, first))?;
                    let words = self.dead_words(info, first, view.row_count())?;
                    let view = overlay(info, view, words.as_deref())?;
                    while i < rows.len() && rows[i] < view.end_row() {
                        if let Some(j) = view.index_of(rows[i]).filter(|&j| !view.is_deleted(j)) {
                            let sketch = decode(info, &view, first, j)?;
                            out.push(RowRecord { key: view.key(j).to_vec(), row: rows[i], sketch });
                        }
                        i += 1;
                    }
                }
                // A row no page holds.
                if i == start {
                    i += 1;
                }
            }
            Ok(out)
        })
    }

    /// Calls `f` with every page of the collection (its first row and checked view) in row
    /// order. `f` returns `false` to stop early.
    pub(crate) fn for_each_page(
        &self,
        info: &CollectionInfo,
        f: impl FnMut(u64, &PageView<'_>) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        self.for_each_page_in(info, 0..=u64::MAX, f)
    }

    /// The first page whose first row is `from` or later, with its live records decoded;
    /// returns the page's end row (where the next page may start).
    pub(crate) fn next_page_records(
        &self,
        info: &CollectionInfo,
        from: u64,
    ) -> Result<Option<(u64, Vec<RowRecord>)>, StorageError> {
        contain("scan", || {
            let Some(pages) = open(&self.txn, PAGES)? else { return Ok(None) };
            let id = info.def.id;
            let mut range = pages.range((id, from)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))?;
            let Some(entry) = range.next() else { return Ok(None) };
            let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
            let first = k.value().1;
            let view = PageView::parse_expected(v.value(), &info.spec, first).map_err(corrupt_page(info, first))?;
            let words = self.dead_words(info, first, view.row_count())?;
            let view = overlay(info, view, words.as_deref())?;
            let mut out = Vec::with_capacity(view.row_count() - view.deleted_count());
            for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
                out.push(RowRecord {
                    key: view.key(i).to_vec(),
                    row: view.first_row() + i as u64,
                    sketch: decode(info, &view, first, i)?,
                });
            }
            Ok(Some((view.end_row(), out)))
        })
    }

    /// A stored page's raw bytes (tests and page dumps).
    pub(crate) fn raw_page(&self, info: &CollectionInfo, first_row: u64) -> Result<Option<Vec<u8>>, StorageError> {
        contain("read page", || {
            let Some(pages) = open(&self.txn, PAGES)? else { return Ok(None) };
            Ok(pages
                .get((info.def.id, first_row))
                .map_err(StorageError::backend("read page"))?
                .map(|g| g.value().to_vec()))
        })
    }

    /// The first rows of a collection's pages, in order (the keys of its pages).
    pub(crate) fn page_starts(&self, info: &CollectionInfo) -> Result<Vec<u64>, StorageError> {
        contain("list pages", || {
            let Some(pages) = open(&self.txn, PAGES)? else { return Ok(vec![]) };
            let id = info.def.id;
            let mut out = vec![];
            for entry in pages.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))? {
                out.push(entry.map_err(StorageError::backend("scan pages"))?.0.value().1);
            }
            Ok(out)
        })
    }
}

/// Decodes row `i` of a checked page.
pub(crate) fn decode(info: &CollectionInfo, view: &PageView<'_>, page: u64, i: usize) -> Result<Sketch, StorageError> {
    decode_row(view, i, &info.def.params).map_err(|source| StorageError::CorruptRow {
        collection: info.def.name.clone(),
        page,
        row: view.first_row() + i as u64,
        source: Box::new(source),
    })
}

/// Decodes the rows `rows` of a checked page at once (see `codec::rows::decode_rows`), in the
/// order given; the error names the first row that fails, as [`decode`] would.
pub(crate) fn decode_many(
    info: &CollectionInfo,
    view: &PageView<'_>,
    page: u64,
    rows: &[usize],
) -> Result<Vec<Sketch>, StorageError> {
    decode_rows(view, rows, &info.def.params).map_err(corrupt_row_of(info, view, page, rows))
}

/// The error of `rows[n]` of page `page` failing to decode with `source`.
fn corrupt_row_of<'a>(
    info: &'a CollectionInfo,
    view: &'a PageView<'_>,
    page: u64,
    rows: &'a [usize],
) -> impl Fn((usize, CodecError)) -> StorageError + 'a {
    move |(n, source)| StorageError::CorruptRow {
        collection: info.def.name.clone(),
        page,
        row: view.first_row() + rows[n] as u64,
        source: Box::new(source),
    }
}

/// [`decode_many`] of OPH rows appended to `column` (see `codec::rows::decode_oph_rows_into`;
/// `scratch` is reused from call to call): the same rows and the same error.
pub(crate) fn decode_many_into(
    info: &CollectionInfo,
    view: &PageView<'_>,
    page: u64,
    rows: &[usize],
    column: &mut OphColumn,
    scratch: &mut Vec<Vec<u32>>,
) -> Result<(), StorageError> {
    decode_oph_rows_into(view, rows, column, scratch).map_err(corrupt_row_of(info, view, page, rows))
}

/// The index tables of a snapshot (`None`: the file never had the table).
impl ReadSnapshot {
    /// `sketchdb.lsh_runs`.
    pub(crate) fn lsh_runs(&self) -> Result<Option<BytesView<RunKey>>, StorageError> {
        Ok(open(self.txn(), LSH_BUCKETS)?.map(BytesView))
    }
    /// `sketchdb.simhash_buckets`.
    pub(crate) fn simhash_buckets(&self) -> Result<Option<BytesView<BucketKey>>, StorageError> {
        Ok(open(self.txn(), SIMHASH_BUCKETS)?.map(BytesView))
    }
    /// `sketchdb.index_defs`.
    pub(crate) fn index_defs(&self) -> Result<Option<BytesView<u32>>, StorageError> {
        Ok(open(self.txn(), INDEX_DEFS)?.map(BytesView))
    }
    /// `sketchdb.lsh_rows` (the reverse map of earlier builds).
    pub(crate) fn lsh_rows(&self) -> Result<Option<BytesView<RowKey>>, StorageError> {
        Ok(open(self.txn(), LSH_ROWS)?.map(BytesView))
    }
    /// `sketchdb.lsh_dead`.
    pub(crate) fn lsh_dead(&self) -> Result<Option<RowsView>, StorageError> {
        Ok(open(self.txn(), LSH_DEAD)?.map(RowsView))
    }
    /// `sketchdb.lsh_buckets` (the single-run layout of earlier builds).
    pub(crate) fn lsh_groups_v1(&self) -> Result<Option<BytesView<GroupKey>>, StorageError> {
        Ok(open(self.txn(), LSH_GROUPS_V1)?.map(BytesView))
    }
}

/// A snapshot's entries of one collection, looked up once per page and kept for the
/// snapshot's life (a kept snapshot serves every warm read until the next commit).
pub(crate) struct DeadPages {
    /// Whether the collection has any entry at this commit (no lookups when not).
    any: bool,
    pages: Mutex<HashMap<u64, Option<Arc<[u64]>>>>,
}

/// Both removed-rows tables in a read transaction.
pub(crate) type ReadDeadTables = DeadTables<ReadOnlyTable<(u32, u64), u64>, ReadOnlyTable<(u32, u64), &'static [u8]>>;

impl ReadSnapshot {
    /// Both removed-rows tables at this snapshot's commit (each if the file has it).
    pub(crate) fn dead_tables(&self) -> Result<ReadDeadTables, StorageError> {
        Ok(DeadTables { chunks: open(self.txn(), ROW_DEAD64)?, legacy: open(self.txn(), ROW_DEAD)? })
    }

    /// The removed-rows words of page `first` (of `rows` rows) of `info` at this snapshot's
    /// commit.
    pub(crate) fn dead_words(
        &self,
        info: &CollectionInfo,
        first: u64,
        rows: usize,
    ) -> Result<Option<Arc<[u64]>>, StorageError> {
        let memo = self.memo(info.def.id, || -> Result<DeadPages, StorageError> {
            let any = self.dead_tables()?.any(info.def.id)?;
            Ok(DeadPages { any, pages: Mutex::new(HashMap::new()) })
        })?;
        if !memo.any {
            return Ok(None);
        }
        if let Some(found) = memo.pages.lock().get(&first) {
            return Ok(found.clone());
        }
        let words =
            self.dead_tables()?.page_words(info.def.id, first, rows, |e| corrupt_page(info, first)(e))?.map(Arc::from);
        memo.pages.lock().insert(first, words.clone());
        Ok(words)
    }
}
