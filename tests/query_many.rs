//! Batched queries (`Collection::query_many`, `query_probes`): every answer equals the
//! single-probe call's (hits and plan) on MinHash with an LSH index, b-bit, SimHash with
//! Hamming tables and a collection that keeps exact shingles, on rayon pools of 1 and 2
//! threads; a bad probe fails alone at its position; every answer of one batch comes from one
//! commit while a writer commits.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::Rng;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, Error, IndexConfig, Probe, ProbeError, Query, QueryError, QueryKind,
    QueryOptions, QueryResult, SketchError, SketchParams, TokenSet,
};

const WORDS: usize = 400;

/// `n` texts in families of near-duplicates: each family a base of 20-60 words from a
/// vocabulary of [`WORDS`], each member with some words replaced.
fn texts(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let len = rng.range(20, 60) as usize;
        let base: Vec<u64> = (0..len).map(|_| rng.range(0, WORDS as u64 - 1)).collect();
        for _ in 0..rng.range(1, 4) {
            let change = rng.f64() * 0.5;
            let words: Vec<String> = base
                .iter()
                .map(|&w| if rng.f64() < change { rng.range(0, WORDS as u64 - 1) } else { w })
                .map(|w| format!("w{w}"))
                .collect();
            out.push(words.join(" "));
        }
    }
    out.truncate(n);
    out
}

/// A collection of `config` holding `texts` under keys `k0`, `k1`, ... (with their shingle
/// sets where the collection keeps them).
fn collection(db: &Database, name: &str, config: CollectionConfig, texts: &[String]) -> Collection {
    let c = db.create_collection(name, config).unwrap();
    let mut batch = Batch::new();
    for (i, text) in texts.iter().enumerate() {
        let tokens = c.config().tokenizer.tokens(text);
        let sketch = c.sketcher().sketch_multiset(&tokens).unwrap();
        if c.config().exact_shingles {
            batch.insert_with_shingles(format!("k{i}"), sketch, &TokenSet::from_unsorted(tokens));
        } else {
            batch.insert(format!("k{i}"), sketch);
        }
    }
    c.apply(&batch).unwrap();
    c
}

/// `n` probes cycling through stored keys, new texts (stored texts less their first word, or
/// unrelated ones), their tokens and their sketches.
fn probes(c: &Collection, n: usize, stored: &[String], seed: u64) -> Vec<Probe> {
    let unrelated = texts(seed, n);
    let fresh: Vec<String> = (0..n)
        .map(|i| match stored[(i * 13) % stored.len()].split_once(' ') {
            Some((_, rest)) if i % 3 != 0 => rest.to_string(),
            _ => unrelated[i].clone(),
        })
        .collect();
    (0..n)
        .map(|i| match i % 4 {
            0 => Probe::Key(format!("k{}", (i * 7) % stored.len()).into_bytes()),
            1 => Probe::Text(fresh[i].clone()),
            2 => Probe::Tokens(c.config().tokenizer.tokens(&fresh[i])),
            _ => Probe::Sketch(c.sketcher().sketch_text(&c.config().tokenizer, &fresh[i]).unwrap()),
        })
        .collect()
}

