//! Snapshots, records, scans and columnar page access.

use std::collections::VecDeque;
use std::sync::Arc;

use super::stats::{CollectionStats, IndexSummary};
use crate::codec::page::PageView;
use crate::error::Result;
use crate::sketch::params::SketchKind;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, RowRecord};

/// A stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The user key.
    pub key: Vec<u8>,
    /// The row id.
    pub row_id: u64,
    /// The signature, with its cardinality for set sketches.
    pub sketch: Sketch,
}

impl Record {
    /// The key as UTF-8 text, if it is.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

impl From<RowRecord> for Record {
    fn from(r: RowRecord) -> Self {
        Record { key: r.key, row_id: r.row, sketch: r.sketch }
    }
}

/// A read-only view of one collection at one commit: every read through it agrees, whatever
/// writers commit meanwhile. Holding a snapshot keeps that commit's pages alive (and blocks
/// file compaction), so do not keep one longer than needed.
pub struct Snapshot {
    snap: Arc<ReadSnapshot>,
    info: Arc<CollectionInfo>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("collection", &self.info.def.name).finish()
    }
}

impl Snapshot {
    pub(crate) fn new(snap: Arc<ReadSnapshot>, info: Arc<CollectionInfo>) -> Result<Self> {
        Ok(Snapshot { snap, info })
    }

    /// The read transaction and the collection it views.
    pub(crate) fn parts(&self) -> (&ReadSnapshot, &CollectionInfo) {
        (&self.snap, &self.info)
    }

    /// The record of `key`, if present.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Record>> {
        Ok(self.snap.get(&self.info, key.as_ref())?.map(Record::from))
    }

    /// The live row id of `key` and the content hash it was written with
    /// ([`crate::Batch::insert_with_hash`]; `None` for a row written without one, as every row
    /// of files written before hashes existed), or `None` when the key is absent. Reads no
    /// page.
    ///
    /// ```
    /// use sketchdb::{Batch, CollectionConfig, Database, SketchParams};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("h.sketchdb"))?;
    /// let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(32, 32, 1)?))?;
    /// let sketch = docs.sketcher().sketch_text(&docs.config().tokenizer, "some text to keep")?;
    /// docs.apply(Batch::new().insert_with_hash("a", sketch.clone(), 7).insert("b", sketch))?;
    /// let snap = docs.snapshot()?;
    /// assert_eq!(snap.stored_hash("a")?, Some((0, Some(7))));
    /// assert_eq!(snap.stored_hash("b")?, Some((1, None)));
    /// assert_eq!(snap.stored_hash("c")?, None);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn stored_hash(&self, key: impl AsRef<[u8]>) -> Result<Option<(u64, Option<u128>)>> {
        let Some(row) = self.snap.row_of(&self.info, key.as_ref())? else { return Ok(None) };
        Ok(Some((row, self.snap.content_hash(self.info.def.id, row)?)))
    }

    /// The record at row id `row`, if live.
    pub fn get_row(&self, row: u64) -> Result<Option<Record>> {
        Ok(self.snap.get_row(&self.info, row)?.map(Record::from))
    }

    /// Live records at this snapshot (the counter alone: no index summary).
    pub(crate) fn live(&self) -> Result<u64> {
        Ok(self.snap.state(&self.info)?.live)
    }

    /// The collection's counters at this snapshot. An LSH index's summary names the rule of
    /// its banding, found by recomputing each rule's optimum for its threshold once per
    /// process (tens of milliseconds at 512 slots, about a second at 4096).
    pub fn stats(&self) -> Result<CollectionStats> {
        let s = self.snap.state(&self.info)?;
        let index = match crate::index::index_stats(&self.snap, &self.info)? {
            (Some(l), _) => Some(IndexSummary::Lsh {
                bands: l.plan.params.bands,
                rows: l.plan.params.rows,
                runs: l.plan.runs,
                band_hash: l.band_hash,
                removed_rows: l.removed_rows,
                banding: l.banding(&self.info).purpose,
            }),
            (None, Some(t)) => Some(IndexSummary::SimhashTables { tables: t.tables, radius: t.radius, runs: t.runs }),
            (None, None) => None,
        };
        Ok(CollectionStats {
            live: s.live,
            deleted: s.deleted,
            next_row: s.next_row,
            page_capacity: self.info.def.capacity,
            record_width: self.info.spec.layout.record_width(),
            index,
        })
    }

    /// Every live record, in row order.
    pub fn into_scan(self) -> Scan {
        Scan { snapshot: self, next_page: 0, buffer: VecDeque::new(), done: false }
    }

    /// Visits every page's columns in row order; `f` returns `false` to stop. Each page's
    /// crc and header are checked before `f` sees it.
    pub fn for_each_page(&self, mut f: impl FnMut(&PageColumns<'_>) -> bool) -> Result<()> {
        Ok(self.snap.for_each_page(&self.info, |_, view| Ok(f(&PageColumns { view: *view })))?)
    }
}

