//! Compaction rewrites pages without tombstones and gives file space back; contents stay
//! equal.

use sketchdb::{Batch, CollectionConfig, Database, Sketch, SketchParams, TokenSet};

#[test]
fn compaction_shrinks_the_file_and_keeps_contents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Database::create(&path).unwrap();
    let a = db.create_collection("a", CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap())).unwrap();
    let b = db.create_collection("b", CollectionConfig::new(SketchParams::oph(100, 16, 1).unwrap())).unwrap();
    let sk = |c: &sketchdb::Collection, i: u64| -> Sketch {
        c.sketcher().sketch(&TokenSet::from_unsorted((0..30).map(|t| t * 1_000_003 + i).collect())).unwrap()
    };
    for c in [&a, &b] {
        for start in (0..30_000u64).step_by(5000) {
            let mut batch = Batch::new();
            for i in start..start + 5000 {
                batch.insert(format!("key-{i}"), sk(c, i));
            }
            c.apply(&batch).unwrap();
        }
    }
    // Delete two thirds of `a`, every other record of `b`'s first half, and upsert some.
    let mut del = Batch::new();
    for i in (0..30_000u64).filter(|i| i % 3 != 0) {
        del.delete(format!("key-{i}"));
    }
    a.apply(&del).unwrap();
    let mut del = Batch::new();
    for i in (0..15_000u64).step_by(2) {
        del.delete(format!("key-{i}"));
    }
    for i in 20_000..20_100u64 {
        del.upsert(format!("key-{i}"), sk(&b, i + 7));
    }
    b.apply(&del).unwrap();

    let expect = |c: &sketchdb::Collection| -> Vec<(Vec<u8>, Sketch)> {
        let mut v: Vec<_> = c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key, r.sketch)).collect();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    };
    let (before_a, before_b) = (expect(&a), expect(&b));
    assert_eq!((before_a.len(), before_b.len()), (10_000, 22_500));
    let size_before = std::fs::metadata(&path).unwrap().len();

    let summary = db.compact().unwrap();
    assert_eq!(summary.rows_purged, 20_000 + 7_500 + 100);
    assert!(summary.file_bytes_after < summary.file_bytes_before, "{summary:?}");
    let size_after = std::fs::metadata(&path).unwrap().len();
    assert!(size_after * 10 < size_before * 8, "{size_before} -> {size_after}");
    for c in [&a, &b] {
        assert_eq!(c.stats().unwrap().deleted, 0);
    }
    assert_eq!(expect(&a), before_a);
    assert_eq!(expect(&b), before_b);
    assert_eq!(b.get("key-20050").unwrap().unwrap().sketch, sk(&b, 20_057));
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());

    // Compacting again finds nothing to do; writes continue after it; reopen agrees.
    assert_eq!(db.compact().unwrap().pages_rewritten, 0);
    a.insert("late", &sk(&a, 1)).unwrap();
    drop((a, b, db));
    let db = Database::open(&path).unwrap();
    let a = db.collection("a").unwrap();
    assert_eq!(a.len().unwrap(), 10_001);
    assert_eq!(expect(&db.collection("b").unwrap()), before_b);
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
