//! The caches an opened database keeps, as `Database::cache_stats` and `admin::stats` report
//! them: each bounded by the budget given at open (`DatabaseBuilder::cache_size`,
//! `DatabaseBuilder::probe_cache_budget`), the probe cache's bytes predictable from what was
//! asked (nothing at open, more after queries, the same as a fresh handle's after a commit
//! that changed the index, nothing after the budget is lowered below them), a zero budget
//! keeping nothing and changing no answer, and the kept snapshot reported while a
//! read-write handle keeps one.

mod common;

use common::Rng;
use sketchdb::plan::PlanKind;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, Query, QueryKind, QueryOptions, SketchParams, admin,
};

/// `n` texts in families of near-duplicates over 300 words.
fn texts(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let base: Vec<u64> = (0..rng.range(20, 60)).map(|_| rng.range(0, 299)).collect();
        for _ in 0..rng.range(1, 4) {
            let change = rng.f64() * 0.5;
            let words: Vec<String> = base
                .iter()
                .map(|&w| if rng.f64() < change { rng.range(0, 299) } else { w })
                .map(|w| format!("w{w}"))
                .collect();
            out.push(words.join(" "));
        }
    }
    out.truncate(n);
    out
}

fn config() -> CollectionConfig {
    CollectionConfig::new(SketchParams::minhash(64, 32, 7).unwrap()).with_index(IndexConfig::Lsh {
        threshold: 0.5,
        bands: None,
        rows: None,
    })
}

/// A database at `dir/c.db` holding collection `c` with `n` texts.
fn build(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let path = dir.join("c.db");
    let db = Database::create(&path).unwrap();
    let c = db.create_collection("c", config()).unwrap();
    insert(&c, &texts(1, n), 0);
    path
}

fn insert(c: &Collection, texts: &[String], first: usize) {
    let mut batch = Batch::new();
    for (i, text) in texts.iter().enumerate() {
        batch.insert(format!("k{}", first + i), c.sketcher().sketch_text(&c.config().tokenizer, text).unwrap());
    }
    c.apply(&batch).unwrap();
}

/// LSH probes (forced: small collections are cheaper to scan) from `probes`.
fn queries(c: &Collection, probes: &[String]) -> Vec<Query> {
    probes
        .iter()
        .map(|t| Query {
            sketch: c.sketcher().sketch_text(&c.config().tokenizer, t).unwrap(),
            kind: QueryKind::Threshold(0.5),
            options: QueryOptions { force: Some(PlanKind::LshProbe), ..QueryOptions::default() },
        })
        .collect()
}

fn answers(c: &Collection, qs: &[Query]) -> Vec<Vec<sketchdb::Hit>> {
    qs.iter().map(|q| c.query(q).unwrap().hits).collect()
}

fn held(db: &Database) -> usize {
    db.cache_stats().probe_cache_held
}

#[test]
fn budgets_set_at_open_are_reported_and_respected() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), 3000);
    let probes = texts(2, 400);

    let full = Database::open(&path).unwrap();
    let c = full.collection("c").unwrap();
    let qs = queries(&c, &probes);
    let want = answers(&c, &qs);
    let unbounded = held(&full);
    assert!(unbounded > 0);
    let s = full.cache_stats();
    assert_eq!(s.probe_cache_budget, Database::DEFAULT_PROBE_CACHE_BUDGET);
    assert_eq!(s.page_cache_budget, 1 << 30, "the storage engine's default");
    drop((c, full));

    for budget in [unbounded / 3, 64 << 10, 0] {
        let db = Database::builder().probe_cache_budget(budget).cache_size(256 << 10).open(&path).unwrap();
        let s = db.cache_stats();
        assert_eq!((s.probe_cache_budget, s.page_cache_budget), (budget, 256 << 10));
        let c = db.collection("c").unwrap();
        for pass in 0..3 {
            assert_eq!(answers(&c, &qs), want, "budget {budget}, pass {pass}");
            let s = db.cache_stats();
            assert!(s.probe_cache_held <= budget, "probe cache: held {} > budget {budget}", s.probe_cache_held);
            assert!(s.page_cache_held <= 256 << 10, "page cache: held {} > its 256 KiB", s.page_cache_held);
        }
        if budget == 0 {
            assert_eq!(held(&db), 0, "a zero budget keeps nothing");
        }
        // A full scan reads every page through the page cache, which stays within its size.
        let scan =
            Query { options: QueryOptions { force: Some(PlanKind::FullScan), ..qs[0].options }, ..qs[0].clone() };
        assert_eq!(c.query(&scan).unwrap().hits, want[0]);
        let s = db.cache_stats();
        assert!(s.page_cache_held > 0 && s.page_cache_held <= 256 << 10, "{s:?}");
    }
}

#[test]
fn probe_cache_bytes_follow_queries_commits_and_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), 2000);
    let probes = texts(3, 300);
    let db = Database::open(&path).unwrap();
    let c = db.collection("c").unwrap();
    let qs = queries(&c, &probes);
    assert_eq!(held(&db), 0, "nothing is kept at open");

    c.query(&qs[0]).unwrap();
    let one = held(&db);
    assert!(one > 0, "a probe keeps what it read");
    // What one query keeps does not depend on the handle: a fresh one keeps as much.
    let fresh = |what: &str| {
        let other = Database::open_read_only(&path).unwrap();
        other.collection("c").unwrap().query(&qs[0]).unwrap();
        let h = held(&other);
        assert!(h > 0, "{what}");
        h
    };
    assert_eq!(fresh("before the commit"), one);

    answers(&c, &qs);
    let many = held(&db);
    assert!(many > one, "more queries keep more: {many} after all, {one} after one");
    assert_eq!(admin::stats(&db).unwrap().caches.probe_cache_held, many, "admin::stats reports the same");

    // A commit that changes the index: the next query finds a new index version, whose cache
    // replaces the old one's and holds what that one query read.
    insert(&c, &texts(4, 50), 10_000);
    c.query(&qs[0]).unwrap();
    assert_eq!(held(&db), fresh("after the commit"), "the old version's values are let go");
    assert!(held(&db) < many);

    // Lowering the budget below what is held lets it all go; later queries stay within it.
    answers(&c, &qs);
    let before = held(&db);
    db.set_probe_cache_budget(before / 2);
    assert_eq!(held(&db), 0);
    assert_eq!(db.cache_stats().probe_cache_budget, before / 2);
    answers(&c, &qs);
    assert!(held(&db) > 0 && held(&db) <= before / 2, "held {} of {}", held(&db), before / 2);
}

#[test]
fn the_kept_snapshot_is_reported_until_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), 200);
    let db = Database::open(&path).unwrap();
    let c = db.collection("c").unwrap();
    let qs = queries(&c, &texts(5, 3));
    assert!(!db.cache_stats().snapshot_kept, "nothing read yet");
    answers(&c, &qs);
    let s = db.cache_stats();
    assert!(s.snapshot_kept && s.snapshot_memo_entries >= 1, "{s:?}");
    insert(&c, &texts(6, 5), 5000);
    let s = db.cache_stats();
    assert!(!s.snapshot_kept && s.snapshot_memo_entries == 0, "a write lets it go: {s:?}");

    let reader = Database::open_read_only(&path).unwrap();
    answers(&reader.collection("c").unwrap(), &qs);
    let s = reader.cache_stats();
    assert!(!s.snapshot_kept, "read-only handles begin a transaction per read: {s:?}");
    let shown = admin::stats(&reader).unwrap().caches;
    assert_eq!((shown.probe_cache_held, shown.probe_cache_budget), (s.probe_cache_held, s.probe_cache_budget));
}