/// An iterator over the live records of a snapshot, in row order, decoding one page at a
/// time. A damaged page yields an error (naming collection and page) and ends the scan.
#[derive(Debug)]
pub struct Scan {
    snapshot: Snapshot,
    next_page: u64, // the first row the next page may start at
    buffer: VecDeque<Record>,
    done: bool,
}

impl Iterator for Scan {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.buffer.pop_front() {
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            match self.snapshot.snap.next_page_records(&self.snapshot.info, self.next_page) {
                Ok(Some((end_row, records))) => {
                    self.buffer.extend(records.into_iter().map(Record::from));
                    self.next_page = end_row;
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            }
        }
    }
}

/// One checked page of a collection, column by column. Columns are little-endian and
/// contiguous: entry `i` of a column is row `first_row() + i`.
#[derive(Clone, Copy, Debug)]
pub struct PageColumns<'a> {
    view: PageView<'a>,
}

impl<'a> PageColumns<'a> {
    /// The row id of entry 0.
    pub fn first_row(&self) -> u64 {
        self.view.first_row()
    }
    /// Rows in the page, live and deleted.
    pub fn len(&self) -> usize {
        self.view.row_count()
    }
    /// Whether the page has no rows (never true for a stored page).
    pub fn is_empty(&self) -> bool {
        self.view.row_count() == 0
    }
    /// Whether entry `i` is a deleted row (skip it).
    pub fn is_deleted(&self, i: usize) -> bool {
        self.view.is_deleted(i)
    }
    /// The sketch kind.
    pub fn kind(&self) -> SketchKind {
        self.view.layout().kind
    }
    /// Number of value columns (MinHash k, OPH t, b-bit packed words, SimHash words).
    pub fn value_columns(&self) -> usize {
        usize::from(self.view.layout().value_cols)
    }
    /// Bytes per value-column entry (1, 2, 4 or 8).
    pub fn value_width(&self) -> usize {
        usize::from(self.view.layout().value_width)
    }
    /// Value column `j`: `len() * value_width()` bytes (empty if `j` is out of range).
    pub fn value_column(&self, j: usize) -> &'a [u8] {
        self.view.value_column(j)
    }
    /// All value columns back to back: column `j` is bytes
    /// `[j * len() * value_width(), (j + 1) * len() * value_width())`.
    pub fn value_bytes(&self) -> &'a [u8] {
        self.view.value_columns()
    }
    /// Entry `i` of value column `j`.
    pub fn value(&self, j: usize, i: usize) -> u64 {
        self.view.value(j, i)
    }
    /// OPH's empty-bin bitmap word column `j` (empty for other kinds).
    pub fn bitmap_column(&self, j: usize) -> &'a [u8] {
        self.view.word_column(j)
    }
    /// Row `i`'s set cardinality (`None` for SimHash).
    pub fn cardinality(&self, i: usize) -> Option<u64> {
        self.view.cardinality(i)
    }
    /// Row `i`'s key (`i < len()`).
    pub fn key(&self, i: usize) -> &'a [u8] {
        self.view.key(i)
    }
}
