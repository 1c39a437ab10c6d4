//! Basic operations: create, collections, insert/upsert/delete/get, scans, reopen.

use sketchdb::{Batch, CollectionConfig, Database, Error, SketchParams, StorageError, TokenSet};

fn tokens(i: u64) -> TokenSet {
    TokenSet::from_unsorted((0..20).map(|t| t * 7919 + i * 104_729).collect())
}

#[test]
fn insert_get_upsert_delete_scan_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    let db = Database::create(&path).unwrap();
    assert!(matches!(Database::create(&path), Err(Error::Storage(StorageError::AlreadyExists { .. }))));
    let params = SketchParams::minhash(64, 32, 1).unwrap();
    let c = db.create_collection("docs", CollectionConfig::new(params)).unwrap();
    assert!(matches!(
        db.create_collection("docs", CollectionConfig::new(params)),
        Err(Error::Storage(StorageError::CollectionExists { .. }))
    ));
    let s0 = c.sketcher().sketch(&tokens(0)).unwrap();
    let s1 = c.sketcher().sketch(&tokens(1)).unwrap();
    assert_eq!(c.insert("a", &s0).unwrap(), 0);
    assert_eq!(c.insert_tokens("b", &tokens(1)).unwrap(), 1);
    assert_eq!(c.insert_text("t", "the quick brown fox jumps over the lazy dog").unwrap(), 2);
    assert!(matches!(c.insert("a", &s1), Err(Error::Storage(StorageError::DuplicateKey { .. }))));
    assert_eq!(c.get("a").unwrap().unwrap().sketch, s0);
    assert_eq!(c.get("b").unwrap().unwrap().sketch, s1);
    assert_eq!(c.upsert("a", &s1).unwrap(), 3);
    let rec = c.get("a").unwrap().unwrap();
    assert_eq!((rec.row_id, &rec.sketch), (3, &s1));
    assert!(c.get_row(0).unwrap().is_none());
    assert!(c.delete("b").unwrap());
    assert!(!c.delete("b").unwrap());
    assert!(c.get("b").unwrap().is_none());
    let stats = c.stats().unwrap();
    assert_eq!((stats.live, stats.deleted, stats.next_row), (2, 2, 4));
    let keys: Vec<String> = c.scan().unwrap().map(|r| r.unwrap().key_str().unwrap().to_string()).collect();
    assert_eq!(keys, ["t", "a"]);

    let mut batch = Batch::new();
    for i in 10..1000u64 {
        batch.insert(format!("k{i}"), c.sketcher().sketch(&tokens(i)).unwrap());
    }
    let summary = c.apply(&batch).unwrap();
    assert_eq!((summary.inserted, summary.first_row, summary.new_rows), (990, 4, 990));
    drop(c);
    drop(db);

    let db = Database::open(&path).unwrap();
    let c = db.collection("docs").unwrap();
    assert_eq!(c.len().unwrap(), 992);
    for i in 10..1000u64 {
        assert_eq!(c.get(format!("k{i}")).unwrap().unwrap().sketch, c.sketcher().sketch(&tokens(i)).unwrap());
    }
    assert_eq!(c.scan().unwrap().count(), 992);
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(report.engine_integrity_ok);
    assert_eq!(db.collections().unwrap().len(), 1);
    db.drop_collection("docs").unwrap();
    assert!(matches!(c.get("k10"), Err(Error::Storage(StorageError::UnknownCollection { .. }))));
    assert!(matches!(db.collection("docs"), Err(Error::Storage(StorageError::UnknownCollection { .. }))));
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
}
