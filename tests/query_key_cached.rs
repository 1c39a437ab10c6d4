//! A query by stored key reads its record through the index's probe cache when it can: its
//! answer equals the query by the record's own sketch (read with `get`), cold and warm, on a
//! sole-writer handle that keeps its snapshot and on a read-only one, after upserts (the new
//! sketch), deletes (the key unknown), compaction (new row ids) and reopening.

mod common;

use common::Rng;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, Error, IndexConfig, Query, QueryError, QueryKind, QueryOptions,
    SketchParams, TokenSet,
};

/// `n` sets in families of near-copies, so that queries have hits.
fn sets(seed: u64, n: usize) -> Vec<TokenSet> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let base: Vec<u64> = (0..rng.range(30, 80)).map(|_| rng.range(0, 5_000)).collect();
        for _ in 0..rng.range(1, 4) {
            let set: Vec<u64> = base.iter().map(|&t| if rng.f64() < 0.15 { rng.range(0, 5_000) } else { t }).collect();
            out.push(TokenSet::from_unsorted(set));
        }
    }
    out.truncate(n);
    out
}

/// For every key in `keys`: `query_key` equals `query` of the sketch `get` returns (hits and
/// plan), twice (the second pass warm); an absent key is `UnknownKey`.
fn assert_key_queries(c: &Collection, keys: &[String], absent: &[String]) {
    for kind in [QueryKind::Threshold(0.6), QueryKind::TopK(4)] {
        for _pass in 0..2 {
            for key in keys {
                let rec = c.get(key).unwrap().unwrap_or_else(|| panic!("{key} stored"));
                let by_key = c.query_key(key, kind, QueryOptions::default()).unwrap();
                let by_sketch = c.query(&Query { sketch: rec.sketch, kind, options: QueryOptions::default() }).unwrap();
                assert_eq!(by_key.hits, by_sketch.hits, "{key} {kind:?}");
                assert_eq!(by_key.plan, by_sketch.plan, "{key} {kind:?}");
            }
            for key in absent {
                match c.query_key(key, kind, QueryOptions::default()) {
                    Err(Error::Query(QueryError::UnknownKey { .. })) => {}
                    other => panic!("{key}: expected UnknownKey, got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn key_queries_equal_sketch_queries_through_writes_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.sketchdb");
    let db = Database::create(&path).unwrap();
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 3).unwrap()).with_index(IndexConfig::lsh(0.6));
    let c = db.create_collection("c", config).unwrap();
    let s = sets(7, 400);
    let mut batch = Batch::new();
    for (i, set) in s.iter().enumerate() {
        batch.insert(format!("k{i}"), c.sketcher().sketch(set).unwrap());
    }
    c.apply(&batch).unwrap();
    let mut keys: Vec<String> = (0..400).step_by(7).map(|i| format!("k{i}")).collect();
    assert_key_queries(&c, &keys, &["nope".to_string()]);

    // Upserts move keys to new rows with other sketches; deletes end keys.
    let fresh = sets(99, 20);
    for (n, i) in (0..400).step_by(21).enumerate() {
        c.upsert(format!("k{i}"), &c.sketcher().sketch(&fresh[n]).unwrap()).unwrap();
    }
    let gone: Vec<String> = (3..400).step_by(50).map(|i| format!("k{i}")).collect();
    for key in &gone {
        assert!(c.delete(key).unwrap());
    }
    keys.retain(|k| !gone.contains(k));
    assert_key_queries(&c, &keys, &gone);

    db.compact().unwrap();
    assert_key_queries(&c, &keys, &gone);
    drop(c);
    drop(db);

    let ro = Database::open_read_only(&path).unwrap();
    let c = ro.collection("c").unwrap();
    assert_key_queries(&c, &keys, &gone);
}
