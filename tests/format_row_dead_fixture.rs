//! The committed version-1 fixture (`tests/fixtures/format_v1.sketchdb`, written before
//! any removed-rows table existed; how it was made: `tests/format_v1_fixture.rs`) opens, reads
//! and accepts deletes and upserts: the first removed row recorded in the side table
//! upgrades the file's format record to version 3 in the same commit, and the file reads the
//! same after a reopen, verify and compaction.

use std::path::Path;

use sketchdb::{Batch, Database, Record, admin, testing};

fn records(db: &Database, name: &str) -> Vec<(String, Vec<u8>)> {
    db.collection(name)
        .unwrap()
        .scan()
        .unwrap()
        .map(|r| r.unwrap())
        .map(|r: Record| (r.key_str().unwrap().to_string(), format!("{:?}", r.sketch).into_bytes()))
        .collect()
}

#[test]
fn the_v1_fixture_accepts_deletes_and_is_upgraded_to_version_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sketchdb");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v1.sketchdb"), &path).unwrap();
    let names = ["minhash", "oph", "bbit", "simhash"];
    let mut want = vec![];
    {
        let db = Database::open_read_only(&path).unwrap();
        assert_eq!(testing::file_format_version(&db).unwrap(), 1);
        for name in names {
            want.push(records(&db, name));
        }
    }
    let db = Database::open(&path).unwrap();
    assert_eq!(testing::file_format_version(&db).unwrap(), 1, "opening changes nothing");
    for (name, recs) in names.iter().zip(&mut want) {
        let c = db.collection(name).unwrap();
        // Every third live record, spread over all pages: each page is only read.
        let gone: Vec<String> = recs.iter().step_by(3).map(|r| r.0.clone()).collect();
        let mut b = Batch::new();
        for k in &gone {
            b.delete(k);
        }
        let before = c.stats().unwrap();
        assert_eq!(c.apply(&b).unwrap().deleted, gone.len() as u64);
        recs.retain(|r| !gone.contains(&r.0));
        let after = c.stats().unwrap();
        assert_eq!((after.live, after.deleted), (before.live - gone.len() as u64, before.deleted + gone.len() as u64));
        assert!(!testing::row_dead_entries(&c, &db).unwrap().is_empty(), "{name}");
        assert_eq!(records(&db, name), *recs, "{name}");
        for k in &gone {
            assert!(c.get(k).unwrap().is_none(), "{name} {k}");
        }
    }
    assert_eq!(testing::file_format_version(&db).unwrap(), 3, "the first entry upgrades the file");
    let report = admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    drop(db);

    let db = Database::open(&path).unwrap();
    for (name, recs) in names.iter().zip(&want) {
        assert_eq!(records(&db, name), *recs, "{name} after reopen");
    }
    db.compact().unwrap();
    for (name, recs) in names.iter().zip(&want) {
        let mut got = records(&db, name);
        let mut recs = recs.clone();
        got.sort();
        recs.sort();
        assert_eq!(got, recs, "{name} after compaction");
        assert!(testing::row_dead_entries(&db.collection(name).unwrap(), &db).unwrap().is_empty());
    }
    let report = admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
