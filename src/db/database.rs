//! [`Database`]: one sketchdb file, opened in-process.

use std::path::Path;
use std::sync::Arc;

use super::collection::Collection;
use super::config::{CollectionConfig, encode_settings};
use super::stats::CacheStats;
use crate::error::Result;
use crate::storage::backend::Backend;
use crate::storage::compact::CompactionSummary;
use crate::storage::store::{Durability, Sharing, Store, StoreOptions};

/// A sketchdb database: one file holding named collections of sketches.
///
/// `Database` is `Send + Sync` and cheap to clone (an `Arc` inside); clones share one open
/// file. Reads run on snapshots (a reader sees one commit, whatever writers do meanwhile);
/// one write transaction runs at a time. The file is closed when the last clone and the last
/// [`Collection`] handle are dropped.
///
/// ```
/// use sketchdb::{CollectionConfig, Database, SketchParams};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("corpus.sketchdb");
/// let db = Database::create(&path)?;
/// db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(64, 32, 1)?))?;
/// drop(db);
/// let db = Database::open(&path)?;
/// assert_eq!(db.collection("docs")?.len()?, 0);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Database {
    pub(super) store: Arc<Store>,
}

/// Options for opening or creating a [`Database`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DatabaseBuilder {
    opts: StoreOptions,
    /// The probe cache budget set at open (`None`: the default).
    probe_cache: Option<usize>,
}

impl DatabaseBuilder {
    /// The busy timeout an open uses unless [`DatabaseBuilder::busy_timeout`] sets another.
    pub const DEFAULT_BUSY_TIMEOUT: std::time::Duration = crate::storage::busy::DEFAULT_BUSY_TIMEOUT;

    /// The page cache size in bytes (default 1 GiB): the storage engine's cache of file
    /// pages, read or about to be written. Scans are fastest when the collection fits.
    pub fn cache_size(mut self, bytes: usize) -> Self {
        self.opts.cache_size = Some(bytes);
        self
    }

    /// The probe cache budget in bytes (default [`Database::DEFAULT_PROBE_CACHE_BUDGET`],
    /// 1 GiB; 0 keeps nothing): see [`Database::set_probe_cache_budget`].
    pub fn probe_cache_budget(mut self, bytes: usize) -> Self {
        self.probe_cache = Some(bytes);
        self
    }

    /// `store` opened, with this builder's probe cache budget.
    fn finish(self, store: Store) -> Database {
        let db = Database { store: Arc::new(store) };
        if let Some(bytes) = self.probe_cache {
            db.set_probe_cache_budget(bytes);
        }
        db
    }

    /// The commit durability (default [`Durability::Immediate`]); see [`Durability`] for
    /// exactly what `Eventual` can lose.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.opts.durability = durability;
        self
    }

    /// How long an open waits for a file that another handle holds in a mode it cannot share
    /// (a second writer beside a writer) before failing with
    /// [`StorageError::Locked`](crate::StorageError::Locked), which names the file, the wait
    /// and, on Linux, the process holding it. Default 5 s ([`DatabaseBuilder::DEFAULT_BUSY_TIMEOUT`]); zero fails
    /// at once. Like SQLite's busy timeout, the open retries with short pauses meanwhile.
    pub fn busy_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.opts.busy_timeout = timeout;
        self
    }

    /// Creates a new database at `path` (an error if the path exists). Creation is atomic:
    /// the file is built as `<path>.sketchdb-tmp` and renamed into place once committed.
    pub fn create(self, path: impl AsRef<Path>) -> Result<Database> {
        Ok(self.finish(Store::create(path.as_ref(), self.opts)?))
    }

    /// Opens an existing database. Nothing is scanned or rebuilt at open; a file without a
    /// sketchdb format record, or with an unknown format version, is refused.
    pub fn open(self, path: impl AsRef<Path>) -> Result<Database> {
        Ok(self.finish(Store::open(path.as_ref(), self.opts)?))
    }

    /// Opens an existing database read-only: the file is opened without write access and
    /// never written, not even by `verify` (which then skips the storage engine's own
    /// integrity check, since that repairs and commits). It works on a read-only file or
    /// mount, and shares the file with one writer process and any number of read-only ones.
    /// Each read sees the newest commit, also one a writer process made after the open. Every
    /// write through it fails with [`StorageError::ReadOnly`](crate::StorageError::ReadOnly)
    /// naming the operation.
    pub fn open_read_only(self, path: impl AsRef<Path>) -> Result<Database> {
        Ok(self.finish(Store::open_read_only(path.as_ref(), self.opts)?))
    }

    /// Opens the database at `path`, creating it first when no file is there.
    pub fn open_or_create(self, path: impl AsRef<Path>) -> Result<Database> {
        let path = path.as_ref();
        if path.exists() {
            return self.open(path);
        }
        match self.create(path) {
            // Another process created it meanwhile.
            Err(crate::Error::Storage(crate::StorageError::AlreadyExists { .. })) => self.open(path),
            other => other,
        }
    }

    /// How a read-write handle shares the file (measurements; see [`Sharing`]).
    pub(crate) fn sharing(mut self, sharing: Sharing) -> Self {
        self.opts.sharing = sharing;
        self
    }

    pub(crate) fn create_on<B: Backend>(self, backend: B) -> Result<Database> {
        Ok(self.finish(Store::create_on(backend, self.opts)?))
    }

    pub(crate) fn open_on<B: Backend>(self, backend: B) -> Result<Database> {
        Ok(self.finish(Store::open_on(backend, self.opts)?))
    }
}

