//! The CLI's error: every command's failure, printed as one line (or one JSON object with
//! `--json`), and the exit code of its class.
//!
//! Exit codes (documented in `--help` and README.md, one test each in
//! tests/cli_exit_codes.rs): 0 success (also when stdout is closed early, `| head`);
//! 1 runtime error (I/O, a missing database, collection or key, damage, verify problems);
//! 2 usage or bad input (the command line, a parameter value, a malformed input record);
//! 3 the database is busy (held by another process). A library error gets its class from
//! its variant alone, so the same kind of error always gives the same code.

use std::path::Path;

use sketchdb::{Error, IndexError, QueryError, SketchError, StorageError};

/// Exit code of a runtime error.
pub const EXIT_RUNTIME: u8 = 1;
/// Exit code of a usage error or bad input.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a database held by another process.
pub const EXIT_BUSY: u8 = 3;

/// The exit-code table shown by `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success (also when the reader of stdout goes away early, as with `| head`)
  1  runtime error: I/O, a missing database, collection or key, damaged data, verify problems,
     a file left unclean by a killed writer (any command that writes recovers it)
  2  usage or bad input: unknown options, out-of-range parameters, malformed input records
  3  the database is busy: another process holds it open

With --json, an error is one line on stderr:
  {\"error\": {\"code\": N, \"kind\": \"...\", \"message\": \"...\"}}";

/// What went wrong, finer than the exit code: the `kind` of a JSON error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The command line: unknown or missing arguments, conflicting options (2).
    Usage,
    /// A parameter value or an input record the library or the CLI refuses (2).
    BadInput,
    /// A file could not be read or written (1).
    Io,
    /// A database, collection or key that does not exist (1).
    NotFound,
    /// Damaged or unreadable data in the database (1).
    Corrupt,
    /// Any other failure while running (1).
    Runtime,
    /// The database is held by another process, or needs exclusive access (3).
    Busy,
    /// The file was not closed cleanly and a read-only open cannot recover it; a command
    /// that writes (any, such as `verify --engine`) recovers it (1).
    NeedsRecovery,
}

impl ErrorKind {
    /// The name in `{"error": {"kind": ...}}`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::BadInput => "bad_input",
            ErrorKind::Io => "io",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Runtime => "runtime",
            ErrorKind::Busy => "busy",
            ErrorKind::NeedsRecovery => "needs_recovery",
        }
    }

    /// The process exit code of this kind.
    pub fn code(self) -> u8 {
        match self {
            ErrorKind::Usage | ErrorKind::BadInput => EXIT_USAGE,
            ErrorKind::Io
            | ErrorKind::NotFound
            | ErrorKind::Corrupt
            | ErrorKind::Runtime
            | ErrorKind::NeedsRecovery => EXIT_RUNTIME,
            ErrorKind::Busy => EXIT_BUSY,
        }
    }
}

/// A command's failure.
#[derive(Debug)]
pub enum CliError {
    /// Malformed input data, with file and line where known (exit 2).
    Input(String),
    /// A file could not be read or written (exit 1).
    Io(String),
    /// Wrong or missing arguments, or a parameter out of range (exit 2).
    Usage(String),
    /// A missing database file (exit 1).
    NotFound(String),
    /// A command that ran and found a failure, such as verify's problems (exit 1).
    Runtime(String),
    /// An error from the sketchdb library, classed by its variant.
    Db(Error),
    /// A cause with a prefix saying where; the cause's class.
    Context(String, Box<CliError>),
    /// The reader of stdout went away (`| head`): the command stops quietly, exit 0.
    Closed,
}

