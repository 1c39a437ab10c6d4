//! The persisted SimHash tables return exactly what a brute-force scan of the stored
//! records returns: every row within the radius (distance exactly k included), every row of
//! identical fingerprints, sorted by (distance, row); across reopen, deletes, upserts,
//! compaction and rebuilds. The self-join equals the brute-force pair list.

mod common;

use common::Rng;
use common::simhash::{brute_pairs, check, flip, mask, params, sk, stored};
use proptest::prelude::*;
use sketchdb::{Batch, CollectionConfig, Database, IndexConfig, SketchParams, admin, testing};

fn run(seed: u64, f: u8, k: u32, n_base: usize) {
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db");
    let db = Database::create(&path).expect("create");
    let cfg = CollectionConfig::new(params(f)).with_index(IndexConfig::SimhashTables { radius: k });
    let c = db.create_collection("fp", cfg).expect("collection");
    let m = mask(f);
    // Base fingerprints, half of them in a few clusters sharing their top 20 bits (fuller buckets).
    let mut base = vec![];
    for i in 0..n_base {
        let r = u128::from(rng.next_u64()) | u128::from(rng.next_u64()) << 64;
        let v = if i % 2 == 0 { r & m } else { ((u128::from(i as u64 % 3) << (f - 20)) | (r >> 20)) & m };
        base.push(v);
    }
    let mut all = vec![];
    for &b in &base {
        all.push(b);
        // Planted neighbours: exactly k (twice), k - 1, k + 1 and identical copies.
        all.push(flip(&mut rng, b, k, f));
        all.push(flip(&mut rng, b, k, f));
        all.push(flip(&mut rng, b, k.saturating_sub(1), f));
        all.push(flip(&mut rng, b, k + 1, f));
        if rng.range(0, 2) == 0 {
            all.push(b);
            all.push(b);
        }
    }
    let mut batch = Batch::new();
    for (i, &v) in all.iter().enumerate() {
        batch.insert(format!("k{i}"), sk(f, v));
    }
    c.apply(&batch).expect("insert");
    // A few single inserts too.
    for i in 0..5 {
        c.insert(format!("s{i}"), &sk(f, flip(&mut rng, base[i % base.len()], k, f))).expect("insert");
    }
    let mut queries: Vec<u128> = base.iter().take(12).copied().collect();
    queries.extend((0..4).map(|i| flip(&mut rng, base[i], k, f)));
    queries.push(u128::from(rng.next_u64()) & m);
    check(&c, &db, &queries, k, "after insert");

    // Deletes and upserts (an upsert to a planted neighbour and to an identical copy).
    let mut batch = Batch::new();
    for i in (0..all.len()).step_by(3) {
        batch.delete(format!("k{i}"));
    }
    for i in (1..all.len()).step_by(7) {
        batch.upsert(format!("k{i}"), sk(f, flip(&mut rng, base[i % base.len()], k, f)));
    }
    batch.upsert("k1", sk(f, base[0]));
    c.apply(&batch).expect("delete/upsert");
    c.delete("s0").expect("delete");
    check(&c, &db, &queries, k, "after deletes and upserts");

    // Reopen: nothing rebuilt, same answers.
    drop(c);
    drop(db);
    let db = Database::open(&path).expect("open");
    let mut c = db.collection("fp").expect("collection");
    check(&c, &db, &queries, k, "after reopen");

    // Compaction moves rows to new row ids.
    let s = db.compact().expect("compact");
    assert!(s.rows_moved > 0);
    check(&c, &db, &queries, k, "after compaction");

    // Rebuild to another design (radius k + 1) and back.
    c.rebuild_index(IndexConfig::SimhashTables { radius: k + 1 }).expect("rebuild");
    assert_eq!(testing::simhash_stats(&c, &db).expect("stats").expect("some").1, k + 1);
    check(&c, &db, &queries, k + 1, "after rebuild");
    c.rebuild_index(IndexConfig::SimhashTables { radius: k }).expect("rebuild");
    check(&c, &db, &queries, k, "after rebuild back");

    // A rebuild reads the fingerprints straight from the pages: pages holding deleted rows.
    let mut batch = Batch::new();
    for i in (2..all.len()).step_by(5) {
        batch.delete(format!("k{i}"));
    }
    c.apply(&batch).expect("delete");
    c.rebuild_index(IndexConfig::SimhashTables { radius: k }).expect("rebuild");
    check(&c, &db, &queries, k, "after a rebuild over deleted rows");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn f64_radius3_matches_brute_force(seed in any::<u64>(), n in 20usize..80) {
        run(seed, 64, 3, n);
    }

    #[test]
    fn f128_matches_brute_force(seed in any::<u64>(), n in 20usize..60, k in 1u32..5) {
        run(seed, 128, k, n);
    }
}

