//! The rejects report: every bad record is counted by reason, the first few are shown on
//! stderr with `file:line` and the reason, and with `--rejects FILE` all of them are written
//! there as JSON lines. Folder entries skipped without being records (hidden, symlinks,
//! loops, binary files) are counted and the first few shown the same way.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use sketchdb::io::{Reject, RejectReason, SkipReason, Skipped};

use crate::error::CliError;
use crate::output::{json_mode, note};

/// Rejects (and skipped entries) shown on stderr before the rest are only counted.
pub const SHOWN: usize = 5;

/// Why a record was rejected: the reader's reasons, plus the sketch's refusal. The `name` is
/// what `--rejects` and `--json` write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RejectKind {
    InvalidJson,
    NotAnObject,
    MissingField,
    NotAString,
    InvalidUtf8,
    EmptyText,
    NoTokens,
    BadTokens,
    BadFingerprint,
    AmbiguousContent,
    EmptyKey,
    KeyTooLong,
    DuplicateKey,
    TooLarge,
    Csv,
    Unreadable,
    /// The collection cannot sketch the content (a fingerprint too wide for it, tokens for a
    /// fingerprint collection, ...).
    Sketch,
    /// A reason this build of the CLI has no name for.
    Other,
}

impl RejectKind {
    /// The reader's reason's kind.
    pub fn of(reason: &RejectReason) -> Self {
        match reason {
            RejectReason::InvalidJson(_) => RejectKind::InvalidJson,
            RejectReason::NotAnObject => RejectKind::NotAnObject,
            RejectReason::MissingField(_) => RejectKind::MissingField,
            RejectReason::NotAString { .. } => RejectKind::NotAString,
            RejectReason::InvalidUtf8 { .. } => RejectKind::InvalidUtf8,
            RejectReason::EmptyText => RejectKind::EmptyText,
            RejectReason::NoTokens => RejectKind::NoTokens,
            RejectReason::BadTokens(_) => RejectKind::BadTokens,
            RejectReason::BadFingerprint { .. } => RejectKind::BadFingerprint,
            RejectReason::AmbiguousContent(_) => RejectKind::AmbiguousContent,
            RejectReason::EmptyKey => RejectKind::EmptyKey,
            RejectReason::KeyTooLong { .. } => RejectKind::KeyTooLong,
            RejectReason::DuplicateKey(_) => RejectKind::DuplicateKey,
            RejectReason::TooLarge { .. } => RejectKind::TooLarge,
            RejectReason::Csv(_) => RejectKind::Csv,
            RejectReason::Unreadable(_) => RejectKind::Unreadable,
            _ => RejectKind::Other,
        }
    }

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            RejectKind::InvalidJson => "invalid_json",
            RejectKind::NotAnObject => "not_an_object",
            RejectKind::MissingField => "missing_field",
            RejectKind::NotAString => "not_a_string",
            RejectKind::InvalidUtf8 => "invalid_utf8",
            RejectKind::EmptyText => "empty_text",
            RejectKind::NoTokens => "no_tokens",
            RejectKind::BadTokens => "bad_tokens",
            RejectKind::BadFingerprint => "bad_fingerprint",
            RejectKind::AmbiguousContent => "ambiguous_content",
            RejectKind::EmptyKey => "empty_key",
            RejectKind::KeyTooLong => "key_too_long",
            RejectKind::DuplicateKey => "duplicate_key",
            RejectKind::TooLarge => "too_large",
            RejectKind::Csv => "csv",
            RejectKind::Unreadable => "unreadable",
            RejectKind::Sketch => "sketch",
            RejectKind::Other => "other",
        }
    }
}

/// The snake_case name of a folder skip.
pub fn skip_name(why: SkipReason) -> &'static str {
    match why {
        SkipReason::Hidden => "hidden",
        SkipReason::Symlink => "symlink",
        SkipReason::Loop => "loop",
        SkipReason::Binary => "binary",
        SkipReason::Special => "special",
        _ => "other",
    }
}

/// One bad record, as reported.
pub struct Bad<'a> {
    /// `file:line`, `file:row` or the file.
    pub origin: String,
    /// The record's key, when it was read.
    pub key: Option<&'a str>,
    pub kind: RejectKind,
    /// The reason in words.
    pub message: String,
}

impl Bad<'_> {
    /// A reader's reject.
    pub fn read(r: &Reject) -> Bad<'static> {
        Bad { origin: r.origin.to_string(), key: None, kind: RejectKind::of(&r.reason), message: r.reason.to_string() }
    }

    /// `origin: message` (with the key when known), as errors and stderr show it.
    pub fn line(&self) -> String {
        match self.key {
            Some(k) => format!("{}: record `{k}`: {}", self.origin, self.message),
            None => format!("{}: {}", self.origin, self.message),
        }
    }
}

