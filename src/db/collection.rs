//! [`Collection`]: a named set of keyed sketches of one configuration.

use std::sync::Arc;

use super::batch::Batch;
use super::config::{CollectionConfig, IndexConfig, decode_settings, encode_settings};
use super::snapshot::{PageColumns, Record, Scan, Snapshot};
use super::stats::CollectionStats;
use crate::error::Result;
use crate::index::{BandKeyScheme, IndexDef, IndexMaintainer, IndexSpec};
use crate::planner::cost::{Choice, CostModel, Stats};
use crate::planner::dedup_exec::{self, Clustering, DedupResult};
use crate::planner::exact;
use crate::planner::explain::{Explain, Scoring};
use crate::planner::query::{Query, QueryKind, QueryOptions};
use crate::planner::run::{self, QueryResult};
use crate::sketch::estimate::Estimate;
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::{Sketch, Sketcher};
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
///
/// ```
/// use sketchdb::{CollectionConfig, Database, Query, SketchParams};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Database::create(dir.path().join("c.sketchdb"))?;
/// let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(128, 32, 3)?))?;
/// docs.insert_text("a", "to be or not to be that is the question")?;
/// docs.upsert("b", &docs.sketcher().sketch_text(&docs.config().tokenizer, "to be or not to be")?)?;
/// assert_eq!(docs.len()?, 2);
/// let e = docs.estimate("a", "b", 0.95)?;
/// assert!(e.lower <= e.value && e.value <= e.upper);
/// assert!(docs.delete("b")?);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Collection {
    store: Arc<Store>,
    info: Arc<CollectionInfo>,
    config: CollectionConfig,
    sketcher: Arc<Sketcher>,
}

impl Collection {
    pub(crate) fn new(store: Arc<Store>, info: CollectionInfo) -> Result<Self> {
        let mut config = decode_settings(info.def.id, info.def.params, &info.def.settings)?;
        config.exact_shingles = info.shingles;
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
        let s =
            self.store.apply(&self.info, [WriteOp::Insert(key.as_ref(), sketch, None)], &mut IndexMaintainer::new())?;
        Ok(s.first_row)
    }

    /// Inserts or replaces a record; returns its (new) row id. A replaced record's old row
    /// is tombstoned and the key moves to a new row id.
    pub fn upsert(&self, key: impl AsRef<[u8]>, sketch: &Sketch) -> Result<u64> {
        let s =
            self.store.apply(&self.info, [WriteOp::Upsert(key.as_ref(), sketch, None)], &mut IndexMaintainer::new())?;
        Ok(s.first_row)
    }

