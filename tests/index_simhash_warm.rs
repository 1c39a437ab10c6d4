//! Warm Hamming queries (buckets held in the probe cache as words, filtered in vectors,
//! matches' records from the cache) answer exactly what a brute-force scan of the live rows
//! answers: over random 64-bit fingerprints with planted neighbours at every distance up to
//! the radius and past it, a cluster whose bucket is larger than a cache slab, several runs
//! per table, removed and upserted rows, caches invalidated by commits, budgets that keep
//! everything, a little (values read but not kept) or nothing, and after a reopen.

mod common;

use std::collections::BTreeMap;

use common::Rng;
use common::simhash::{flip, params, sk};
use sketchdb::plan::PlanKind;
use sketchdb::{Batch, Collection, CollectionConfig, Database, IndexConfig, Query, QueryOptions};

const K: u32 = 3;

/// The live rows by key, as the test wrote them.
type Model = BTreeMap<String, u64>;

/// Every live key within each radius 0..=K of `q`, with its distance, by brute force.
fn brute(model: &Model, q: u64, radius: u32) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> =
        model.iter().map(|(k, &x)| (k.clone(), (x ^ q).count_ones())).filter(|&(_, d)| d <= radius).collect();
    v.sort();
    v
}

/// The query's answer through the tables (the plan forced: a small collection would be
/// scanned), as (key, distance), sorted.
fn answer(c: &Collection, q: u64, radius: u32) -> Vec<(String, u32)> {
    let options = QueryOptions { force: Some(PlanKind::SimhashProbe), ..QueryOptions::default() };
    let r = c.query(&Query::hamming(sk(64, u128::from(q)), radius).with_options(options)).expect("query");
    assert_eq!(r.plan.access.kind(), PlanKind::SimhashProbe, "the tables answer");
    let mut v: Vec<(String, u32)> = r
        .hits
        .iter()
        .map(|h| (h.key_str().expect("utf-8 key").to_string(), h.distance.expect("a Hamming hit has its distance")))
        .collect();
    v.sort();
    v
}

/// Each query at each radius, asked twice (the second from what the first left in the
/// cache), equals brute force.
fn check(c: &Collection, model: &Model, queries: &[u64], stage: &str) {
    for &q in queries {
        for radius in 0..=K {
            let want = brute(model, q, radius);
            assert_eq!(answer(c, q, radius), want, "{stage}: q {q:#x} r {radius}, first");
            assert_eq!(answer(c, q, radius), want, "{stage}: q {q:#x} r {radius}, again");
        }
    }
}

/// Writes `per` base fingerprints in one batch, each with neighbours at 1, K - 1, K and
/// K + 1 bits and an identical copy; returns the bases.
fn grow(c: &Collection, model: &mut Model, rng: &mut Rng, next: &mut usize, per: usize) -> Vec<u64> {
    let mut batch = Batch::new();
    let mut bases = Vec::new();
    for _ in 0..per {
        let base = rng.next_u64();
        bases.push(base);
        for d in [0, 1, K - 1, K, K + 1, 0] {
            let v = flip(rng, u128::from(base), d, 64) as u64;
            let key = format!("k{next:06}");
            *next += 1;
            batch.insert(key.clone(), sk(64, u128::from(v)));
            model.insert(key, v);
        }
    }
    c.apply(&batch).expect("insert");
    bases
}

#[test]
fn warm_hamming_queries_equal_brute_force_through_writes_budgets_and_reopen() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db");
    let db = Database::create(&path).expect("create");
    let cfg = CollectionConfig::new(params(64)).with_index(IndexConfig::SimhashTables { radius: K });
    let c = db.create_collection("fp", cfg).expect("collection");
    let (mut rng, mut model, mut next) = (Rng(0x5157), Model::new(), 0usize);

    // A cluster differing only in the low 10 bits: in every table whose leading blocks miss
    // those bits it fills one bucket of 900 entries (over 10 KB held, more than a slab of a
    // small budget), and every member is within K of some others.
    let centre = rng.next_u64() & !0x3ff;
    let mut batch = Batch::new();
    for i in 0..900u64 {
        let v = centre | (i * 37 % 1024);
        let key = format!("c{i:04}");
        batch.insert(key.clone(), sk(64, u128::from(v)));
        model.insert(key, v);
    }
    c.apply(&batch).expect("cluster");
    let mut queries: Vec<u64> = vec![centre, centre | 0x3ff, centre ^ (1 << 63), 0, u64::MAX];

    // Several runs per table: one write per batch.
    for _ in 0..6 {
        queries.extend(grow(&c, &mut model, &mut rng, &mut next, 40));
    }
    let probe: Vec<u64> = queries.iter().step_by(3).copied().collect();
    check(&c, &model, &probe, "grown in runs");

    // Removals and upserts invalidate the warm cache: the next answers are the new state's.
    let mut batch = Batch::new();
    let keys: Vec<String> = model.keys().cloned().collect();
    for (i, key) in keys.iter().enumerate() {
        if i % 5 == 0 {
            batch.delete(key.clone());
            model.remove(key);
        } else if i % 11 == 0 {
            let v = rng.next_u64();
            batch.upsert(key.clone(), sk(64, u128::from(v)));
            model.insert(key.clone(), v);
        }
    }
    c.apply(&batch).expect("delete and upsert");
    check(&c, &model, &probe, "after removals and upserts");
    queries.extend(grow(&c, &mut model, &mut rng, &mut next, 30));
    let probe: Vec<u64> = queries.iter().step_by(2).copied().collect();
    check(&c, &model, &probe, "after a later insert");

    // A budget that keeps a few values (the rest read each time and not kept), then none.
    for budget in [96 << 10, 0] {
        db.set_probe_cache_budget(budget);
        check(&c, &model, &probe, &format!("budget {budget}"));
    }
    db.set_probe_cache_budget(64 << 20);

    // Reopened: the cache starts empty and fills again.
    drop(c);
    drop(db);
    let db = Database::open(&path).expect("open");
    let c = db.collection("fp").expect("collection");
    check(&c, &model, &probe, "reopened");
    db.compact().expect("compact");
    check(&c, &model, &probe, "compacted");
}