/// Counts and reports rejects and skipped entries.
pub struct Rejects {
    file: Option<(PathBuf, BufWriter<File>)>,
    by_kind: BTreeMap<RejectKind, u64>,
    count: u64,
    skipped: BTreeMap<&'static str, u64>,
    skipped_count: u64,
    /// Whether rejects are shown on stderr (not in strict mode, whose error shows the one).
    show: bool,
}

impl Rejects {
    /// A report; with `path`, every reject is also written there (the file is created now).
    /// `show`: the first few rejects are shown on stderr.
    pub fn new(path: Option<&Path>, show: bool) -> Result<Self, CliError> {
        let file = match path {
            Some(p) => Some((p.to_path_buf(), BufWriter::new(File::create(p).map_err(|e| CliError::io(p, e))?))),
            None => None,
        };
        Ok(Rejects { file, by_kind: BTreeMap::new(), count: 0, skipped: BTreeMap::new(), skipped_count: 0, show })
    }

    /// Records one bad record: counted, written to the rejects file, shown if among the first.
    pub fn add(&mut self, bad: &Bad<'_>) -> Result<(), CliError> {
        self.count += 1;
        *self.by_kind.entry(bad.kind).or_default() += 1;
        let obj = json!({"origin": bad.origin, "key": bad.key, "reason": bad.kind.name(), "message": bad.message});
        if let Some((path, w)) = &mut self.file {
            writeln!(w, "{obj}").map_err(|e| CliError::io(path, e))?;
        }
        if self.show && self.count <= SHOWN as u64 {
            if json_mode() {
                note(&json!({"reject": obj}).to_string());
            } else {
                note(&format!("sketchdb: skipped {}", bad.line()));
            }
        }
        Ok(())
    }

    /// Records the folder entries an input skipped.
    pub fn skipped(&mut self, entries: &[Skipped]) {
        for s in entries {
            self.skipped_count += 1;
            let name = skip_name(s.why);
            *self.skipped.entry(name).or_default() += 1;
            if self.skipped_count <= SHOWN as u64 {
                if json_mode() {
                    note(&json!({"skipped": {"path": s.path.display().to_string(), "reason": name}}).to_string());
                } else {
                    note(&format!("sketchdb: skipped {} ({name})", s.path.display()));
                }
            }
        }
    }

    /// Rejected records so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Rejected records that keep `--sync` from deleting: all but those without tokens
    /// (`empty_text`, `no_tokens`), whose stored version, if any, is stale either way.
    pub fn blocking_sync(&self) -> u64 {
        let tokenless: u64 =
            [RejectKind::EmptyText, RejectKind::NoTokens].iter().filter_map(|k| self.by_kind.get(k)).sum();
        self.count - tokenless
    }

    /// Skipped folder entries so far.
    pub fn skipped_count(&self) -> u64 {
        self.skipped_count
    }

    /// Flushes the rejects file.
    pub fn finish(&mut self) -> Result<(), CliError> {
        if let Some((path, w)) = &mut self.file {
            w.flush().map_err(|e| CliError::io(path, e))?;
        }
        Ok(())
    }

    /// Counts by reason, for the summary line: `3 invalid_json, 1 no_tokens`.
    pub fn breakdown(&self) -> String {
        let mut parts: Vec<String> = self.by_kind.iter().map(|(k, n)| format!("{n} {}", k.name())).collect();
        parts.extend(self.skipped.iter().map(|(k, n)| format!("{n} {k} skipped")));
        parts.join(", ")
    }

    /// The JSON of the counts: `{"invalid_json": 3, ...}` and `{"binary": 1, ...}`.
    pub fn json(&self) -> (serde_json::Value, serde_json::Value) {
        let kinds: serde_json::Map<String, serde_json::Value> =
            self.by_kind.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect();
        let skipped: serde_json::Map<String, serde_json::Value> =
            self.skipped.iter().map(|(k, n)| ((*k).to_string(), json!(n))).collect();
        (kinds.into(), skipped.into())
    }

    /// Where the full list is, for the summary: the rejects file, or a hint.
    pub fn where_listed(&self) -> Option<String> {
        match &self.file {
            Some((p, _)) => Some(format!("all listed in {}", p.display())),
            None if self.count > SHOWN as u64 => Some(format!("first {SHOWN} shown; --rejects FILE lists all")),
            None => None,
        }
    }
}
