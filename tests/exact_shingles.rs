//! Collections that keep exact shingle sets: exact Jaccard from the stored sets equals a
//! brute-force computation over the token sets (property test), threshold answers and dedup
//! pairs equal brute force, writes keep the table in step (upsert, delete, compaction, drop,
//! reopen), bare sketches are refused, and old files open as collections without shingles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use sketchdb::plan::Scoring;
use sketchdb::{
    Batch, Clustering, CollectionConfig, Database, Error, QueryKind, QueryOptions, SketchParams, StorageError, TokenSet,
};

fn jaccard(a: &BTreeSet<u64>, b: &BTreeSet<u64>) -> f64 {
    let both = a.intersection(b).count();
    both as f64 / (a.len() + b.len() - both) as f64
}

/// `n` token sets in families: each a base set with some tokens replaced (splitmix64 stream).
fn families(seed: u64, n: usize) -> Vec<BTreeSet<u64>> {
    let mut x = seed;
    let mut next = move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut out = Vec::new();
    while out.len() < n {
        let size = 20 + (next() % 60) as usize;
        let base: Vec<u64> = (0..size).map(|_| next()).collect();
        for _ in 0..(1 + next() % 4) {
            let change = (next() % 100) as f64 / 100.0 * 0.6;
            let set: BTreeSet<u64> =
                base.iter().map(|&t| if ((next() % 1000) as f64) < change * 1000.0 { next() } else { t }).collect();
            out.push(set);
        }
    }
    out.truncate(n);
    out
}

fn exact_collection(dir: &Path, params: SketchParams, sets: &[BTreeSet<u64>]) -> (Database, sketchdb::Collection) {
    let db = Database::create(dir.join("x.sketchdb")).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(params).with_exact_shingles(true)).unwrap();
    let mut batch = Batch::new();
    for (i, s) in sets.iter().enumerate() {
        let set = TokenSet::from_unsorted(s.iter().copied().collect());
        batch.insert_with_shingles(format!("k{i}"), c.sketcher().sketch(&set).unwrap(), &set);
    }
    c.apply(&batch).unwrap();
    (db, c)
}

fn index_of(key: &[u8]) -> usize {
    std::str::from_utf8(&key[1..]).unwrap().parse().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Every hit's exact score is the brute-force Jaccard of the two token sets, and a
    /// threshold query over every stored sketch (no LSH) returns exactly the brute-force
    /// answer: candidates down to the floor, kept by exact Jaccard.
    #[test]
    fn exact_jaccard_from_stored_sets_equals_brute_force(seed in any::<u64>(), t in 0.3f64..0.95) {
        let dir = tempfile::tempdir().unwrap();
        let sets = families(seed, 40);
        let (_db, c) = exact_collection(dir.path(), SketchParams::bbit(256, 8, 7).unwrap(), &sets);
        let exact = QueryOptions { exact: true, ..QueryOptions::default() };
        for (q, qs) in sets.iter().enumerate() {
            let r = c.query_key(format!("k{q}"), QueryKind::Threshold(t), exact).unwrap();
            let got: BTreeSet<usize> = r.hits.iter().map(|h| index_of(&h.key)).collect();
            for h in &r.hits {
                prop_assert_eq!(h.exact, Some(jaccard(qs, &sets[index_of(&h.key)])));
            }
            let want: BTreeSet<usize> = (0..sets.len()).filter(|&i| jaccard(qs, &sets[i]) >= t).collect();
            prop_assert_eq!(got, want, "query {}", q);
            // Hits come best exact score first.
            prop_assert!(r.hits.windows(2).all(|w| w[0].exact >= w[1].exact));
        }
    }
}

#[test]
fn top_k_is_ranked_by_exact_jaccard() {
    let dir = tempfile::tempdir().unwrap();
    let sets = families(5, 60);
    let (_db, c) = exact_collection(dir.path(), SketchParams::oph(128, 8, 3).unwrap(), &sets);
    for q in [0usize, 17, 33] {
        let r = c.query_key(format!("k{q}"), QueryKind::TopK(3), QueryOptions::default()).unwrap();
        let mut brute: Vec<f64> = sets.iter().map(|s| jaccard(&sets[q], s)).collect();
        brute.sort_by(|a, b| b.total_cmp(a));
        let got: Vec<f64> = r.hits.iter().map(|h| h.exact.unwrap()).collect();
        assert_eq!(got, brute[..3].to_vec(), "query {q}");
    }
}

