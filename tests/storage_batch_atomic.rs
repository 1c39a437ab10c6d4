//! A batch that fails half way (a duplicate key in the middle) leaves nothing behind.

use sketchdb::{Batch, CollectionConfig, Database, Error, SketchParams, StorageError, TokenSet};

#[test]
fn a_failed_batch_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::minhash(32, 64, 3).unwrap())).unwrap();
    let sk = |i: u64| c.sketcher().sketch(&TokenSet::from_unsorted(vec![i, i + 1, i * 31])).unwrap();
    let mut first = Batch::new();
    for i in 0..500u64 {
        first.insert(format!("k{i}"), sk(i));
    }
    c.apply(&first).unwrap();
    let before = c.stats().unwrap();
    let pages_before = sketchdb::testing::page_starts(&c, &db).unwrap();

    // 300 new keys spanning pages, upserts and deletes of old keys, then a duplicate of an
    // old key, then more work: the whole batch must vanish.
    let mut bad = Batch::new();
    for i in 1000..1300u64 {
        bad.insert(format!("k{i}"), sk(i));
    }
    bad.upsert("k1", sk(99_999)).delete("k2").delete("k3");
    bad.insert("k10", sk(7)); // duplicate
    for i in 2000..2100u64 {
        bad.insert(format!("k{i}"), sk(i));
    }
    match c.apply(&bad) {
        Err(Error::Storage(StorageError::DuplicateKey { collection, key })) => {
            assert_eq!(collection, "c");
            assert_eq!(key, "\"k10\"");
        }
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    // A duplicate inside the batch itself is caught too.
    let mut dup = Batch::new();
    dup.insert("fresh", sk(1)).insert("fresh", sk(2));
    assert!(matches!(c.apply(&dup), Err(Error::Storage(StorageError::DuplicateKey { .. }))));

    assert_eq!(c.stats().unwrap(), before);
    assert_eq!(sketchdb::testing::page_starts(&c, &db).unwrap(), pages_before);
    for i in 0..500u64 {
        assert_eq!(c.get(format!("k{i}")).unwrap().unwrap().sketch, sk(i), "k{i}");
    }
    for i in (1000..1300u64).chain(2000..2100) {
        assert!(c.get(format!("k{i}")).unwrap().is_none());
    }
    assert!(c.get("fresh").unwrap().is_none());
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    // And the next good batch continues from the same row id.
    let mut ok = Batch::new();
    ok.insert("after", sk(5));
    assert_eq!(c.apply(&ok).unwrap().first_row, before.next_row);
}
