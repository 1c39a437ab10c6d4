//! Errors of the storage layer.

use std::path::PathBuf;

use thiserror::Error;

use crate::codec::error::CodecError;
use crate::sketch::error::SketchError;

/// An error from the redb backend, kept opaque so that no redb type is public.
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error from opening, reading or writing the database file.
///
/// Corruption errors say where: collection (name and id), page number and row id.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The storage engine (redb) failed; its error is the `source()`.
    #[error("storage engine error during {op}: {source}")]
    Backend {
        /// What was being done (`"open"`, `"commit"`, `"read page"`, ...).
        op: &'static str,
        /// redb's error.
        #[source]
        source: BackendError,
    },
    /// A file-system operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// `create` was asked for a path that already exists.
    #[error("cannot create {path}: a file already exists there")]
    AlreadyExists {
        /// The path.
        path: PathBuf,
    },
    /// The file is a redb database but not a sketchdb one (no valid format record).
    #[error("{path} is not a sketchdb database: {reason}")]
    NotSketchdb {
        /// The path (or `<backend>`).
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// The file is shorter than its header says: it was cut short (an interrupted copy, a
    /// full disk). `expected` is 0 when it ends inside the header.
    #[error(
        "{path} is truncated: the file has {len} bytes{}; it was cut short (an interrupted copy or a full disk?) and cannot be read as a database",
        if *expected > 0 { format!(" but its header says {expected}") } else { " and ends inside its header".to_string() }
    )]
    Truncated {
        /// The database file.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
        /// The length its header states (0: the file ends inside the header).
        expected: u64,
    },
    /// The file (or one of its records) has a format version this build does not read.
    #[error("{path}: {what} has format version {found}; this build of sketchdb reads versions 1 to {supported}")]
    UnsupportedFormat {
        /// The path (or `<backend>`).
        path: PathBuf,
        /// Which record: `"format record (table sketchdb.meta, key \"format\")"`, ...
        what: String,
        /// The version found.
        found: u16,
        /// The newest version this build reads.
        supported: u16,
    },
    /// A metadata value (catalog, collection definition or state) does not decode.
    #[error("corrupt metadata in table {table}, key {key}: {source}")]
    CorruptMeta {
        /// The redb table.
        table: &'static str,
        /// The key, rendered.
        key: String,
        /// What is wrong.
        #[source]
        source: Box<CodecError>,
    },
    /// A page fails its checks (crc, header, layout, position).
    #[error("corrupt page {page} of collection `{collection}` (id {collection_id}): {source}")]
    CorruptPage {
        /// The collection's name.
        collection: String,
        /// The collection's id.
        collection_id: u32,
        /// The page number.
        page: u64,
        /// What is wrong.
        #[source]
        source: Box<CodecError>,
    },
    /// A row of a sound page does not decode as a sketch of the collection's parameters.
    #[error("corrupt row {row} in page {page} of collection `{collection}`: {source}")]
    CorruptRow {
        /// The collection's name.
        collection: String,
        /// The page number.
        page: u64,
        /// The row id.
        row: u64,
        /// What is wrong.
        #[source]
        source: Box<CodecError>,
    },
    /// Tables disagree with each other (a key maps to a missing or deleted row, ...).
    #[error("inconsistent collection `{collection}`{}: {detail}", row.map(|r| format!(" at row {r}")).unwrap_or_default())]
    Inconsistent {
        /// The collection's name.
        collection: String,
        /// The row involved, if any.
        row: Option<u64>,
        /// What disagrees.
        detail: String,
    },
    /// No collection has this name (or it was dropped since the handle was obtained).
    #[error("unknown collection `{name}`")]
    UnknownCollection {
        /// The name asked for.
        name: String,
    },
    /// `create_collection` with a name already in use.
    #[error("collection `{name}` already exists")]
    CollectionExists {
        /// The name.
        name: String,
    },
    /// A collection name that is empty or too long.
    #[error("invalid collection name {name:?}: {reason}")]
    InvalidCollectionName {
        /// The name given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// An empty key.
    #[error("empty key in collection `{collection}`: keys are 1..={max} bytes", max = super::MAX_KEY_LEN)]
    EmptyKey {
        /// The collection.
        collection: String,
    },
    /// A key longer than [`super::MAX_KEY_LEN`].
    #[error("key of {len} bytes in collection `{collection}` exceeds the maximum of {max} bytes")]
    KeyTooLong {
        /// The collection.
        collection: String,
        /// The key's length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// `insert` of a key that is already present (use `upsert` to replace).
    #[error("duplicate key {key} in collection `{collection}`")]
    DuplicateKey {
        /// The collection.
        collection: String,
        /// The key, rendered (UTF-8 text quoted, other bytes in hex).
        key: String,
    },
    /// A record written to a collection that keeps exact shingle sets without its set (a
    /// bare sketch): such collections take text or tokens.
    #[error(
        "collection `{collection}` keeps exact shingles: key {key} was written as a bare sketch; write its text or tokens"
    )]
    ShinglesRequired {
        /// The collection.
        collection: String,
        /// The key, rendered (UTF-8 text quoted, other bytes in hex).
        key: String,
    },
    /// A sketch whose parameters differ from the collection's (wrong width, kind, seed...).
    #[error("sketch does not fit collection `{collection}`: {source}")]
    Incompatible {
        /// The collection.
        collection: String,
        /// The first differing field, with both values.
        #[source]
        source: SketchError,
    },
    /// The storage engine panicked, which it does on some damaged files (redb 4.5 reaches
    /// `unreachable!()` on a b-tree page with an unknown type byte). sketchdb catches the
    /// panic at the storage boundary and reports it as damage; `admin::verify` names it too.
    /// (With `panic = "abort"` the process aborts instead.)
    #[error("the storage engine failed during {op}, most likely on a damaged file")]
    EnginePanic {
        /// What was being done.
        op: &'static str,
        /// The panic message.
        detail: String,
    },
    /// An operation that needs the database to itself (integrity check, file compaction)
    /// while read or write transactions (snapshots, scans) are alive.
    #[error("{op} needs exclusive access, but transactions or snapshots are still alive")]
    Busy {
        /// The operation.
        op: &'static str,
    },
    /// Another handle holds the file in a mode this open cannot share (a writer beside a
    /// writer, a reader beside an exclusive writer), in this process or another, and it was
    /// still held when the busy timeout ran out.
    #[error(
        "database {path} is locked: {} holds it{}",
        holder.as_deref().unwrap_or("another process (or another handle in this one)"),
        waited_text(*waited)
    )]
    #[non_exhaustive]
    Locked {
        /// The database file.
        path: PathBuf,
        /// How long the open waited for it (the busy timeout).
        waited: std::time::Duration,
        /// The process holding it, as `process <pid> (<command line>)`, where the operating
        /// system can tell (Linux).
        holder: Option<String>,
    },
    /// A read-only open of a file that was not closed cleanly (its writer process was killed
    /// or crashed) and that no writer holds now: redb must recover it first, which writes, so
    /// only a read-write open can. Nothing is lost; the file opens once a writer has opened it.
    #[error(
        "{path} was not closed cleanly (the process writing it stopped without closing it) and needs recovery, \
         which only a writer can run: open it read-write once (`Database::open`; on the command line any \
         command that writes, such as `sketchdb --db {path} verify --engine`), then read-only opens work again"
    )]
    #[non_exhaustive]
    NeedsRecovery {
        /// The database file.
        path: PathBuf,
    },
    /// An operation that grows the file before it can give space back (an index rebuild,
    /// compaction) would need more free space than the file system holding the file has.
    /// Checked before anything is written: the file is unchanged.
    #[error(
        "{op} of {path} needs about {needed} bytes ({}) of free space, but its file system has {free} bytes ({}) free: \
         free at least {} more and run it again",
        mib(*needed), mib(*free), mib(needed.saturating_sub(*free))
    )]
    #[non_exhaustive]
    NoSpace {
        /// The operation (`"reindex"`, `"compact"`).
        op: &'static str,
        /// The database file.
        path: PathBuf,
        /// The bytes the operation was estimated to need, with margin.
        needed: u64,
        /// The free bytes of the file's file system.
        free: u64,
    },
    /// A write (or an operation that must write) through a handle opened read-only.
    #[error("{op} needs a writable database, but it was opened read-only")]
    ReadOnly {
        /// The operation refused.
        op: &'static str,
    },
}

