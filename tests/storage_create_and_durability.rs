//! Atomic creation, durability modes, and databases on a custom backend.

use sketchdb::{CollectionConfig, Database, Durability, SketchParams, TokenSet};

#[test]
fn create_is_atomic_and_refuses_leftovers_as_databases() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    // A crash during an earlier create leaves only the temporary file, which open refuses
    // to see and create replaces.
    let tmp = dir.path().join("db.sketchdb.sketchdb-tmp");
    std::fs::write(&tmp, b"half-written garbage").unwrap();
    assert!(Database::open(&path).is_err());
    let db = Database::create(&path).unwrap();
    assert!(!tmp.exists());
    assert!(path.exists());
    drop(db);
    Database::open(&path).unwrap();
    // A redb file without a sketchdb format record is refused.
    let bare = dir.path().join("bare");
    std::fs::write(&bare, b"").unwrap();
    assert!(matches!(Database::open(&bare), Err(sketchdb::Error::Storage(sketchdb::StorageError::NotSketchdb { .. }))));
}

#[test]
fn eventual_durability_commits_are_visible_and_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::builder().durability(Durability::Eventual).cache_size(64 << 20).create(&path).unwrap();
        assert_eq!(db.durability(), Durability::Eventual);
        let c = db.create_collection("c", CollectionConfig::new(SketchParams::minhash(16, 32, 1).unwrap())).unwrap();
        for i in 0..50u64 {
            c.insert_tokens(format!("k{i}"), &TokenSet::from_unsorted(vec![i, i + 9])).unwrap();
        }
        assert_eq!(c.len().unwrap(), 50);
        db.flush().unwrap();
    }
    let db = Database::open(&path).unwrap();
    assert_eq!(db.durability(), Durability::Immediate);
    assert_eq!(db.collection("c").unwrap().len().unwrap(), 50);
}

#[test]
fn a_database_runs_on_a_custom_backend() {
    let db = sketchdb::testing::create_on(Database::builder(), sketchdb::testing::MemoryBackend::new()).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::bbit(64, 2, 1).unwrap())).unwrap();
    c.insert_tokens("x", &TokenSet::from_unsorted(vec![1, 2, 3])).unwrap();
    assert!(c.get("x").unwrap().is_some());
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
}