/// What the single-probe call for `probe` returns.
fn single(c: &Collection, probe: &Probe, kind: QueryKind, options: QueryOptions) -> sketchdb::Result<QueryResult> {
    match probe {
        Probe::Key(k) => c.query_key(k, kind, options),
        Probe::Text(t) => c.query_text(t, kind, options),
        Probe::Tokens(t) => c.query_tokens(t, kind, options),
        Probe::Sketch(s) => c.query(&Query { sketch: s.clone(), kind, options }),
        _ => unreachable!("every probe kind is listed"),
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
}

/// The batch's answers equal the single-probe answers, hit for hit, with the same plan.
fn assert_batch_equals_single(c: &Collection, probes: &[Probe], kinds: &[QueryKind]) {
    let options = QueryOptions::default();
    for &kind in kinds {
        let want: Vec<QueryResult> = probes.iter().map(|p| single(c, p, kind, options).unwrap()).collect();
        let found = want.iter().filter(|r| !r.hits.is_empty()).count();
        assert!(found > probes.len() / 4, "{}: {kind:?} finds neighbours for {found} probes", c.name());
        for threads in [1, 2] {
            let got = pool(threads).install(|| c.query_probes(probes, kind, options)).unwrap();
            assert_eq!(got.len(), probes.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let g = g.as_ref().unwrap();
                assert_eq!(g.hits, w.hits, "{}: {kind:?}, probe {i}, {threads} threads", c.name());
                assert_eq!(g.plan, w.plan, "{}: {kind:?}, probe {i}, {threads} threads", c.name());
            }
            // The same questions as queries of sketches (query_many) answer as `query` does.
            let queries: Vec<Query> = probes
                .iter()
                .filter_map(|p| match p {
                    Probe::Sketch(s) => Some(Query { sketch: s.clone(), kind, options }),
                    _ => None,
                })
                .collect();
            let got = pool(threads).install(|| c.query_many(&queries)).unwrap();
            for (g, q) in got.iter().zip(&queries) {
                assert_eq!(g.as_ref().unwrap().hits, c.query(q).unwrap().hits);
            }
        }
    }
}

#[test]
fn batches_equal_single_probe_answers_on_every_kind_and_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("m.sketchdb")).unwrap();
    let stored = texts(11, 400);
    let threshold_and_top = [QueryKind::Threshold(0.8), QueryKind::Threshold(0.5), QueryKind::TopK(5)];

    let lsh = CollectionConfig::new(SketchParams::minhash(128, 32, 1).unwrap()).with_index(IndexConfig::lsh(0.5));
    let c = collection(&db, "minhash_lsh", lsh, &stored);
    assert_batch_equals_single(&c, &probes(&c, 240, &stored, 21), &threshold_and_top);

    let bbit = CollectionConfig::new(SketchParams::bbit(256, 8, 2).unwrap());
    let c = collection(&db, "bbit", bbit, &stored);
    assert_batch_equals_single(&c, &probes(&c, 240, &stored, 22), &threshold_and_top);

    let simhash =
        CollectionConfig::new(SketchParams::simhash(64, 3).unwrap()).with_index(IndexConfig::simhash_tables(3));
    let c = collection(&db, "simhash", simhash, &stored);
    assert_batch_equals_single(&c, &probes(&c, 240, &stored, 23), &[QueryKind::Hamming(3), QueryKind::TopK(5)]);

    let exact = CollectionConfig::new(SketchParams::bbit(128, 8, 4).unwrap()).with_exact_shingles(true);
    let c = collection(&db, "exact", exact, &stored);
    let p = probes(&c, 240, &stored, 24);
    assert_batch_equals_single(&c, &p, &threshold_and_top);
    // Keys, texts and tokens are re-ranked exactly there; sketches are estimated.
    let got = c.query_probes(&p, QueryKind::Threshold(0.5), QueryOptions::default()).unwrap();
    for (probe, r) in p.iter().zip(&got) {
        let exact = matches!(probe, Probe::Key(_) | Probe::Text(_) | Probe::Tokens(_));
        assert!(r.as_ref().unwrap().hits.iter().all(|h| h.exact.is_some() == exact));
    }
}

