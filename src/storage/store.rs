//! The opened database file: atomic creation, the format-record check at open, durability,
//! and the transaction entry points every other storage module uses.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
use redb::{ConcurrencyMode, ReadTransaction, ReadableDatabase};

use super::backend::{Backend, RedbBackend};
use super::busy::{DEFAULT_BUSY_TIMEOUT, retry_while_locked};
use super::current::{Generation, WriteTxn};
use super::error::{StorageError, contain, contain_any};
use super::tables::{CATALOG_KEY, FORMAT_KEY, META, META_NAME, REDB_FILE_FORMAT};
use crate::codec::error::CodecError;
use crate::codec::meta::{CatalogRecord, FormatRecord};
use crate::codec::{FILE_FORMAT_VERSION, FORMAT_VERSION};

/// How commits reach the disk.
///
/// * `Immediate` (the default): `commit` returns only after the data and the commit record
///   are `fsync`ed. An acknowledged commit survives a process crash and a power loss.
/// * `Eventual`: `commit` makes the changes visible to later transactions in this process
///   and writes them to the file, but does not `fsync`. They become durable at the next
///   `Immediate` commit, at [`crate::Database::flush`], or when the database is closed
///   cleanly (dropped). A process crash or power loss before then rolls the file back to the
///   last durable commit: the file stays consistent (redb never exposes a torn
///   transaction), but every `Eventual` commit since that point is lost. Use it for bulk
///   loads that can be redone, followed by `flush`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// fsync on every commit: acknowledged commits survive power loss.
    #[default]
    Immediate,
    /// No fsync on commit: durable only after a later `Immediate` commit, `flush` or a clean
    /// close; a crash or power loss loses the commits since then (never half of one).
    Eventual,
}

/// How a read-write handle shares the file with other processes. Opens use `SingleWriter`;
/// the others exist to measure it against (see `benches/MEASUREMENTS.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sharing {
    /// One writer process; read-only handles in any number of processes follow its commits.
    #[default]
    SingleWriter,
    /// Any number of writer processes, one write transaction at a time.
    MultiWriter,
    /// The writer excludes every other process, readers included.
    Exclusive,
}

/// redb's page cache size when [`StoreOptions::cache_size`] is `None`.
pub(crate) const DEFAULT_CACHE_SIZE: usize = 1 << 30;

/// Options for opening or creating a store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StoreOptions {
    /// redb's page cache size in bytes (`None`: redb's default, 1 GiB).
    pub cache_size: Option<usize>,
    /// Commit durability.
    pub durability: Durability,
    /// How long an open waits for a file another handle holds (see [`super::busy`]).
    pub busy_timeout: Duration,
    /// How a read-write handle shares the file.
    pub sharing: Sharing,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            cache_size: None,
            durability: Durability::default(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            sharing: Sharing::default(),
        }
    }
}

/// An opened sketchdb file. `Send + Sync`; share it behind an `Arc`.
///
/// The redb handle sits behind a `RwLock` only so that the operations redb runs on
/// `&mut Database` (integrity check, file compaction) can get it; every transaction takes
/// the read side just long enough to begin.
///
/// Files are opened in redb's `SingleWriter` mode (except `Eventual` writers, see
/// [`Store::file_builder`]): one process writes, and read-only handles in any number of other
/// processes share the file with it. A read-only handle never writes a byte: it takes only
/// advisory byte-range locks, which change neither the contents nor the mtime.
pub(crate) struct Store {
    /// This handle's writes and the snapshot of its last commit (declared before `db`, so
    /// the kept read transaction ends before the file closes).
    pub(crate) generation: Arc<Generation>,
    /// Whether only this handle can commit to the file, so that reads may share the kept
    /// snapshot (see [`super::current`]).
    pub(crate) sole_writer: bool,
    db: RwLock<Handle>,
    location: PathBuf,
    durability: Durability,
    /// redb's page cache size in bytes.
    pub(crate) cache_size: usize,
    /// The stored planner costs, read on first use (outer `None`: not read yet).
    pub(crate) costs: parking_lot::Mutex<Option<Option<crate::codec::meta::PlannerCostsRecord>>>,
    /// This handle's identity, unique in the process: what was read from one open database
    /// can be cached under it without being confused with another's.
    pub(crate) id: u64,
    /// State the index layer keeps per opened database (its probe caches), shared with
    /// this handle's snapshots.
    pub(crate) layer: LayerState,
}

