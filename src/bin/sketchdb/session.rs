//! The open database of one invocation (or one interactive shell), opened on first use.

use std::path::{Path, PathBuf};

use sketchdb::{Collection, CollectionConfig, Database};

use crate::error::CliError;
use crate::output::note;

/// The database file used when none is named.
pub const DEFAULT_DB: &str = "sketchdb.db";

/// A database path plus its handle once opened.
pub struct Session {
    path: PathBuf,
    db: Option<Database>,
    /// Whether `open` may create a missing file.
    pub create_missing: bool,
    /// Whether to open read-only (the file is then never written; writes are refused).
    pub read_only: bool,
}

impl Session {
    pub fn new(path: Option<PathBuf>) -> Self {
        Session {
            path: path.unwrap_or_else(|| PathBuf::from(DEFAULT_DB)),
            db: None,
            create_missing: false,
            read_only: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database, opened (or, when allowed, created) on first use.
    pub fn db(&mut self) -> Result<&Database, CliError> {
        if self.db.is_none() {
            let db = if self.path.exists() && self.read_only {
                Database::open_read_only(&self.path)?
            } else if self.path.exists() {
                Database::open(&self.path)?
            } else if self.create_missing {
                note(&format!("sketchdb: creating database {}", self.path.display()));
                Database::create(&self.path)?
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

    /// Names of the collections, for completion (empty when the database cannot be opened).
    pub fn collection_names(&mut self) -> Vec<String> {
        self.db()
            .ok()
            .and_then(|db| db.collections().ok())
            .map(|cs| cs.iter().map(|c| c.name().to_string()).collect())
            .unwrap_or_default()
    }
}
