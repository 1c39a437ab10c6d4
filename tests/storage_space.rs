//! Free space before growing rebuilds: `Collection::rebuild_index` and `Database::compact`
//! estimate the bytes they add before the file can shrink and, when the file system has less
//! free (a pretended figure: a full disk cannot be made in a test), refuse with
//! `StorageError::NoSpace` naming both figures, before writing a byte. With the real free
//! space they run, and a rebuild's estimate bounds the index it built and what it added to the
//! file.

use std::path::Path;

use sketchdb::testing::pretend_free_space;
use sketchdb::{Batch, CollectionConfig, Database, Error, IndexConfig, SketchParams, Sketcher, StorageError, TokenSet};

fn fill(path: &Path, n: u64) -> Database {
    let db = Database::create(path).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::minhash(128, 32, 1).unwrap())).unwrap();
    let s = Sketcher::new(*c.params()).unwrap();
    let mut batch = Batch::new();
    for i in 0..n {
        let set = TokenSet::from_unsorted((0..30).map(|t| i * 7 + t).collect());
        batch.insert(format!("k{i}"), s.sketch(&set).unwrap());
    }
    c.apply(&batch).unwrap();
    db
}

fn no_space(r: sketchdb::Result<impl std::fmt::Debug>, op: &str, path: &Path, free: u64) -> u64 {
    match r {
        Err(Error::Storage(StorageError::NoSpace { op: o, path: p, needed, free: f, .. })) => {
            assert_eq!((o, p.as_path(), f), (op, path, free));
            assert!(needed > free);
            needed
        }
        Err(Error::Index(e)) => match std::error::Error::source(&e).and_then(|s| s.downcast_ref::<StorageError>()) {
            Some(StorageError::NoSpace { op: o, path: p, needed, free: f, .. }) => {
                assert_eq!((*o, p.as_path(), *f), (op, path, free));
                assert!(needed > f);
                *needed
            }
            _ => panic!("{op}: expected NoSpace, got {e:?}"),
        },
        other => panic!("{op}: expected NoSpace, got {other:?}"),
    }
}

#[test]
fn reindex_refuses_without_space_and_its_estimate_bounds_the_growth() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sketchdb");
    let db = fill(&path, 20_000);
    let mut c = db.collection("c").unwrap();
    let lsh = IndexConfig::Lsh { threshold: 0.8, bands: None, rows: None };
    let before = std::fs::read(&path).unwrap();
    pretend_free_space(&path, Some(100_000));
    let needed = no_space(c.rebuild_index(lsh), "reindex", &path, 100_000);
    let text = c.rebuild_index(lsh).unwrap_err().to_string();
    assert!(text.contains("reindex of") && text.contains("bytes") && text.contains("free at least"), "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "a refused reindex wrote to the file");
    assert_eq!(c.stats().unwrap().index, None);
    // Just enough: it runs, and adds no more than it said it needs.
    pretend_free_space(&path, Some(needed));
    c.rebuild_index(lsh).unwrap();
    pretend_free_space(&path, None);
    assert!(c.stats().unwrap().index.is_some());
    let grown = std::fs::metadata(&path).unwrap().len().saturating_sub(before.len() as u64);
    assert!(grown <= needed, "reindex added {grown} bytes, estimated {needed}");
    // The estimate bounds the index's bytes from above, within a small factor.
    let index = sketchdb::testing::index_bytes(&c, &db).unwrap();
    assert!(index > 0 && index <= needed, "index of {index} bytes, estimated {needed}");
    assert!(needed <= 4 * index + (2 << 20), "estimate {needed} far above the index's {index} bytes");
    eprintln!("reindex of 20k rows: estimated {needed} bytes with margin; index {index} bytes, file grew {grown}");
}

#[test]
fn compact_refuses_without_space_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sketchdb");
    let db = fill(&path, 5_000);
    let c = db.collection("c").unwrap();
    let mut batch = Batch::new();
    for i in (0..5_000).step_by(2) {
        batch.delete(format!("k{i}"));
    }
    c.apply(&batch).unwrap();
    let before = std::fs::read(&path).unwrap();
    pretend_free_space(&path, Some(1_000));
    no_space(db.compact(), "compact", &path, 1_000);
    assert_eq!(std::fs::read(&path).unwrap(), before, "a refused compact wrote to the file");
    assert_eq!(c.stats().unwrap().deleted, 2_500);
    pretend_free_space(&path, None);
    let summary = db.compact().unwrap();
    assert_eq!((summary.rows_purged, c.stats().unwrap().deleted, c.len().unwrap()), (2_500, 0, 2_500));
}