/// The redb handle: read-write, or read-only (every write is refused with
/// [`StorageError::ReadOnly`]).
enum Handle {
    Write(redb::Database),
    Read(redb::ReadOnlyDatabase),
}

impl Handle {
    fn readable(&self) -> &dyn ReadableDatabase {
        match self {
            Handle::Write(db) => db,
            Handle::Read(db) => db,
        }
    }
}

/// One slot of per-database state for a layer above storage, made on first use: storage
/// holds it without knowing its type.
pub(crate) type LayerState = Arc<OnceLock<Arc<dyn Any + Send + Sync>>>;

/// The state in `slot`, made with `T::default()` on first use; `None` if the slot holds
/// another type.
pub(crate) fn layer_state<T: Any + Send + Sync + Default>(slot: &LayerState) -> Option<Arc<T>> {
    slot.get_or_init(|| Arc::new(T::default())).clone().downcast::<T>().ok()
}

/// A process-unique [`Store::id`].
fn next_store_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("location", &self.location).field("durability", &self.durability).finish()
    }
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StorageError + 'a {
    move |source| StorageError::Io { op, path: path.to_path_buf(), source }
}

/// `<path>.sketchdb-tmp`: where `create` builds the file before renaming it into place.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".sketchdb-tmp");
    PathBuf::from(s)
}

impl Store {
    /// The per-database state of type `T` (see [`LayerState`]).
    pub(crate) fn layer_state<T: Any + Send + Sync + Default>(&self) -> Option<Arc<T>> {
        layer_state(&self.layer)
    }

    /// Bytes redb's page cache holds now (its read cache and write buffer).
    pub(crate) fn page_cache_held(&self) -> usize {
        self.db.read().readable().cache_stats().used_bytes()
    }

    fn builder(opts: &StoreOptions) -> redb::Builder {
        let mut b = redb::Builder::new();
        // Always set, so the budget `cache_stats` reports is the one redb uses.
        b.set_cache_size(opts.cache_size.unwrap_or(DEFAULT_CACHE_SIZE));
        b
    }

    /// The builder for a file shared with other processes. `Eventual` writers stay
    /// `ExclusiveWriter`: redb keeps non-durable commits in the writer's memory only, which it
    /// refuses in the shared modes, so such a writer excludes readers of other processes.
    fn file_builder(opts: &StoreOptions, read_only: bool) -> redb::Builder {
        let mut b = Self::builder(opts);
        let mode = match opts.sharing {
            _ if read_only => ConcurrencyMode::SingleWriter,
            _ if opts.durability == Durability::Eventual => ConcurrencyMode::ExclusiveWriter,
            Sharing::SingleWriter => ConcurrencyMode::SingleWriter,
            Sharing::MultiWriter => ConcurrencyMode::MultiWriter,
            Sharing::Exclusive => ConcurrencyMode::ExclusiveWriter,
        };
        b.set_concurrency_mode(mode);
        b
    }

    fn wrap(db: Handle, path: &Path, opts: StoreOptions) -> Store {
        // Eventual writers are exclusive whatever the sharing (see `file_builder`).
        let sole_writer = matches!(db, Handle::Write(_))
            && (opts.sharing != Sharing::MultiWriter || opts.durability == Durability::Eventual);
        Store {
            generation: Arc::default(),
            sole_writer,
            db: RwLock::new(db),
            location: path.to_path_buf(),
            durability: opts.durability,
            cache_size: opts.cache_size.unwrap_or(DEFAULT_CACHE_SIZE),
            costs: Default::default(),
            id: next_store_id(),
            layer: LayerState::default(),
        }
    }