/// `query_tokens` scores a token multiset as `query_key` scores the stored record of the
/// same set (repeats do not count), and EXPLAIN of key and token questions says `exact`
/// where a bare sketch's says `estimated`.
#[test]
fn token_questions_score_exactly_and_explain_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let sets = families(9, 40);
    let (_db, c) = exact_collection(dir.path(), SketchParams::minhash(128, 32, 4).unwrap(), &sets);
    let kind = QueryKind::Threshold(0.4);
    for q in [0usize, 11, 29] {
        let mut tokens: Vec<u64> = sets[q].iter().copied().collect();
        tokens.extend(sets[q].iter().take(5).copied());
        let from_tokens = c.query_tokens(&tokens, kind, QueryOptions::default()).unwrap();
        let from_key = c.query_key(format!("k{q}"), kind, QueryOptions::default()).unwrap();
        let pairs = |r: &sketchdb::QueryResult| r.hits.iter().map(|h| (h.key.clone(), h.exact)).collect::<Vec<_>>();
        assert_eq!(pairs(&from_tokens), pairs(&from_key), "query {q}");
        for h in &from_tokens.hits {
            assert_eq!(h.exact, Some(jaccard(&sets[q], &sets[index_of(&h.key)])));
        }
        for analyze in [false, true] {
            assert_eq!(
                c.explain_tokens(&tokens, kind, QueryOptions::default(), analyze).unwrap().scoring,
                Scoring::Exact
            );
            let e = c.explain_key(format!("k{q}"), QueryKind::TopK(3), QueryOptions::default(), analyze).unwrap();
            assert_eq!(e.scoring, Scoring::Exact);
            assert!(e.to_string().contains("scores: exact"), "{e}");
        }
        // EXPLAIN shows the question that runs: the candidates of a relaxed threshold (below
        // t) or of the top 4k + 16, then exact scoring.
        let e = c.explain_key(format!("k{q}"), kind, QueryOptions::default(), false).unwrap();
        match e.choice.plan.finish {
            sketchdb::plan::Finish::Verify { threshold } => assert!(threshold < 0.4, "{e}"),
            other => panic!("threshold question explained as {other:?}"),
        }
        let e = c.explain_key(format!("k{q}"), QueryKind::TopK(3), QueryOptions::default(), false).unwrap();
        assert!(matches!(e.choice.plan.finish, sketchdb::plan::Finish::TopK { k: 28 }), "{e}");
        let sketch = c.sketch_of(format!("k{q}")).unwrap();
        let e = c.explain(&sketchdb::Query { sketch, kind, options: QueryOptions::default() }, false).unwrap();
        assert_eq!(e.scoring, Scoring::Estimated);
        assert!(matches!(e.choice.plan.finish, sketchdb::plan::Finish::Verify { threshold } if threshold == 0.4));
    }
    assert!(matches!(
        c.explain_key("absent", kind, QueryOptions::default(), false),
        Err(Error::Query(sketchdb::QueryError::UnknownKey { .. }))
    ));
}

#[test]
fn dedup_pairs_are_the_brute_force_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let sets = families(9, 120);
    let (_db, c) = exact_collection(dir.path(), SketchParams::bbit(512, 8, 1).unwrap(), &sets);
    let t = 0.7;
    let mut want = 0u64;
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            want += u64::from(jaccard(&sets[i], &sets[j]) >= t);
        }
    }
    for options in [QueryOptions::default(), QueryOptions { exact: true, ..QueryOptions::default() }] {
        let d = c.dedup_clustered(QueryKind::Threshold(t), options, Clustering::Representative).unwrap();
        assert_eq!(d.scoring, Scoring::Exact);
        assert_eq!(d.pairs, want, "options {options:?}");
        for cl in &d.clusters {
            let rep = index_of(&cl.keys[cl.rows.iter().position(|&r| Some(r) == cl.representative).unwrap()]);
            for k in &cl.keys {
                assert!(jaccard(&sets[rep], &sets[index_of(k)]) >= t);
            }
        }
    }
    let explain = c.explain_dedup(QueryKind::Threshold(t), QueryOptions::default()).unwrap().unwrap();
    assert_eq!(explain.scoring, Scoring::Exact);
    assert!(explain.to_string().contains("scores: exact"), "{explain}");
}

