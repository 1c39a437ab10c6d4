//! The batch point read (`get_rows`, used to verify index candidates, and by `get_row`)
//! returns exactly the scan's records for the rows asked: live rows only, across page boundaries, deleted rows, row
//! ids past the end and rows of compacted-away pages.

use sketchdb::{Batch, CollectionConfig, Database, SketchParams, TokenSet, testing};

#[test]
fn batch_point_reads_equal_single_reads() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    // 512-byte records: about 124 rows per page, so 1000 rows span several pages.
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::minhash(128, 32, 1).expect("p"))).expect("c");
    let mut batch = Batch::new();
    for i in 0..1000u64 {
        let set = TokenSet::from_unsorted((0..20).map(|j| i * 100 + j).collect());
        batch.insert(format!("k{i}"), c.sketcher().sketch(&set).expect("sketch"));
    }
    c.apply(&batch).expect("insert");
    let mut del = Batch::new();
    for i in (0..1000u64).filter(|i| i % 7 == 3 || (300..420).contains(i)) {
        del.delete(format!("k{i}"));
    }
    c.apply(&del).expect("delete");
    let mut ids: Vec<u64> = (0..1100u64).filter(|i| i % 3 != 1).collect();
    ids.extend([5000, 1 << 40]);
    let got = testing::get_rows(&c, &db, &ids).expect("get rows");
    // The oracle is a full scan (single point reads share get_rows' code).
    let live: std::collections::HashMap<u64, Vec<u8>> =
        c.scan().expect("scan").map(|r| r.expect("record")).map(|r| (r.row_id, r.key)).collect();
    let want: Vec<(u64, Vec<u8>)> = ids.iter().filter_map(|r| live.get(r).map(|k| (*r, k.clone()))).collect();
    assert_eq!(got, want);
    assert!(got.len() > 500 && got.len() < ids.len(), "{}", got.len());
    assert!(testing::get_rows(&c, &db, &[]).expect("none").is_empty());
}
