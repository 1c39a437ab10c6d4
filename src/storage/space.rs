//! Free space before operations that grow the file first: an index rebuild writes the new
//! index before the old one's pages are given back (one write transaction: redb frees the
//! old pages only at the commit), and compaction rewrites the pages that hold deleted rows
//! and the index before redb's file compaction shrinks the file. Each estimates the bytes it
//! adds ([`with_margin`] of its raw estimate) and, before writing anything, refuses with
//! [`StorageError::NoSpace`] when the file system holding the file has less free space.
//!
//! The free space is the file system's space available to this user (`statvfs`'s
//! `f_bavail`, through `fs4`). Tests set a pretended figure per path
//! ([`pretend_free_space`]), since a full disk cannot be made in a test.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::error::StorageError;
use super::reader::{ReadSnapshot, open};
use super::store::Store;
use super::tables::{LSH_BUCKETS, LSH_DEAD, LSH_GROUPS_V1, LSH_ROWS, SIMHASH_BUCKETS};

/// Slack added to every estimate: redb's pages are rarely full, and the commit writes
/// its own metadata (allocator state, roots).
const SLACK_BYTES: u64 = 1 << 20;

/// Pretended free space per database path (tests only; empty otherwise).
static PRETENDED: Mutex<Vec<(PathBuf, u64)>> = Mutex::new(Vec::new());

/// Makes [`free_space`] report `bytes` for the database at `path` (`None`: the real figure
/// again).
pub(crate) fn pretend_free_space(path: &Path, bytes: Option<u64>) {
    let mut p = PRETENDED.lock();
    p.retain(|(q, _)| q != path);
    if let Some(b) = bytes {
        p.push((path.to_path_buf(), b));
    }
}

/// A raw estimate of bytes to add, with the margin the checks use: a quarter more, plus
/// 1 MiB.
pub(crate) fn with_margin(raw: u64) -> u64 {
    raw.saturating_add(raw / 4).saturating_add(SLACK_BYTES)
}

/// The free bytes of the file system that holds the database at `path`.
pub(crate) fn free_space(path: &Path) -> Result<u64, StorageError> {
    if let Some((_, b)) = PRETENDED.lock().iter().find(|(q, _)| q == path) {
        return Ok(*b);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs4::available_space(dir).map_err(|source| StorageError::Io {
        op: "read the free space of",
        path: dir.into(),
        source,
    })
}

/// `Ok` when `needed` bytes fit in `free`, else [`StorageError::NoSpace`].
pub(crate) fn check(op: &'static str, path: &Path, needed: u64, free: u64) -> Result<(), StorageError> {
    if needed <= free { Ok(()) } else { Err(StorageError::NoSpace { op, path: path.to_path_buf(), needed, free }) }
}

impl Store {
    /// Refuses `op` with [`StorageError::NoSpace`] when the file system holding the file
    /// has less free space than `raw` bytes with the margin ([`with_margin`]). Databases on
    /// custom backends (no file) are not checked.
    pub(crate) fn ensure_space(&self, op: &'static str, raw: u64) -> Result<(), StorageError> {
        if self.is_backend() || raw == 0 {
            return Ok(());
        }
        let needed = with_margin(raw);
        check(op, self.location(), needed, free_space(self.location())?)
    }
}

impl Store {
    /// Whether the database lives on a custom backend (no file, no file system).
    fn is_backend(&self) -> bool {
        self.location() == Path::new("<backend>")
    }
}

impl ReadSnapshot {
    /// The bytes (keys and values) of collection `id`'s entries in the index tables.
    pub(crate) fn index_bytes(&self, id: u32) -> Result<u64, StorageError> {
        let txn = self.txn();
        let err = || StorageError::backend("measure index");
        let mut total = 0u64;
        macro_rules! sum {
            ($def:expr, $range:expr, $key_bytes:expr) => {
                if let Some(t) = open(txn, $def)? {
                    for e in t.range($range).map_err(err())? {
                        let (_, v) = e.map_err(err())?;
                        total += $key_bytes + v.value().len() as u64;
                    }
                }
            };
        }
        sum!(LSH_BUCKETS, (id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), 24);
        sum!(SIMHASH_BUCKETS, (id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), 12);
        sum!(LSH_GROUPS_V1, (id, 0u32, 0u64, 0u32)..=(id, u32::MAX, u64::MAX, u32::MAX), 20);
        sum!(LSH_ROWS, (id, 0u64)..=(id, u64::MAX), 12);
        if let Some(t) = open(txn, LSH_DEAD)? {
            total += 12 * t.range((id, 0u64)..=(id, u64::MAX)).map_err(err())?.count() as u64;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_refuses_exactly_when_needed_exceeds_free() {
        let p = Path::new("/data/a.sketchdb");
        assert!(check("reindex", p, 100, 100).is_ok());
        assert!(check("reindex", p, 0, 0).is_ok());
        match check("reindex", p, 101, 100) {
            Err(StorageError::NoSpace { op, path, needed, free }) => {
                assert_eq!((op, path.as_path(), needed, free), ("reindex", p, 101, 100));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn margin_adds_a_quarter_and_a_mebibyte() {
        assert_eq!(with_margin(0), 1 << 20);
        assert_eq!(with_margin(4_000_000), 5_000_000 + (1 << 20));
        assert_eq!(with_margin(u64::MAX), u64::MAX);
    }

    #[test]
    fn the_real_free_space_of_a_temporary_directory_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.sketchdb");
        assert!(free_space(&path).unwrap() > 0);
        pretend_free_space(&path, Some(7));
        assert_eq!(free_space(&path).unwrap(), 7);
        pretend_free_space(&path, None);
        assert_ne!(free_space(&path).unwrap(), 7);
    }
}