    /// Creates a new database at `path`, atomically: the file is built and committed at
    /// [`temp_path`], then renamed into place and the directory synced. A crash at any point
    /// leaves either no file at `path` or a complete one.
    pub(crate) fn create(path: &Path, opts: StoreOptions) -> Result<Store, StorageError> {
        if path.exists() {
            return Err(StorageError::AlreadyExists { path: path.to_path_buf() });
        }
        let tmp = temp_path(path);
        match fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove stale temporary file", &tmp)(e)),
        }
        {
            let db = Self::file_builder(&opts, false).create(&tmp).map_err(|e| match e {
                // Name the path: "create /no/such/dir/db: No such file or directory".
                redb::DatabaseError::Storage(redb::StorageError::Io(source)) => {
                    StorageError::Io { op: "create", path: path.to_path_buf(), source }
                }
                e => StorageError::backend("create")(e),
            })?;
            Self::initialise(&db)?;
            db.close().map_err(StorageError::backend("close after create"))?;
        }
        if path.exists() {
            let _ = fs::remove_file(&tmp);
            return Err(StorageError::AlreadyExists { path: path.to_path_buf() });
        }
        fs::rename(&tmp, path).map_err(io_err("rename into place", path))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        #[cfg(unix)]
        fs::File::open(&dir).and_then(|d| d.sync_all()).map_err(io_err("sync directory", &dir))?;
        Self::open(path, opts)
    }

    /// Opens an existing database. Reads only the format record: nothing is scanned or
    /// rebuilt, so opening costs what redb's own open costs plus one small read.
    /// A file another handle holds is retried until `opts.busy_timeout` has passed.
    pub(crate) fn open(path: &Path, opts: StoreOptions) -> Result<Store, StorageError> {
        Self::exists(path)?;
        let db = retry_while_locked(path, opts.busy_timeout, || {
            contain_any("open", || Self::file_builder(&opts, false).open(path))?
                .map_err(|e| Self::engine_open_error(e, path))
        })?;
        Self::check_format(&db, path)?;
        Ok(Self::wrap(Handle::Write(db), path, opts))
    }

    /// Opens an existing database read-only: the file is opened without write access and
    /// never written (a read-only file or mount is fine); it may be shared with one writer
    /// process and any number of readers. Every write is [`StorageError::ReadOnly`]. A file an
    /// exclusive writer holds is retried until `opts.busy_timeout` has passed.
    pub(crate) fn open_read_only(path: &Path, opts: StoreOptions) -> Result<Store, StorageError> {
        Self::exists(path)?;
        let db = retry_while_locked(path, opts.busy_timeout, || {
            contain_any("open", || Self::file_builder(&opts, true).open_read_only(path))?
                .map_err(|e| Self::engine_open_error(e, path))
        })?;
        Self::check_format(&db, path)?;
        Ok(Self::wrap(Handle::Read(db), path, opts))
    }

    /// The file is there and not shorter than its header says (a cut file would otherwise
    /// open and fail later, on whichever page is missing).
    fn exists(path: &Path) -> Result<(), StorageError> {
        if let Some((len, expected)) = super::truncation::truncated(path) {
            return Err(StorageError::Truncated { path: path.to_path_buf(), len, expected });
        }
        if path.exists() {
            Ok(())
        } else {
            Err(io_err("open", path)(std::io::Error::from(std::io::ErrorKind::NotFound)))
        }
    }

    /// The error of a failed open (a truncated file was refused before it, by [`Self::exists`]).
    fn engine_open_error(e: redb::DatabaseError, path: &Path) -> StorageError {
        let not_redb = |e: redb::DatabaseError| StorageError::NotSketchdb {
            path: path.to_path_buf(),
            reason: format!("the storage engine refuses the file: {e}"),
        };
        match e {
            redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch => {
                StorageError::Locked { path: path.to_path_buf(), waited: Duration::ZERO, holder: None }
            }
            // Only a read-only open is refused so (a writer repairs on open).
            redb::DatabaseError::RepairAborted => StorageError::NeedsRecovery { path: path.to_path_buf() },
            redb::DatabaseError::Storage(redb::StorageError::Corrupted(_))
            | redb::DatabaseError::UpgradeRequired(_) => not_redb(e),
            redb::DatabaseError::Storage(redb::StorageError::Io(ref io))
                if io.kind() == std::io::ErrorKind::InvalidData =>
            {
                not_redb(e)
            }
            redb::DatabaseError::Storage(redb::StorageError::Io(source)) => {
                StorageError::Io { op: "open", path: path.to_path_buf(), source }
            }
            e => StorageError::backend("open")(e),
        }
    }

    /// Creates a database on an empty custom backend (no rename: the backend is opaque).
    pub(crate) fn create_on<B: Backend>(backend: B, opts: StoreOptions) -> Result<Store, StorageError> {
        let db =
            Self::builder(&opts).create_with_backend(RedbBackend(backend)).map_err(StorageError::backend("create"))?;
        Self::initialise(&db)?;
        Ok(Self::wrap(Handle::Write(db), Path::new("<backend>"), opts))
    }

    /// Opens a database previously created on a custom backend.
    pub(crate) fn open_on<B: Backend>(backend: B, opts: StoreOptions) -> Result<Store, StorageError> {
        let location = PathBuf::from("<backend>");
        let db = contain_any("open", || Self::builder(&opts).create_with_backend(RedbBackend(backend)))?
            .map_err(|e| StorageError::NotSketchdb { path: location.clone(), reason: e.to_string() })?;
        Self::check_format(&db, &location)?;
        Ok(Self::wrap(Handle::Write(db), &location, opts))
    }

    fn initialise(db: &redb::Database) -> Result<(), StorageError> {
        let format = FormatRecord {
            format_version: FILE_FORMAT_VERSION,
            engine_file_format: REDB_FILE_FORMAT,
            created_by: format!("sketchdb {}", env!("CARGO_PKG_VERSION")),
        };
        let catalog = CatalogRecord { next_collection_id: 1 };
        let meta_err = |key: &str| {
            let key = key.to_string();
            move |source| StorageError::CorruptMeta { table: META_NAME, key, source: Box::new(source) }
        };
        let txn = db.begin_write().map_err(StorageError::backend("begin write"))?;
        {
            let mut meta = txn.open_table(META).map_err(StorageError::backend("open table"))?;
            let f = format.encode().map_err(meta_err(FORMAT_KEY))?;
            let c = catalog.encode().map_err(meta_err(CATALOG_KEY))?;
            meta.insert(FORMAT_KEY, f.as_slice()).map_err(StorageError::backend("write format record"))?;
            meta.insert(CATALOG_KEY, c.as_slice()).map_err(StorageError::backend("write catalog"))?;
        }
        txn.commit().map_err(StorageError::backend("commit"))
    }

    fn check_format(db: &dyn ReadableDatabase, location: &Path) -> Result<(), StorageError> {
        contain("read format record", || {
            let not_ours =
                |reason: &str| StorageError::NotSketchdb { path: location.to_path_buf(), reason: reason.into() };
            let txn = db.begin_read().map_err(StorageError::backend("begin read"))?;
            let meta = match txn.open_table(META) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Err(not_ours("no sketchdb.meta table")),
                Err(e) => return Err(StorageError::backend("open table")(e)),
            };
            let Some(bytes) = meta.get(FORMAT_KEY).map_err(StorageError::backend("read format record"))? else {
                return Err(not_ours("no format record in table sketchdb.meta"));
            };
            let bytes = bytes.value();
            let what = format!("the format record (table {META_NAME}, key \"{FORMAT_KEY}\")");
            match FormatRecord::decode(bytes) {
                Ok(_) => Ok(()),
                Err(CodecError::UnsupportedVersion { found, supported, .. }) => {
                    Err(StorageError::UnsupportedFormat { path: location.to_path_buf(), what, found, supported })
                }
                // The envelope checks its version before anything but length and magic, so
                // every other error is damage to a record of this version.
                Err(source) => Err(StorageError::CorruptMeta {
                    table: META_NAME,
                    key: FORMAT_KEY.into(),
                    source: Box::new(source),
                }),
            }
        })
    }

    /// Where the database lives (`<backend>` for custom backends).
    pub(crate) fn location(&self) -> &Path {
        &self.location
    }

    /// The commit durability.
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    /// Begins a read transaction: a consistent snapshot of the last commit.
    pub(crate) fn begin_read(&self) -> Result<ReadTransaction, StorageError> {
        self.db.read().readable().begin_read().map_err(StorageError::backend("begin read"))
    }

    /// Whether the handle was opened read-only.
    pub(crate) fn is_read_only(&self) -> bool {
        matches!(*self.db.read(), Handle::Read(_))
    }

    fn begin_write_raw(&self, op: &'static str) -> Result<WriteTxn, StorageError> {
        match &*self.db.read() {
            Handle::Write(db) => db
                .begin_write()
                .map(|txn| WriteTxn::new(txn, self.generation.clone()))
                .map_err(StorageError::backend("begin write")),
            Handle::Read(_) => Err(StorageError::ReadOnly { op }),
        }
    }

    /// Begins a write transaction with the store's durability; `op` names the operation
    /// for [`StorageError::ReadOnly`] on a read-only handle.
    pub(crate) fn begin_write(&self, op: &'static str) -> Result<WriteTxn, StorageError> {
        let mut txn = self.begin_write_raw(op)?;
        if self.durability == Durability::Eventual {
            txn.set_durability(redb::Durability::None).map_err(StorageError::backend("set durability"))?;
        }
        Ok(txn)
    }

    /// Makes every earlier commit durable (an empty `Immediate` commit). A read-only handle
    /// has made no commits, so there it does nothing.
    pub(crate) fn flush(&self) -> Result<(), StorageError> {
        if self.is_read_only() {
            return Ok(());
        }
        contain("flush", || {
            let txn = self.begin_write_raw("flush")?;
            txn.commit().map_err(StorageError::backend("commit"))
        })
    }

    /// The read-write redb handle to itself, for integrity checks and file compaction
    /// ([`StorageError::ReadOnly`] naming `op` on a read-only handle).
    pub(crate) fn exclusive(
        &self,
        op: &'static str,
    ) -> Result<MappedRwLockWriteGuard<'_, redb::Database>, StorageError> {
        let guard = self.db.write();
        // No kept snapshot may hold pages while the handle is lent out (none begins until the
        // guard is gone).
        self.generation.touch();
        RwLockWriteGuard::try_map(guard, |h| match h {
            Handle::Write(db) => Some(db),
            Handle::Read(_) => None,
        })
        .map_err(|_| StorageError::ReadOnly { op })
    }

    /// Rewrites the format record with another version (tests of version refusal only).
    pub(crate) fn rewrite_format_version(&self, version: u16) -> Result<(), StorageError> {
        let format = FormatRecord {
            format_version: version,
            engine_file_format: REDB_FILE_FORMAT,
            created_by: format!("sketchdb {} (test)", env!("CARGO_PKG_VERSION")),
        };
        let bytes = crate::codec::envelope::encode_with_version(
            crate::codec::envelope::RecordKind::Format,
            FORMAT_VERSION,
            &format,
        )
        .map_err(|source| StorageError::CorruptMeta {
            table: META_NAME,
            key: FORMAT_KEY.into(),
            source: Box::new(source),
        })?;
        let txn = self.begin_write("rewrite format record")?;
        {
            let mut meta = txn.open_table(META).map_err(StorageError::backend("open table"))?;
            meta.insert(FORMAT_KEY, bytes.as_slice()).map_err(StorageError::backend("write format record"))?;
        }
        txn.commit().map_err(StorageError::backend("commit"))
    }
}