impl CliError {
    /// A failed read or write of `path`; a closed pipe is [`CliError::Closed`].
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return CliError::Closed;
        }
        CliError::Io(format!("{}: {e}", path.display()))
    }

    /// This error with `prefix` in front of its message, keeping its class.
    pub fn context(self, prefix: impl Into<String>) -> Self {
        match self {
            CliError::Closed => CliError::Closed,
            e => CliError::Context(prefix.into(), Box::new(e)),
        }
    }

    /// The error's kind (and so its exit code).
    pub fn kind(&self) -> ErrorKind {
        match self {
            CliError::Input(_) => ErrorKind::BadInput,
            CliError::Usage(_) => ErrorKind::Usage,
            CliError::Io(_) => ErrorKind::Io,
            CliError::NotFound(_) => ErrorKind::NotFound,
            CliError::Runtime(_) | CliError::Closed => ErrorKind::Runtime,
            CliError::Db(e) => db_kind(e),
            CliError::Context(_, e) => e.kind(),
        }
    }
}

fn sketch_kind(_: &SketchError) -> ErrorKind {
    // Every sketch error is about parameters or sketches given to the library.
    ErrorKind::BadInput
}

fn index_kind(e: &IndexError) -> ErrorKind {
    match e {
        IndexError::InvalidParam { .. } | IndexError::NotBanded { .. } | IndexError::SizeMismatch { .. } => {
            ErrorKind::BadInput
        }
        IndexError::Sketch(s) => sketch_kind(s),
        IndexError::Storage(s) => storage_kind(s),
        IndexError::Collection { source, .. } => index_kind(source),
        _ => ErrorKind::Corrupt,
    }
}

fn query_kind(e: &QueryError) -> ErrorKind {
    match e {
        QueryError::UnknownKey { .. } => ErrorKind::NotFound,
        _ => ErrorKind::BadInput,
    }
}

fn storage_kind(e: &StorageError) -> ErrorKind {
    match e {
        StorageError::Busy { .. } => ErrorKind::Busy,
        StorageError::Locked { .. } => ErrorKind::Busy,
        StorageError::NeedsRecovery { .. } => ErrorKind::NeedsRecovery,
        StorageError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        StorageError::Io { .. } => ErrorKind::Io,
        StorageError::UnknownCollection { .. } => ErrorKind::NotFound,
        StorageError::InvalidCollectionName { .. }
        | StorageError::EmptyKey { .. }
        | StorageError::KeyTooLong { .. }
        | StorageError::DuplicateKey { .. }
        | StorageError::ShinglesRequired { .. }
        | StorageError::Incompatible { .. } => ErrorKind::BadInput,
        StorageError::AlreadyExists { .. } | StorageError::CollectionExists { .. } => ErrorKind::Runtime,
        _ if e.is_corruption() => ErrorKind::Corrupt,
        StorageError::NotSketchdb { .. } | StorageError::UnsupportedFormat { .. } => ErrorKind::Corrupt,
        _ => ErrorKind::Runtime,
    }
}

fn db_kind(e: &Error) -> ErrorKind {
    match e {
        Error::Sketch(s) => sketch_kind(s),
        Error::Index(i) => index_kind(i),
        Error::Query(q) => query_kind(q),
        Error::Storage(s) => storage_kind(s),
        Error::Codec(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Runtime,
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Input(m)
            | CliError::Io(m)
            | CliError::Usage(m)
            | CliError::NotFound(m)
            | CliError::Runtime(m) => f.write_str(m),
            CliError::Context(prefix, e) => write!(f, "{prefix}: {e}"),
            CliError::Closed => f.write_str("stdout closed"),
            CliError::Db(e) => {
                // The chain of causes, each said once: most messages already end with their
                // cause's text, which is then not repeated.
                let mut text = e.to_string();
                let mut src = std::error::Error::source(e);
                while let Some(s) = src {
                    let cause = s.to_string();
                    if !text.contains(&cause) {
                        text.push_str(": ");
                        text.push_str(&cause);
                    }
                    src = s.source();
                }
                f.write_str(&text)
            }
        }
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        CliError::Db(e)
    }
}

impl From<IndexError> for CliError {
    fn from(e: IndexError) -> Self {
        CliError::Db(e.into())
    }
}

impl From<SketchError> for CliError {
    fn from(e: SketchError) -> Self {
        CliError::Db(e.into())
    }
}