impl Database {
    /// Creates a new database at `path` with default options.
    pub fn create(path: impl AsRef<Path>) -> Result<Database> {
        Self::builder().create(path)
    }

    /// Opens an existing database with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Self::builder().open(path)
    }

    /// Opens an existing database read-only with default options (see
    /// [`DatabaseBuilder::open_read_only`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Database> {
        Self::builder().open_read_only(path)
    }

    /// Opens the database at `path`, creating it when missing, with default options.
    pub fn open_or_create(path: impl AsRef<Path>) -> Result<Database> {
        Self::builder().open_or_create(path)
    }

    /// Whether this handle was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.store.is_read_only()
    }

    /// Options for opening or creating.
    pub fn builder() -> DatabaseBuilder {
        DatabaseBuilder::default()
    }

    /// The probe cache budget of a database opened without
    /// [`DatabaseBuilder::probe_cache_budget`].
    pub const DEFAULT_PROBE_CACHE_BUDGET: usize = crate::index::DEFAULT_PROBE_BUDGET;

    /// What this database keeps in memory now, cache by cache, with each cache's budget.
    pub fn cache_stats(&self) -> CacheStats {
        let probes = crate::index::ProbeCaches::of_store(&self.store);
        let memo = self.store.kept_memo_len();
        CacheStats {
            page_cache_budget: self.store.cache_size,
            page_cache_held: self.store.page_cache_held(),
            probe_cache_budget: probes.budget(),
            probe_cache_held: probes.held(),
            snapshot_kept: memo.is_some(),
            snapshot_memo_entries: memo.unwrap_or(0),
        }
    }

    /// Sets how many bytes index probes of this database may keep in memory (default 1 GiB,
    /// or what [`DatabaseBuilder::probe_cache_budget`] set at open; each opened database has
    /// its own budget; [`Database::cache_stats`] reports it with the bytes held). Probes keep the index values they read (LSH chunks,
    /// SimHash buckets), and LSH verification the candidates' records, so that a repeated
    /// probe costs a few memory accesses instead of B-tree descents and page checks; past
    /// the budget, values are read and not kept. Lowering the budget
    /// below what is held lets every cache go. Answers never depend on it, only speed.
    pub fn set_probe_cache_budget(&self, bytes: usize) {
        crate::index::ProbeCaches::of_store(&self.store).set_budget(bytes);
        // What queries derived from the kept snapshot holds the caches too.
        self.store.generation.touch();
    }

    /// The probe cache budget of this database, in bytes.
    pub fn probe_cache_budget(&self) -> usize {
        crate::index::ProbeCaches::of_store(&self.store).budget()
    }

    /// Bytes the probe caches of this database hold now (at most the budget, plus values
    /// in use by probes running while the budget was lowered).
    pub fn probe_cache_held(&self) -> usize {
        crate::index::ProbeCaches::of_store(&self.store).held()
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        self.store.location()
    }

    /// The commit durability this handle uses.
    pub fn durability(&self) -> Durability {
        self.store.durability()
    }

    /// Creates a collection. Its configuration is fixed from now on.
    pub fn create_collection(&self, name: &str, config: CollectionConfig) -> Result<Collection> {
        config.validate()?;
        let settings = encode_settings(&config)?;
        let request = config.index.request(config.exact_shingles);
        let info =
            self.store.create_collection(name, config.params, settings, config.exact_shingles, &mut |txn, info| {
                match request {
                    Some(r) => crate::index::create_index_in(txn, info, r),
                    None => Ok(()),
                }
            })?;
        Collection::new(self.store.clone(), info)
    }

    /// A handle to an existing collection.
    pub fn collection(&self, name: &str) -> Result<Collection> {
        let info = self.store.collection(name)?;
        Collection::new(self.store.clone(), info)
    }

    /// Every collection, ordered by name.
    pub fn collections(&self) -> Result<Vec<Collection>> {
        self.store.collections()?.into_iter().map(|info| Collection::new(self.store.clone(), info)).collect()
    }

    /// Drops a collection and all its records. Handles to it fail with
    /// `UnknownCollection` from then on.
    pub fn drop_collection(&self, name: &str) -> Result<()> {
        Ok(self.store.drop_collection(name)?)
    }

    /// Rewrites pages that hold deleted rows without them (live rows move to new row ids)
    /// and shrinks the file. Needs no live snapshots or scans (`StorageError::Busy`).
    pub fn compact(&self) -> Result<CompactionSummary> {
        let infos = self.store.collections()?;
        let hook_for = |_: &crate::storage::catalog::CollectionInfo| crate::index::IndexMaintainer::new();
        Ok(self.store.compact(&infos, &hook_for)?)
    }

    /// Makes every earlier commit durable (only needed with [`Durability::Eventual`]).
    pub fn flush(&self) -> Result<()> {
        Ok(self.store.flush()?)
    }

    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Database>();
        check::<Collection>();
        check::<crate::db::snapshot::Snapshot>();
    }
}