#[test]
fn text_queries_score_exactly_and_bare_sketches_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("t.sketchdb")).unwrap();
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap()).with_exact_shingles(true);
    let c = db.create_collection("docs", config).unwrap();
    let a = "the quick brown fox jumps over the lazy dog near the river bank";
    c.insert_text("a", a).unwrap();
    let r = c
        .query_text(
            "the quick brown fox jumps over the lazy dog near the river",
            QueryKind::TopK(1),
            QueryOptions::default(),
        )
        .unwrap();
    let want = {
        let x: BTreeSet<u64> = c.config().tokenizer.tokens(a).into_iter().collect();
        let y: BTreeSet<u64> = c
            .config()
            .tokenizer
            .tokens("the quick brown fox jumps over the lazy dog near the river")
            .into_iter()
            .collect();
        jaccard(&x, &y)
    };
    assert_eq!(r.hits[0].exact, Some(want));
    let sketch = c.sketch_of("a").unwrap();
    match c.insert("b", &sketch) {
        Err(Error::Storage(StorageError::ShinglesRequired { collection, .. })) => assert_eq!(collection, "docs"),
        other => panic!("expected ShinglesRequired, got {other:?}"),
    }
    assert_eq!(c.len().unwrap(), 1, "the refused batch left nothing");
}

#[test]
fn upserts_deletes_compaction_drop_and_reopen_keep_the_table_in_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.sketchdb");
    let sets = families(21, 50);
    {
        let (db, c) = exact_collection(dir.path(), SketchParams::bbit(128, 8, 2).unwrap(), &sets);
        // Replace 0..10 with the sets of 10..20, delete 20..30.
        let mut batch = Batch::new();
        for i in 0..10 {
            let set = TokenSet::from_unsorted(sets[i + 10].iter().copied().collect());
            batch.upsert_with_shingles(format!("k{i}"), c.sketcher().sketch(&set).unwrap(), &set);
        }
        for i in 20..30 {
            batch.delete(format!("k{i}"));
        }
        c.apply(&batch).unwrap();
        db.compact().unwrap();
        let report = sketchdb::admin::verify(&db).unwrap();
        assert!(report.is_ok(), "{report:?}");
    }
    let db = Database::open(&path).unwrap();
    let c = db.collection("c").unwrap();
    assert!(c.config().exact_shingles, "the flag survives reopening");
    let live: BTreeMap<usize, &BTreeSet<u64>> =
        (0..50).filter(|i| !(20..30).contains(i)).map(|i| (i, if i < 10 { &sets[i + 10] } else { &sets[i] })).collect();
    let all = QueryOptions { exact: true, ..QueryOptions::default() };
    for (&q, qs) in &live {
        let r = c.query_key(format!("k{q}"), QueryKind::Threshold(0.5), all).unwrap();
        let got: BTreeSet<usize> = r.hits.iter().map(|h| index_of(&h.key)).collect();
        let want: BTreeSet<usize> = live.iter().filter(|(_, s)| jaccard(qs, s) >= 0.5).map(|(&i, _)| i).collect();
        assert_eq!(got, want, "query {q}");
    }
    db.drop_collection("c").unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::bbit(128, 8, 2).unwrap())).unwrap();
    assert!(!c.config().exact_shingles, "a dropped collection's marker is gone");
    c.insert_text("a", "one two three four five six").unwrap();
}

#[test]
fn the_version_1_fixture_opens_without_shingles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v1.sketchdb");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sketchdb");
    std::fs::copy(&src, &path).unwrap();
    let db = Database::open(&path).unwrap();
    for c in db.collections().unwrap() {
        assert!(!c.config().exact_shingles, "{}", c.name());
        let d = c.dedup(QueryKind::Threshold(0.9), QueryOptions::default());
        if c.params().kind() != sketchdb::SketchKind::SimHash {
            assert_eq!(d.unwrap().scoring, Scoring::Estimated);
        }
    }
    // A write to an old collection never creates the shingle table's entries.
    let c = db.collection("minhash").unwrap();
    c.insert_tokens("new", &TokenSet::from_unsorted(vec![1, 2, 3])).unwrap();
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
}
