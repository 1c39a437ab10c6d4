//! Readers see a consistent snapshot while a writer commits; Database is Send + Sync.

use std::sync::atomic::{AtomicBool, Ordering};

use sketchdb::{Batch, CollectionConfig, Database, SketchParams, TokenSet};

#[test]
fn readers_see_whole_commits_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::simhash(64, 1).unwrap())).unwrap();
    let sk = |i: u64| c.sketcher().sketch(&TokenSet::from_unsorted(vec![i, i * 3 + 1])).unwrap();
    const BATCH: u64 = 250;
    let done = &AtomicBool::new(false);
    let c = &c;
    std::thread::scope(|s| {
        let writer = s.spawn(move || {
            for round in 0..40u64 {
                let mut b = Batch::new();
                for i in round * BATCH..(round + 1) * BATCH {
                    b.insert(format!("k{i}"), sk(i));
                }
                c.apply(&b).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        for _ in 0..2 {
            let db = db.clone();
            s.spawn(move || {
                let c = db.collection("c").unwrap();
                let mut checks = 0;
                while !done.load(Ordering::SeqCst) || checks < 3 {
                    let snap = c.snapshot().unwrap();
                    let stats = snap.stats().unwrap();
                    assert_eq!(stats.live % BATCH, 0, "a torn commit is visible");
                    let scanned = snap.into_scan().count() as u64;
                    assert_eq!(scanned, stats.live, "the scan and the counters disagree within a snapshot");
                    checks += 1;
                }
            });
        }
        writer.join().unwrap();
    });
    assert_eq!(c.len().unwrap(), 40 * BATCH);
}

#[test]
fn a_snapshot_does_not_see_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::minhash(8, 64, 1).unwrap())).unwrap();
    c.insert_tokens("a", &TokenSet::from_unsorted(vec![1, 2])).unwrap();
    let snap = c.snapshot().unwrap();
    c.insert_tokens("b", &TokenSet::from_unsorted(vec![3])).unwrap();
    c.delete("a").unwrap();
    assert!(snap.get("a").unwrap().is_some());
    assert!(snap.get("b").unwrap().is_none());
    assert!(c.get("a").unwrap().is_none());
    // File compaction needs no live snapshot.
    assert!(matches!(db.compact(), Err(sketchdb::Error::Storage(sketchdb::StorageError::Busy { .. }))));
    drop(snap);
    db.compact().unwrap();
}
