//! Content hashes (`sketchdb.content_hashes`, storage-format.md 2.1) are an added table: the
//! committed version-1 fixture, written before the table existed, opens with every row's hash
//! absent, takes hashed writes, and keeps each hash with its row through upserts, deletes and
//! compaction (a moved row's hash moves with it).

use std::path::Path;

use sketchdb::{Batch, Database, Sketch, SketchParams, Sketcher, TokenSet};

const FIXTURE: &str = "tests/fixtures/format_v1.sketchdb";

fn sketch(params: SketchParams, i: u64) -> Sketch {
    Sketcher::new(params)
        .unwrap()
        .sketch(&TokenSet::from_unsorted((0..5 + i % 7).map(|t| t * 977 + i).collect()))
        .unwrap()
}

#[test]
fn the_v1_fixture_reads_no_hashes_then_keeps_written_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.sketchdb");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE), &path).unwrap();
    let params = written(&path);
    // The file reopens with the hash; a dropped collection's hashes go with it.
    let db = Database::open(&path).unwrap();
    assert_eq!(
        db.collection("minhash").unwrap().snapshot().unwrap().stored_hash("minhash-011").unwrap().unwrap().1,
        Some(0xabc)
    );
    db.drop_collection("minhash").unwrap();
    let c = db.create_collection("minhash", sketchdb::CollectionConfig::new(params)).unwrap();
    c.apply(Batch::new().insert("minhash-011", sketch(params, 11))).unwrap();
    assert_eq!(c.snapshot().unwrap().stored_hash("minhash-011").unwrap(), Some((0, None)));
}

/// Writes and checks hashes in the fixture copy at `path`; returns the collection's params.
fn written(path: &Path) -> SketchParams {
    let db = Database::open(path).unwrap();
    let c = db.collection("minhash").unwrap();
    let params = *c.params();
    let snap = c.snapshot().unwrap();
    // Written before hashes existed: live rows, no hash; an absent key is absent.
    assert_eq!(snap.stored_hash("minhash-010").unwrap(), Some((10, None)));
    assert_eq!(snap.stored_hash("minhash-000").unwrap(), Some((300, None)));
    assert_eq!(snap.stored_hash("minhash-007").unwrap(), Some((307, None)));
    assert_eq!(snap.stored_hash("minhash-014").unwrap(), None);
    drop(snap);

    // Hashed writes: an upsert of an old row, a new key, a plain upsert (no hash) of a key.
    let mut b = Batch::new();
    b.upsert_with_hash("minhash-011", sketch(params, 11), 0xabc);
    b.insert_with_hash("new-1", sketch(params, 1), 0xdef);
    b.insert_with_hash("new-2", sketch(params, 2), 0x123);
    c.apply(&b).unwrap();
    let snap = c.snapshot().unwrap();
    let (row11, h11) = snap.stored_hash("minhash-011").unwrap().unwrap();
    assert_eq!((row11, h11), (310, Some(0xabc)));
    assert_eq!(snap.stored_hash("new-1").unwrap(), Some((311, Some(0xdef))));
    drop(snap);
    // A replacement without a hash has none (the old hash does not linger), a delete ends
    // the row and its hash.
    let mut b = Batch::new();
    b.upsert("new-2", sketch(params, 3));
    b.delete("new-1");
    c.apply(&b).unwrap();
    let snap = c.snapshot().unwrap();
    assert_eq!(snap.stored_hash("new-2").unwrap(), Some((313, None)));
    assert_eq!(snap.stored_hash("new-1").unwrap(), None);
    drop(snap);

    // Compaction moves live rows to new row ids; the hash goes with its row.
    db.compact().unwrap();
    let c = db.collection("minhash").unwrap();
    let snap = c.snapshot().unwrap();
    let (moved, h) = snap.stored_hash("minhash-011").unwrap().unwrap();
    assert_eq!(h, Some(0xabc));
    assert_eq!(c.get("minhash-011").unwrap().unwrap().row_id, moved);
    assert_eq!(c.get("minhash-011").unwrap().unwrap().sketch, sketch(params, 11));
    let rows: Vec<_> = c.scan().unwrap().map(|r| r.unwrap()).collect();
    let with_hash: Vec<&str> = rows
        .iter()
        .filter(|r| snap.stored_hash(&r.key).unwrap().unwrap().1.is_some())
        .map(|r| r.key_str().unwrap())
        .collect();
    assert_eq!(with_hash, ["minhash-011"]);
    drop(snap);
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);

    params
}
