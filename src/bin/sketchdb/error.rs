//! The CLI's error: every command's failure, printed as one line.

use std::path::Path;

/// A command's failure: printed as one line `sketchdb: error: ...`, exit code 1.
#[derive(Debug)]
pub enum CliError {
    /// Malformed input, with file and line where known.
    Input(String),
    /// A file could not be read or written.
    Io(String),
    /// Wrong or missing arguments beyond what clap checks.
    Usage(String),
    /// An error from the sketchdb library.
    Db(sketchdb::Error),
}

impl CliError {
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        CliError::Io(format!("{}: {e}", path.display()))
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Input(m) | CliError::Io(m) | CliError::Usage(m) => f.write_str(m),
            CliError::Db(e) => {
                write!(f, "{e}")?;
                let mut src = std::error::Error::source(e);
                while let Some(s) = src {
                    write!(f, ": {s}")?;
                    src = s.source();
                }
                Ok(())
            }
        }
    }
}

impl From<sketchdb::Error> for CliError {
    fn from(e: sketchdb::Error) -> Self {
        CliError::Db(e)
    }
}

impl From<sketchdb::IndexError> for CliError {
    fn from(e: sketchdb::IndexError) -> Self {
        CliError::Db(e.into())
    }
}

impl From<sketchdb::SketchError> for CliError {
    fn from(e: sketchdb::SketchError) -> Self {
        CliError::Db(e.into())
    }
}
