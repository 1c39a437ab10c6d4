//! 1M MinHash records (k = 128, 32-bit) inserted in batches, closed, reopened: every record
//! equal, by key lookups (a sample) and by a full scan (all of them).

use sketchdb::{Batch, CollectionConfig, Database, MinHash, Sketch, SketchParams};

const N: u64 = 1_000_000;
const BATCH: u64 = 20_000;

/// Record i's signature, recomputable: xorshift values seeded by i.
fn sketch(params: SketchParams, i: u64) -> Sketch {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let values = (0..128)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> 32
        })
        .collect();
    Sketch::MinHash(MinHash::from_parts(params, values, 1 + i % 5000).unwrap())
}

fn key(i: u64) -> String {
    format!("doc/{i:08}")
}

#[test]
fn one_million_records_survive_close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("million.sketchdb");
    let params = SketchParams::minhash(128, 32, 42).unwrap();
    {
        let db = Database::create(&path).unwrap();
        let c = db.create_collection("docs", CollectionConfig::new(params)).unwrap();
        let mut batch = Batch::with_capacity(BATCH as usize);
        for start in (0..N).step_by(BATCH as usize) {
            batch.clear();
            for i in start..start + BATCH {
                batch.insert(key(i), sketch(params, i));
            }
            let s = c.apply(&batch).unwrap();
            assert_eq!((s.inserted, s.first_row), (BATCH, start));
        }
    }
    let db = Database::open(&path).unwrap();
    let c = db.collection("docs").unwrap();
    assert_eq!(c.len().unwrap(), N);
    let mut seen = 0u64;
    for (i, rec) in c.scan().unwrap().enumerate() {
        let rec = rec.unwrap();
        let i = i as u64;
        assert_eq!(rec.row_id, i);
        assert_eq!(rec.key, key(i).as_bytes());
        assert_eq!(rec.sketch, sketch(params, i), "record {i}");
        seen += 1;
    }
    assert_eq!(seen, N);
    for i in (0..N).step_by(997) {
        let rec = c.get(key(i)).unwrap().unwrap();
        assert_eq!((rec.row_id, rec.sketch), (i, sketch(params, i)));
    }
}