#[test]
fn verify_catches_a_dropped_bucket() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let cfg = CollectionConfig::new(params(64)).with_index(IndexConfig::SimhashTables { radius: 3 });
    let c = db.create_collection("fp", cfg).expect("collection");
    let mut rng = Rng(3);
    for i in 0..50 {
        c.insert(format!("{i}"), &sk(64, u128::from(rng.next_u64()))).expect("insert");
    }
    assert!(admin::verify(&db).expect("verify").is_ok());
    assert!(testing::drop_first_index_bucket(&c, &db).expect("plant"));
    let report = admin::verify(&db).expect("verify");
    assert!(!report.is_ok());
    assert!(report.problems.iter().any(|p| p.detail.contains("sketchdb.simhash_buckets")), "{:?}", report.problems);
}

#[test]
fn wrong_kind_and_radius_are_typed_errors() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let mh = SketchParams::minhash(16, 64, 1).expect("params");
    assert!(
        db.create_collection("m", CollectionConfig::new(mh).with_index(IndexConfig::SimhashTables { radius: 3 }))
            .is_err()
    );
    let c = db
        .create_collection("fp", CollectionConfig::new(params(64)).with_index(IndexConfig::SimhashTables { radius: 3 }))
        .expect("collection");
    assert!(testing::simhash_within(&c, &db, 0, 4).is_err());
    assert_eq!(testing::simhash_stats(&c, &db).expect("stats"), Some((4, 3, 16)));
}

/// Hamming dedup on a collection with SimHash tables joins through the tables in one pass;
/// its pairs and clusters must equal the brute-force pairs within the radius and their
/// connected components (distance exactly k and identical fingerprints included).
#[test]
fn hamming_dedup_equals_brute_force_components() {
    let mut rng = Rng(41);
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let k = 3;
    let c = db
        .create_collection("fp", CollectionConfig::new(params(64)).with_index(IndexConfig::SimhashTables { radius: k }))
        .expect("collection");
    let mut batch = Batch::new();
    for i in 0..300u64 {
        let base = u128::from(rng.next_u64());
        batch.insert(format!("b{i}"), sk(64, base));
        if i % 3 == 0 {
            batch.insert(format!("n{i}"), sk(64, flip(&mut rng, base, k, 64)));
            batch.insert(format!("d{i}"), sk(64, base));
            batch.insert(format!("far{i}"), sk(64, flip(&mut rng, base, k + 1, 64)));
        }
    }
    c.apply(&batch).expect("insert");
    let d = c.dedup(sketchdb::QueryKind::Hamming(k), sketchdb::QueryOptions::default()).expect("dedup");
    assert!(matches!(d.plan.map(|p| p.access), Some(sketchdb::plan::Access::SimhashProbe { .. })), "{:?}", d.plan);
    let rows = stored(&c);
    let want = brute_pairs(&rows, k);
    assert_eq!(d.pairs, want.len() as u64);
    assert!(d.pairs >= 200, "planted pairs: {}", d.pairs);
    let mut comp: std::collections::BTreeMap<u64, u64> = rows.iter().map(|&(r, _)| (r, r)).collect();
    for &(a, b, _) in &want {
        let (ca, cb) = (comp[&a], comp[&b]);
        if ca != cb {
            let (lo, hi) = (ca.min(cb), ca.max(cb));
            comp.values_mut().filter(|x| **x == hi).for_each(|x| *x = lo);
        }
    }
    let mut groups: std::collections::BTreeMap<u64, Vec<u64>> = std::collections::BTreeMap::new();
    for (r, c) in comp {
        groups.entry(c).or_default().push(r);
    }
    let mut want_clusters: Vec<Vec<u64>> = groups.into_values().filter(|g| g.len() > 1).collect();
    let mut got: Vec<Vec<u64>> = d.clusters.iter().map(|c| c.rows.clone()).collect();
    want_clusters.sort();
    got.sort();
    assert_eq!(got, want_clusters);
}

/// Batches of thousands of rows: each table's entries are ordered by the flush's radix or
/// counting sort (from 4,096 entries per table and batch), the first batch, into an index of
/// no rows, reads no bucket and appends them through a cursor, and batches of 16,384 rows or
/// more are sorted on worker threads while the buckets are written.
#[test]
fn large_batches_match_brute_force() {
    run(7, 64, 3, 3_000);
    run(11, 128, 2, 3_000);
}
