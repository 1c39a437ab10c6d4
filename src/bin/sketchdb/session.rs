//! The open database of one invocation (or one interactive shell), opened on first use.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sketchdb::{Collection, CollectionConfig, Database};

use crate::error::CliError;
use crate::output::note;

/// The database file used when none is named.
pub const DEFAULT_DB: &str = "sketchdb.db";

/// The storage engine's page cache of a CLI process. The engine's default (1 GiB) would let
/// an ingest's memory grow with the file; a one-shot command reads most pages once, and the
/// operating system's file cache serves the rest.
pub const CACHE_BYTES: usize = 64 << 20;

/// A database path plus its handle once opened.
pub struct Session {
    path: PathBuf,
    db: Option<Database>,
    /// Whether `open` may create a missing file.
    pub create_missing: bool,
    /// Whether to open read-only (the file is then never written; writes are refused).
    pub read_only: bool,
    /// How long to wait for a file another process holds (`None`: the library's default).
    pub busy_timeout: Option<Duration>,
    /// The page cache size and the probe cache budget (`None`: [`CACHE_BYTES`], and the
    /// library's default).
    pub caches: (Option<usize>, Option<usize>),
}

/// Parses `--busy-timeout SECS`: a finite, non-negative number of seconds.
pub fn parse_busy_timeout(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{text} is not a number of seconds from 0 up"))
}

/// Parses `--page-cache` / `--probe-cache SIZE`: bytes, or a number with a K, M, G or T
/// suffix (powers of 1024; `KiB`, `MB` and the like read the same), at most 1T.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_uppercase().trim_end_matches('B').trim_end_matches('I') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("`{text}`: expected bytes, or a number with K, M, G or T (64M)")),
    };
    let value: f64 =
        number.parse().map_err(|_| format!("`{text}`: expected bytes, or a number with K, M, G or T (64M)"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !(0.0..=(1u64 << 40) as f64).contains(&bytes) {
        return Err(format!("`{text}`: at most 1T"));
    }
    Ok(bytes as usize)
}

impl Session {
    pub fn new(path: Option<PathBuf>) -> Self {
        Session {
            path: path.unwrap_or_else(|| PathBuf::from(DEFAULT_DB)),
            db: None,
            create_missing: false,
            read_only: false,
            busy_timeout: None,
            caches: (None, None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database, opened (or, when allowed, created) on first use, with a page cache of
    /// [`CACHE_BYTES`].
    pub fn db(&mut self) -> Result<&Database, CliError> {
        if self.db.is_none() {
            let mut builder = Database::builder().cache_size(self.caches.0.unwrap_or(CACHE_BYTES));
            if let Some(bytes) = self.caches.1 {
                builder = builder.probe_cache_budget(bytes);
            }
            if let Some(t) = self.busy_timeout {
                builder = builder.busy_timeout(t);
            }
            let db = if self.path.exists() && self.read_only {
                builder.open_read_only(&self.path)?
            } else if self.path.exists() {
                builder.open(&self.path)?
            } else if self.create_missing {
                note(&format!("sketchdb: creating database {}", self.path.display()));
                builder.create(&self.path)?
            } else {
                return Err(CliError::NotFound(format!(
                    "database {} does not exist (create it with `sketchdb --db {} create ...`)",
                    self.path.display(),
                    self.path.display()
                )));
            };
            self.db = Some(db);
        }
        match &self.db {
            Some(db) => Ok(db),
            None => Err(CliError::Runtime("database not open".into())),
        }
    }

    /// A collection by name.
    pub fn collection(&mut self, name: &str) -> Result<Collection, CliError> {
        Ok(self.db()?.collection(name)?)
    }

    /// The collection `name`, created with `config` when it does not exist yet.
    pub fn collection_or_create(&mut self, name: &str, config: CollectionConfig) -> Result<Collection, CliError> {
        let db = self.db()?;
        if db.collections()?.iter().any(|c| c.name() == name) {
            return Ok(db.collection(name)?);
        }
        note(&format!("sketchdb: creating collection `{name}` with {}", config.params));
        Ok(db.create_collection(name, config)?)
    }

    /// From now on, open read-write: a read-only handle is closed, and the next use reopens
    /// the file for writing. Whether it was read-only.
    pub fn make_writable(&mut self) -> bool {
        let was = self.read_only;
        if was {
            self.read_only = false;
            self.db = None;
        }
        was
    }

    /// Whether the database is open.
    pub fn is_open(&self) -> bool {
        self.db.is_some()
    }

    /// Names of the collections through this session's handle, for completion (empty when
    /// the database cannot be opened; a missing file is not created).
    pub fn collection_names(&mut self) -> Vec<String> {
        if self.db.is_none() && !self.path.exists() {
            return vec![];
        }
        // Completion never waits for a busy file.
        let wait = self.busy_timeout.replace(Duration::ZERO);
        let opened = self.db().is_ok();
        self.busy_timeout = wait;
        if !opened {
            return vec![];
        }
        self.db()
            .ok()
            .and_then(|db| db.collections().ok())
            .map(|cs| cs.iter().map(|c| c.name().to_string()).collect())
            .unwrap_or_default()
    }
}