    /// Deletes a record; returns whether the key was present.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        let s = self.store.apply(&self.info, [WriteOp::Delete(key.as_ref())], &mut IndexMaintainer::new())?;
        Ok(s.deleted == 1)
    }

    /// Sketches a token set with the collection's parameters and inserts it (with the set
    /// itself, when the collection keeps exact shingles).
    pub fn insert_tokens(&self, key: impl AsRef<[u8]>, tokens: &TokenSet) -> Result<u64> {
        let sketch = self.sketcher.sketch(tokens)?;
        let op = [WriteOp::Insert(key.as_ref(), &sketch, None)];
        let s =
            self.store.apply_with_shingles(&self.info, op, &[Some(tokens.as_slice())], &mut IndexMaintainer::new())?;
        Ok(s.first_row)
    }

    /// Tokenizes text with the collection's tokenizer, sketches it and inserts it (with its
    /// token set, when the collection keeps exact shingles).
    pub fn insert_text(&self, key: impl AsRef<[u8]>, text: &str) -> Result<u64> {
        let tokens = self.config.tokenizer.tokens(text);
        let sketch = self.sketcher.sketch_multiset(&tokens)?;
        let set = self.info.shingles.then(|| TokenSet::from_unsorted(tokens));
        let op = [WriteOp::Insert(key.as_ref(), &sketch, None)];
        let sets = [set.as_ref().map(TokenSet::as_slice)];
        let s = self.store.apply_with_shingles(&self.info, op, &sets, &mut IndexMaintainer::new())?;
        Ok(s.first_row)
    }

    /// Applies a batch in one transaction: all of it, or on any error none of it.
    ///
    /// One exception, as in every database: when the commit itself fails with an I/O error
    /// (`StorageError::Backend` with an I/O source), the failure may have come after the
    /// commit reached the disk, so the batch is then either wholly committed or wholly
    /// absent; reopen the database to see which. It is never partly applied.
    pub fn apply(&self, batch: &Batch) -> Result<WriteSummary> {
        let sets = batch.shingles();
        Ok(self.store.apply_with_shingles(&self.info, batch.ops(), &sets, &mut IndexMaintainer::new())?)
    }

    /// Applies batches given one part at a time as one transaction: each part's writes are
    /// made as the part arrives, while the transaction stays open, and the transaction
    /// commits after the last part, so the commit has only the last part's writes and the
    /// flush left to do. Stores exactly what [`Collection::apply`] of the parts' writes
    /// joined in order stores: all of it, or on any error none of it (the exception of
    /// [`Collection::apply`] for a failed commit holds here too).
    ///
    /// A part that is an error ends the transaction uncommitted (nothing of the earlier
    /// parts stays) and is returned. No other write of this database can begin while the
    /// transaction is open (it waits), so `parts` must not wait on one.
    ///
    /// A part is a [`Batch`] or anything that lends one (`&Batch`, `Arc<Batch>`, a caller's
    /// own wrapper): a part is dropped once its writes are made, so a caller that hands over
    /// a wrapper decides where a part's memory is freed (off the writing thread, say).
    ///
    /// ```
    /// use sketchdb::{Batch, Database, recipes::text_config};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("a.sketchdb"))?;
    /// let coll = db.create_collection("docs", text_config()?)?;
    /// let sketch = |t: &str| coll.sketcher().sketch_multiset(&coll.config().tokenizer.tokens(t));
    /// let (mut a, mut b) = (Batch::new(), Batch::new());
    /// a.insert("a", sketch("one two")?);
    /// b.insert("b", sketch("three four")?);
    /// let parts = [Ok::<_, sketchdb::Error>(a), Ok(b)];
    /// assert_eq!(coll.apply_parts(parts)?.inserted, 2);
    ///
    /// // A part that is an error: nothing of the transaction stays.
    /// let mut c = Batch::new();
    /// c.insert("c", sketch("five six")?);
    /// let failed = coll.apply_parts([Ok(c), Err(sketchdb::Error::from(sketchdb::SketchError::EmptySet))]);
    /// assert!(failed.is_err());
    /// assert_eq!(coll.len()?, 2);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn apply_parts<B: std::borrow::Borrow<Batch>, E: From<crate::Error>>(
        &self,
        parts: impl IntoIterator<Item = std::result::Result<B, E>>,
    ) -> std::result::Result<WriteSummary, E> {
        fn view<B: std::borrow::Borrow<Batch>>(
            b: &B,
        ) -> (Vec<crate::storage::rules::WriteOp<'_>>, Vec<Option<&[u64]>>) {
            let b = b.borrow();
            (b.ops().collect(), b.shingles())
        }
        let applied = self.store.apply_parts(&self.info, parts.into_iter(), view, &mut IndexMaintainer::new());
        match applied {
            Ok(outcome) => outcome,
            Err(e) => Err(E::from(e.into())),
        }
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
        self.snapshot()?.live()
    }

    /// Whether the collection has no live records.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The collection's counters (see [`Snapshot::stats`]).
    pub fn stats(&self) -> Result<CollectionStats> {
        self.snapshot()?.stats()
    }

    /// A consistent read-only view of the collection as of now.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Snapshot::new(self.store.current_snapshot()?, self.info.clone())
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
    /// rows, an LSH banding as [`IndexConfig::Lsh`] says (for candidate recall on a collection
    /// that keeps exact shingles). The new configuration is stored
    /// in the collection's definition; this handle reflects it, other open handles keep
    /// their old [`Collection::config`] value but maintain the new index (every write reads
    /// the stored index definition).
    pub fn rebuild_index(&mut self, index: IndexConfig) -> Result<()> {
        let config = self.config.with_index(index);
        config.validate()?;
        let settings = encode_settings(&config)?;
        let info = crate::index::rebuild(&self.store, &self.info, index.request(config.exact_shingles), settings)?;
        self.info = Arc::new(info);
        self.config = config;
        Ok(())
    }

    /// The statistics the planner reads (kept current by every write).
    pub fn planner_stats(&self) -> Result<Stats> {
        let snap = self.store.current_snapshot()?;
        Ok(run::stats_in(&snap, &self.info)?)
    }

    /// The stored sketch of `key` (a typed error when absent), for building queries.
    pub fn sketch_of(&self, key: impl AsRef<[u8]>) -> Result<Sketch> {
        let snap = self.store.current_snapshot()?;
        Ok(run::stored_sketch(&snap, &self.info, key.as_ref())?)
    }

    /// The planner's cost model: the stored calibration, else the defaults.
    pub(crate) fn costs(&self) -> CostModel {
        // A damaged costs record must not stop queries: plan with the defaults, and let
        // `verify` report the record.
        self.store.planner_costs_with(|c| c.map(CostModel::from)).ok().flatten().unwrap_or_default()
    }

    /// The planner's choice for `query`, without running it.
    pub fn plan(&self, query: &Query) -> Result<Choice> {
        let snap = self.store.current_snapshot()?;
        Ok(run::plan(&snap, &self.info, query, &self.costs())?)
    }

    /// Runs a query: the planner chooses the access path (unless forced), every candidate is
    /// verified with the estimator and the hits come back scored, best first.
    pub fn query(&self, query: &Query) -> Result<QueryResult> {
        let snap = self.store.current_snapshot()?;
        Ok(run::run(&snap, &self.info, query, &self.costs())?)
    }

    /// A query whose probe is the stored sketch of `key` (the key itself is among the hits
    /// when it qualifies).
    ///
    /// On a collection that keeps exact shingles, threshold and top-k hits are re-ranked by
    /// exact Jaccard against the key's stored set ([`crate::Hit::exact`]; candidates from the
    /// sketches, see [`crate::plan::Scoring::Exact`]).
    pub fn query_key(&self, key: impl AsRef<[u8]>, kind: QueryKind, options: QueryOptions) -> Result<QueryResult> {
        let snap = self.store.current_snapshot()?;
        let prep = run::prepare(&snap, &self.info)?;
        Ok(exact::run_key(&snap, &self.info, key.as_ref(), kind, options, &self.costs(), &prep)?)
    }

    /// A query from text, tokenized and sketched as the collection's records are. On a
    /// collection that keeps exact shingles, threshold and top-k hits are re-ranked by exact
    /// Jaccard against the text's own shingle set ([`crate::Hit::exact`]).
    pub fn query_text(&self, text: &str, kind: QueryKind, options: QueryOptions) -> Result<QueryResult> {
        let tokens = self.config.tokenizer.tokens(text);
        let sketch = self.sketcher.sketch_multiset(&tokens)?;
        let set = TokenSet::from_unsorted(tokens);
        let snap = self.store.current_snapshot()?;
        let query = Query { sketch, kind, options };
        let prep = run::prepare(&snap, &self.info)?;
        Ok(exact::run_scored(&snap, &self.info, &query, Some(set.as_slice()), &self.costs(), &prep)?)
    }

    /// A query from a token multiset (hashed tokens, repeats allowed), sketched as
    /// [`Collection::insert_tokens`] sketches records. On a collection that keeps exact
    /// shingles, threshold and top-k hits are re-ranked by exact Jaccard against the tokens'
    /// distinct set ([`crate::Hit::exact`]), as [`Collection::query_text`] does for text.
    pub fn query_tokens(&self, tokens: &[u64], kind: QueryKind, options: QueryOptions) -> Result<QueryResult> {
        let sketch = self.sketcher.sketch_multiset(tokens)?;
        let set = TokenSet::from_unsorted(tokens.to_vec());
        let snap = self.store.current_snapshot()?;
        let query = Query { sketch, kind, options };
        let prep = run::prepare(&snap, &self.info)?;
        Ok(exact::run_scored(&snap, &self.info, &query, Some(set.as_slice()), &self.costs(), &prep)?)
    }

    /// EXPLAIN of [`Collection::query_tokens`]: the plan that query runs and its scoring. On
    /// a collection that keeps shingles (threshold and top-k questions) that is the relaxed
    /// candidate question (threshold t - 4 sd, or top 4k + 16) and `scores: exact`.
    pub fn explain_tokens(
        &self,
        tokens: &[u64],
        kind: QueryKind,
        options: QueryOptions,
        analyze: bool,
    ) -> Result<Explain> {
        let sketch = self.sketcher.sketch_multiset(tokens)?;
        let snap = self.store.current_snapshot()?;
        let query = Query { sketch, kind, options };
        Ok(exact::explain_scored(&snap, &self.info, &query, &self.costs(), analyze)?)
    }

    /// EXPLAIN of [`Collection::query_key`]: as [`Collection::explain_tokens`].
    pub fn explain_key(
        &self,
        key: impl AsRef<[u8]>,
        kind: QueryKind,
        options: QueryOptions,
        analyze: bool,
    ) -> Result<Explain> {
        let snap = self.store.current_snapshot()?;
        let sketch = run::stored_sketch(&snap, &self.info, key.as_ref())?;
        let query = Query { sketch, kind, options };
        Ok(exact::explain_scored(&snap, &self.info, &query, &self.costs(), analyze)?)
    }

    /// EXPLAIN (and with `analyze`, EXPLAIN ANALYZE): the plan, why, the alternatives with
    /// their estimated costs, and what execution did.
    pub fn explain(&self, query: &Query, analyze: bool) -> Result<Explain> {
        let snap = self.store.current_snapshot()?;
        Ok(run::explain(&snap, &self.info, query, &self.costs(), analyze, Scoring::Estimated)?)
    }

    /// The pairwise estimate between two stored keys: Jaccard (set sketches) or cosine
    /// (SimHash), with its interval at `level`.
    pub fn estimate(&self, a: impl AsRef<[u8]>, b: impl AsRef<[u8]>, level: f64) -> Result<Estimate> {
        let snap = self.store.current_snapshot()?;
        let x = run::stored_sketch(&snap, &self.info, a.as_ref())?;
        let y = run::stored_sketch(&snap, &self.info, b.as_ref())?;
        Ok(x.similarity(&y, level)?)
    }

    /// EXPLAIN for a dedup: the self-join plan [`Collection::dedup`] would run, why, and the
    /// alternatives with their estimated costs; `None` for a collection without records.
    pub fn explain_dedup(&self, kind: QueryKind, options: QueryOptions) -> Result<Option<Explain>> {
        let snap = self.store.current_snapshot()?;
        Ok(dedup_exec::explain_dedup(&snap, &self.info, kind, options, &self.costs())?)
    }

    /// Groups near-duplicates: every record is probed with `kind` (a similarity threshold, or
    /// a Hamming radius for SimHash); verified pairs are joined into connected components.
    ///
    /// The plan comes from [`crate::plan::choose_dedup`]. Where an index can answer the whole
    /// self-join, it does, in one pass: SimHash tables covering the radius give every pair
    /// within it (exact), and an LSH index the planner may probe gives the same candidate
    /// pairs as probing every record. Without an LSH index, a threshold dedup that need not
    /// be exact bands the loaded signatures in memory ([`crate::plan::Access::LshBanding`], the banding an
    /// index for the threshold would get, eligible when its expected recall over [t, 1]
    /// reaches `options.recall_target`); a Hamming dedup without tables covering the radius
    /// builds them in memory ([`crate::plan::Access::SimhashInMemory`], exact). Otherwise every record
    /// runs the planner's plan (`options.exact` asks for that for set sketches). Every
    /// candidate pair is verified with the estimator. Memory holds every live record's
    /// sketch and key, plus `8 * bands` bytes per record when banding.
    pub fn dedup(&self, kind: QueryKind, options: QueryOptions) -> Result<DedupResult> {
        self.dedup_clustered(kind, options, Clustering::Components)
    }

    /// [`Collection::dedup`] with the verified pairs grouped by `clustering`: connected
    /// components, or star clusters whose members each reach the cluster's representative
    /// ([`Clustering::Representative`], which never chains through weak links).
    pub fn dedup_clustered(
        &self,
        kind: QueryKind,
        options: QueryOptions,
        clustering: Clustering,
    ) -> Result<DedupResult> {
        let snap = self.store.current_snapshot()?;
        Ok(dedup_exec::dedup(&snap, &self.info, kind, options, clustering, &self.costs())?)
    }

    /// The band-key scheme of the collection's LSH index (`None` without one): the keys
    /// [`crate::lsh::BandKeyScheme::sketch_keys`] computes with it are the keys the index
    /// files a sketch under.
    pub fn lsh_scheme(&self) -> Result<Option<BandKeyScheme>> {
        let snap = self.store.current_snapshot()?;
        let def = IndexDef::load(&snap, &self.info)?;
        Ok(def.and_then(|d| match &d.spec {
            IndexSpec::Lsh { scheme, .. } | IndexSpec::LshGroups { scheme, .. } => Some(*scheme),
            _ => None,
        }))
    }

    pub(crate) fn info(&self) -> &CollectionInfo {
        &self.info
    }

    /// The id of the open database this handle reads.
    pub(crate) fn store_id(&self) -> u64 {
        self.store.id
    }
}