#[test]
fn a_bad_probe_fails_alone_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("b.sketchdb")).unwrap();
    let stored = texts(5, 60);
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap()).with_index(IndexConfig::lsh(0.6));
    let c = collection(&db, "c", config, &stored);
    let other = sketchdb::Sketcher::new(SketchParams::minhash(32, 32, 1).unwrap()).unwrap();
    let mut p = probes(&c, 40, &stored, 6);
    p[3] = Probe::Sketch(other.sketch_multiset(&[1, 2, 3]).unwrap());
    p[17] = Probe::Key(b"no such key".to_vec());
    let kind = QueryKind::Threshold(0.6);
    let got = c.query_probes(&p, kind, QueryOptions::default()).unwrap();
    for (i, r) in got.iter().enumerate() {
        match (i, r) {
            (3, Err(ProbeError { position: 3, error: Error::Sketch(SketchError::Incompatible { .. }), .. })) => {}
            (17, Err(ProbeError { position: 17, error: Error::Query(QueryError::UnknownKey { .. }), .. })) => {}
            (3 | 17, other) => panic!("probe {i}: {other:?}"),
            (_, r) => {
                assert_eq!(r.as_ref().unwrap().hits, single(&c, &p[i], kind, QueryOptions::default()).unwrap().hits)
            }
        }
    }
    let message = got[17].as_ref().unwrap_err().to_string();
    assert!(message.starts_with("probe 17: ") && message.contains("no such key"), "{message}");

    // A question out of range fails alone in query_many too.
    let sketch = c.sketch_of("k0").unwrap();
    let q = |t| Query { sketch: sketch.clone(), kind: QueryKind::Threshold(t), options: QueryOptions::default() };
    let got = c.query_many(&[q(0.5), q(1.5), q(0.9)]).unwrap();
    assert!(got[0].as_ref().unwrap().hits.iter().any(|h| h.key == b"k0"));
    assert!(matches!(
        got[1],
        Err(ProbeError { position: 1, error: Error::Query(QueryError::InvalidParam { .. }), .. })
    ));
    assert!(got[2].is_ok());

    // A snapshot of another collection is refused for the whole batch.
    let d = collection(&db, "d", CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap()), &stored[..3]);
    let e = c.query_many_in(&d.snapshot().unwrap(), &[q(0.5)]).unwrap_err();
    assert!(matches!(e, Error::Query(QueryError::ForeignSnapshot { .. })), "{e}");
}

/// Hit counts of a batch of one repeated probe.
fn counts(answers: &[Result<QueryResult, ProbeError>]) -> Vec<usize> {
    answers.iter().map(|r| r.as_ref().unwrap().hits.len()).collect()
}

#[test]
fn one_batch_reads_one_commit_while_a_writer_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("s.sketchdb")).unwrap();
    let stored = texts(9, 50);
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap()).with_index(IndexConfig::lsh(0.8));
    let c = collection(&db, "c", config, &stored);
    let sketch = c.sketch_of("k0").unwrap();
    let kind = QueryKind::Threshold(0.99);
    let probes = vec![Probe::Sketch(sketch.clone()); 500];

    // A snapshot held across a commit answers as of its commit.
    let snap = c.snapshot().unwrap();
    let before = c.query_probes(&probes, kind, QueryOptions::default()).unwrap();
    c.insert("copy", &sketch).unwrap();
    let held = c.query_probes_in(&snap, &probes, kind, QueryOptions::default()).unwrap();
    let now = c.query_probes(&probes, kind, QueryOptions::default()).unwrap();
    assert_eq!(counts(&held), counts(&before));
    assert!(counts(&now).iter().all(|&n| n == counts(&before)[0] + 1));

    // While a writer commits copies of the probe one by one, each batch sees one commit:
    // every probe of it finds the same number of copies.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (c, sketch, stop) = (c.clone(), sketch.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                c.insert(format!("w{i}"), &sketch).unwrap();
                i += 1;
            }
            i
        })
    };
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let answers = pool(2).install(|| c.query_probes(&probes, kind, QueryOptions::default())).unwrap();
        let n = counts(&answers);
        let distinct: std::collections::BTreeSet<usize> = n.iter().copied().collect();
        assert_eq!(distinct.len(), 1, "one batch saw several commits: copies found {distinct:?}");
        seen.insert(n[0]);
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(written > 0);
    assert!(seen.iter().all(|&n| n >= counts(&now)[0] && n <= counts(&now)[0] + written));
}
