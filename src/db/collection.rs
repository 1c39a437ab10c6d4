//! [`Collection`]: a named set of keyed sketches of one configuration.

use std::sync::Arc;

use super::batch::Batch;
use super::config::{CollectionConfig, IndexConfig, decode_settings, encode_settings};
use super::snapshot::{PageColumns, Record, Scan, Snapshot};
use crate::error::Result;
use crate::index::IndexMaintainer;
use crate::sketch::params::SketchParams;
use crate::sketch::sketch::{Sketch, Sketcher};
use crate::sketch::tokens::TokenSet;
use crate::storage::catalog::CollectionInfo;
use crate::storage::rules::WriteOp;
use crate::storage::store::Store;
use crate::storage::writer::WriteSummary;

/// A handle to one collection. Cheap to clone, `Send + Sync`.
///
/// Keys are 1..=[`crate::MAX_KEY_LEN`] bytes (pass `&str` or `&[u8]`). Each key maps to one
/// live record; each record has a row id (sequential per collection, never reused; a key's
/// row id changes when it is upserted or moved by compaction).
#[derive(Clone, Debug)]
pub struct Collection {
    store: Arc<Store>,
    info: Arc<CollectionInfo>,
    config: CollectionConfig,
    sketcher: Arc<Sketcher>,
}

/// A collection's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectionStats {
    /// Live records.
    pub live: u64,
    /// Deleted rows awaiting compaction.
    pub deleted: u64,
    /// The row id the next record gets.
    pub next_row: u64,
    /// Rows per page.
    pub page_capacity: u32,
    /// Bytes per record in the pages.
    pub record_width: usize,
    /// The collection's index, if it has one.
    pub index: Option<IndexSummary>,
}

/// A collection's index as its statistics show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexSummary {
    /// SimHash permuted tables. Writes add runs, which merge in size tiers (at most 10
    /// runs); compaction merges them into one.
    SimhashTables {
        /// Tables.
        tables: u32,
        /// The largest radius they answer.
        radius: u32,
        /// Runs the tables are stored in (each a full set of tables over its rows).
        runs: u32,
    },
    /// LSH banding buckets. Writes add runs, which merge in size tiers (at most 10 runs);
    /// compaction merges them into one. Each run costs a probe one more bucket read per band.
    Lsh {
        /// Bands.
        bands: u32,
        /// Rows per band.
        rows: u32,
        /// Runs the buckets are stored in.
        runs: u32,
        /// The band-hash version of the stored keys ([`crate::BAND_HASH_VERSION`] for an
        /// index built by this release; an older one stays until `rebuild_index`).
        band_hash: u16,
        /// Removed rows whose entries the runs still hold: probes pass over them, and a
        /// merge drops them (a run is rewritten once an eighth of its rows are removed;
        /// compaction drops them all).
        removed_rows: u64,
    },
}

impl Collection {
    pub(crate) fn new(store: Arc<Store>, info: CollectionInfo) -> Result<Self> {
        let config = decode_settings(info.def.id, info.def.params, &info.def.settings)?;
        let sketcher = Arc::new(Sketcher::new(info.def.params)?);
        Ok(Collection { store, info: Arc::new(info), config, sketcher })
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        self.info.name()
    }
    /// Its configuration.
    pub fn config(&self) -> &CollectionConfig {
        &self.config
    }
    /// Its sketch parameters.
    pub fn params(&self) -> &SketchParams {
        &self.info.def.params
    }
    /// A sketcher for its parameters.
    pub fn sketcher(&self) -> &Sketcher {
        &self.sketcher
    }

    /// Inserts a record and returns its row id. A key already present is
    /// `StorageError::DuplicateKey`; a sketch of other parameters is
    /// `StorageError::Incompatible` naming the differing field.
    pub fn insert(&self, key: impl AsRef<[u8]>, sketch: &Sketch) -> Result<u64> {
        let s = self.store.apply(&self.info, [WriteOp::Insert(key.as_ref(), sketch)], &mut IndexMaintainer::new())?;
        Ok(s.first_row)
    }