impl StorageError {
    /// Maps a redb error into [`StorageError::Backend`] (`op` says what was being done).
    pub(crate) fn backend<E: Into<redb::Error>>(op: &'static str) -> impl FnOnce(E) -> StorageError {
        move |e| StorageError::Backend { op, source: Box::new(e.into()) }
    }

    /// Whether the error reports damaged data (as opposed to bad input or I/O).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            StorageError::CorruptMeta { .. }
                | StorageError::CorruptPage { .. }
                | StorageError::CorruptRow { .. }
                | StorageError::Inconsistent { .. }
                | StorageError::EnginePanic { .. }
                | StorageError::Truncated { .. }
        )
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn waited_text(waited: std::time::Duration) -> String {
    if waited < std::time::Duration::from_millis(100) {
        String::new()
    } else {
        format!(" (gave up after waiting {:.1} s)", waited.as_secs_f64())
    }
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_string(),
        (_, Some(s)) => s.clone(),
        _ => "(no message)".to_string(),
    }
}

/// Runs `f`, which calls into redb, turning a panic inside it into
/// [`StorageError::EnginePanic`]: redb panics on some damaged files, and a damaged file must
/// give an error, not bring the process down.
pub(crate) fn contain_any<T>(op: &'static str, f: impl FnOnce() -> T) -> Result<T, StorageError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|payload| StorageError::EnginePanic { op, detail: panic_message(payload.as_ref()) })
}

/// [`contain_any`] for a fallible `f`.
pub(crate) fn contain<T, E: From<StorageError>>(op: &'static str, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    contain_any(op, f)?
}

/// Renders a key for messages: quoted if it is UTF-8 text, hex otherwise.
pub(crate) fn show_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) => format!("{s:?}"),
        Err(_) => {
            let hex: String = key.iter().take(64).map(|b| format!("{b:02x}")).collect();
            if key.len() > 64 { format!("0x{hex}...") } else { format!("0x{hex}") }
        }
    }
}