    /// Inserts or replaces a record; returns its (new) row id. A replaced record's old row
    /// is tombstoned and the key moves to a new row id.
    pub fn upsert(&self, key: impl AsRef<[u8]>, sketch: &Sketch) -> Result<u64> {
        let s = self.store.apply(&self.info, [WriteOp::Upsert(key.as_ref(), sketch)], &mut IndexMaintainer::new())?;
        Ok(s.first_row)
    }

    /// Deletes a record; returns whether the key was present.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        let s = self.store.apply(&self.info, [WriteOp::Delete(key.as_ref())], &mut IndexMaintainer::new())?;
        Ok(s.deleted == 1)
    }

    /// Sketches a token set with the collection's parameters and inserts it.
    pub fn insert_tokens(&self, key: impl AsRef<[u8]>, tokens: &TokenSet) -> Result<u64> {
        let sketch = self.sketcher.sketch(tokens)?;
        self.insert(key, &sketch)
    }

    /// Tokenizes text with the collection's tokenizer, sketches it and inserts it.
    pub fn insert_text(&self, key: impl AsRef<[u8]>, text: &str) -> Result<u64> {
        let sketch = self.sketcher.sketch_text(&self.config.tokenizer, text)?;
        self.insert(key, &sketch)
    }

    /// Applies a batch in one transaction: all of it, or on any error none of it.
    ///
    /// One exception, as in every database: when the commit itself fails with an I/O error
    /// (`StorageError::Backend` with an I/O source), the failure may have come after the
    /// commit reached the disk, so the batch is then either wholly committed or wholly
    /// absent; reopen the database to see which. It is never partly applied.
    pub fn apply(&self, batch: &Batch) -> Result<WriteSummary> {
        Ok(self.store.apply(&self.info, batch.ops(), &mut IndexMaintainer::new())?)
    }

    /// The record of `key`, if present.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Record>> {
        self.snapshot()?.get(key)
    }

    /// The record at row id `row`, if live.
    pub fn get_row(&self, row: u64) -> Result<Option<Record>> {
        self.snapshot()?.get_row(row)
    }

    /// The number of live records.
    pub fn len(&self) -> Result<u64> {
        Ok(self.stats()?.live)
    }

    /// Whether the collection has no live records.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The collection's counters.
    pub fn stats(&self) -> Result<CollectionStats> {
        self.snapshot()?.stats()
    }

    /// A consistent read-only view of the collection as of now.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Snapshot::new(self.store.snapshot()?, self.info.clone())
    }

    /// Every live record in row order, from a snapshot taken now.
    pub fn scan(&self) -> Result<Scan> {
        Ok(self.snapshot()?.into_scan())
    }

    /// Visits every page's columns in row order (the fast path for scans that read only some
    /// columns). `f` returns `false` to stop.
    pub fn for_each_page(&self, f: impl FnMut(&PageColumns<'_>) -> bool) -> Result<()> {
        self.snapshot()?.for_each_page(f)
    }

    /// Drops the collection's index and builds `index` in its place (another design, another
    /// kind, or none), in one write transaction: readers see the old index or the new one.
    /// A SimHash table design and its bucket width are chosen for the current number of live
    /// rows, an LSH banding as [`IndexConfig::Lsh`] says. The new configuration is stored
    /// in the collection's definition; this handle reflects it, other open handles keep
    /// their old [`Collection::config`] value but maintain the new index (every write reads
    /// the stored index definition).
    pub fn rebuild_index(&mut self, index: IndexConfig) -> Result<()> {
        let config = self.config.with_index(index);
        config.validate()?;
        let settings = encode_settings(&config)?;
        let info = crate::index::rebuild(&self.store, &self.info, index.request(), settings)?;
        self.info = Arc::new(info);
        self.config = config;
        Ok(())
    }

    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub(crate) fn info(&self) -> &CollectionInfo {
        &self.info
    }
}
