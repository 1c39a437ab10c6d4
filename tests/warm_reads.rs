//! Warm reads (the snapshot a writer handle keeps between its commits, and what queries
//! derive from it once per commit): every answer equals the cold one, which a read-only
//! handle with no probe cache gives (a read transaction, statistics, plan and index reads
//! per query), on MinHash with LSH indexes at t = 0.5 and 0.8, b-bit with an LSH index, b-bit
//! without one and SimHash with Hamming tables; a commit by the same handle, by a clone or by
//! another handle changes the next answer (insert, upsert, delete, index rebuild), as does one
//! by another process; a second writer handle is refused (what the kept snapshot's validity
//! rests on); compaction and verification run after warm reads; a small probe-cache budget
//! is respected and changes no answer.

mod common;

use common::Rng;
use sketchdb::plan::PlanKind;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, Query, QueryKind, QueryOptions, QueryResult,
    SketchParams,
};

const WORDS: u64 = 300;

/// `n` texts in families of near-duplicates (a base of 20-60 words, members with up to half
/// of them replaced).
fn texts(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let len = rng.range(20, 60) as usize;
        let base: Vec<u64> = (0..len).map(|_| rng.range(0, WORDS - 1)).collect();
        for _ in 0..rng.range(1, 4) {
            let change = rng.f64() * 0.5;
            let words: Vec<String> = base
                .iter()
                .map(|&w| if rng.f64() < change { rng.range(0, WORDS - 1) } else { w })
                .map(|w| format!("w{w}"))
                .collect();
            out.push(words.join(" "));
        }
    }
    out.truncate(n);
    out
}

fn create(db: &Database, name: &str, config: CollectionConfig, texts: &[String]) -> Collection {
    let c = db.create_collection(name, config).unwrap();
    let mut batch = Batch::new();
    for (i, text) in texts.iter().enumerate() {
        batch.insert(format!("k{i}"), c.sketcher().sketch_text(&c.config().tokenizer, text).unwrap());
    }
    c.apply(&batch).unwrap();
    c
}

/// Queries of `kind` from the sketches of `probes` (stored texts and others), through
/// `force` when given (small collections are cheaper to scan: forced, the index is probed).
fn queries(c: &Collection, probes: &[String], kind: QueryKind, force: Option<PlanKind>) -> Vec<Query> {
    probes
        .iter()
        .map(|t| Query {
            sketch: c.sketcher().sketch_text(&c.config().tokenizer, t).unwrap(),
            kind,
            options: QueryOptions { force, ..QueryOptions::default() },
        })
        .collect()
}

/// The hits and plan of every query, asked of `c`.
fn answers(c: &Collection, queries: &[Query]) -> Vec<QueryResult> {
    queries.iter().map(|q| c.query(q).unwrap()).collect()
}

fn assert_same(got: &[QueryResult], want: &[QueryResult], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.hits, w.hits, "{what}: query {i}");
        assert_eq!(g.plan, w.plan, "{what}: query {i}");
    }
}

/// A read-only handle on the writer's file that keeps nothing between queries.
fn cold_reader(path: &std::path::Path) -> Database {
    let reader = Database::open_read_only(path).unwrap();
    reader.set_probe_cache_budget(0);
    reader
}

/// A question and the plan it is forced through (`None`: the planner's choice).
type Asked = (QueryKind, Option<PlanKind>);

#[test]
fn warm_answers_equal_cold_answers_on_every_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sketchdb");
    let db = Database::create(&path).unwrap();
    let stored = texts(3, 600);
    let mut probes: Vec<String> = stored.iter().step_by(7).cloned().collect();
    probes.extend(texts(99, 40));

    let minhash = || CollectionConfig::new(SketchParams::minhash(128, 32, 1).unwrap());
    let bbit = || CollectionConfig::new(SketchParams::bbit(512, 8, 2).unwrap());
    let simhash =
        CollectionConfig::new(SketchParams::simhash(64, 3).unwrap()).with_index(IndexConfig::simhash_tables(3));
    let (lsh, sim) = (Some(PlanKind::LshProbe), Some(PlanKind::SimhashProbe));
    let t = QueryKind::Threshold;
    let cases: Vec<(&str, CollectionConfig, Vec<Asked>)> = vec![
        ("minhash_lsh_05", minhash().with_index(IndexConfig::lsh(0.5)), vec![(t(0.5), lsh), (t(0.5), None)]),
        ("minhash_lsh_08", minhash().with_index(IndexConfig::lsh(0.8)), vec![(t(0.8), lsh), (t(0.8), None)]),
        ("bbit_lsh_08", bbit().with_index(IndexConfig::lsh(0.8)), vec![(t(0.8), lsh), (QueryKind::TopK(5), None)]),
        ("bbit_scan", bbit(), vec![(t(0.5), None), (QueryKind::TopK(3), None)]),
        ("simhash", simhash, vec![(QueryKind::Hamming(3), sim), (QueryKind::Hamming(1), None)]),
    ];
    let made: Vec<(Collection, Vec<Asked>)> =
        cases.into_iter().map(|(name, config, kinds)| (create(&db, name, config, &stored), kinds)).collect();
    let reader = cold_reader(&path);
    for (c, kinds) in &made {
        let cold = reader.collection(c.name()).unwrap();
        for &(kind, force) in kinds {
            let qs = queries(c, &probes, kind, force);
            let want = answers(&cold, &qs);
            let found = want.iter().filter(|r| !r.hits.is_empty()).count();
            assert!(found >= probes.len() / 2, "{}: {kind:?} finds neighbours for {found} probes", c.name());
            // First pass fills the caches, the second reads them only.
            assert_same(&answers(c, &qs), &want, &format!("{} {kind:?}, first pass", c.name()));
            assert_same(&answers(c, &qs), &want, &format!("{} {kind:?}, warm", c.name()));
            assert_same(&answers(&cold, &qs), &want, &format!("{} {kind:?}, cold again", c.name()));
        }
    }
    assert_eq!(reader.probe_cache_held(), 0, "the cold reader keeps nothing");
    assert!(db.probe_cache_held() > 0, "the writer's warm reads are served from its probe cache");
}

/// Keys of the hits of a threshold query of `sketch` at t = 0.8, through the LSH index.
fn hit_keys(c: &Collection, sketch: &sketchdb::Sketch) -> Vec<String> {
    let options = QueryOptions { force: Some(PlanKind::LshProbe), ..QueryOptions::default() };
    let r = c.query(&Query::threshold(sketch.clone(), 0.8).with_options(options)).unwrap();
    let mut keys: Vec<String> = r.hits.iter().map(|h| h.key_str().unwrap().to_string()).collect();
    keys.sort();
    keys
}

#[test]
fn every_commit_changes_the_next_warm_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sketchdb");
    let db = Database::create(&path).unwrap();
    let stored = texts(5, 300);
    let config = CollectionConfig::new(SketchParams::minhash(128, 32, 1).unwrap()).with_index(IndexConfig::lsh(0.8));
    let mut c = create(&db, "c", config, &stored);
    let other = db.collection("c").unwrap();
    let reader = cold_reader(&path);
    let cold = reader.collection("c").unwrap();
    let probe = c.sketch_of("k0").unwrap();
    let unrelated = c.sketcher().sketch_text(&c.config().tokenizer, "nothing like any stored text at all").unwrap();
    let agree = |handles: [&Collection; 3], mut want: Vec<String>, stage: &str| {
        want.sort();
        for (who, h) in ["same handle", "other handle", "cold reader"].into_iter().zip(handles) {
            // Twice: the second answer is the warm one.
            assert_eq!(hit_keys(h, &probe), want, "{stage}: {who}");
            assert_eq!(hit_keys(h, &probe), want, "{stage}: {who}, warm");
        }
    };
    let base: Vec<String> = hit_keys(&c, &probe);
    assert!(base.contains(&"k0".to_string()));
    let with = |extra: &[&str], without: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = base.iter().filter(|k| !without.contains(&k.as_str())).cloned().collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    c.insert("copy", &probe).unwrap();
    agree([&c, &other, &cold], with(&["copy"], &[]), "insert by this handle");

    other.upsert("copy", &unrelated).unwrap();
    agree([&c, &other, &cold], with(&[], &[]), "upsert by another handle");

    c.clone().apply(Batch::new().insert("twin", probe.clone()).delete("k0")).unwrap();
    let mut now = with(&["twin"], &["k0"]);
    now.sort();
    agree([&c, &other, &cold], now.clone(), "batch by a clone");

    // A rebuilt index (another banding) answers from the new index at once.
    c.rebuild_index(IndexConfig::lsh(0.5)).unwrap();
    assert_eq!(hit_keys(&c, &probe), now, "after rebuild_index");
    assert_eq!(hit_keys(&other, &probe), now, "after rebuild_index, other handle");
    c.delete("twin").unwrap();
    agree([&c, &other, &cold], with(&[], &["k0"]), "delete after rebuild");
    assert_eq!(c.len().unwrap(), 300, "300 stored, copy kept, k0 and twin gone");
    assert_eq!(cold.len().unwrap(), 300);
}

#[test]
fn a_second_writer_handle_is_refused() {
    // The kept snapshot is valid because no other handle can commit beside a writer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sketchdb");
    let db = Database::create(&path).unwrap();
    let second = Database::builder().busy_timeout(std::time::Duration::ZERO).open(&path);
    assert!(second.is_err(), "a second writer handle opened beside the first");
    drop(db);
    Database::open(&path).unwrap();
}

#[test]
fn compaction_and_verification_run_after_warm_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("v.sketchdb")).unwrap();
    let stored = texts(8, 200);
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap()).with_index(IndexConfig::lsh(0.8));
    let c = create(&db, "c", config, &stored);
    let qs = queries(&c, &stored[..40], QueryKind::Threshold(0.8), Some(PlanKind::LshProbe));
    let before = answers(&c, &qs);
    assert_same(&answers(&c, &qs), &before, "warm");
    // A held snapshot of the last commit, as the kept one is, must not stop either.
    db.compact().unwrap();
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{report:?}");
    let after = answers(&c, &qs);
    for (a, b) in after.iter().zip(&before) {
        let keys = |r: &QueryResult| r.hits.iter().map(|h| h.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(a), keys(b), "compaction keeps every answer");
    }
}

#[test]
fn a_small_probe_cache_budget_is_respected_and_changes_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.sketchdb");
    let db = Database::create(&path).unwrap();
    let stored = texts(13, 500);
    let config = CollectionConfig::new(SketchParams::minhash(128, 32, 1).unwrap()).with_index(IndexConfig::lsh(0.5));
    let c = create(&db, "c", config, &stored);
    let qs = queries(&c, &stored[..120], QueryKind::Threshold(0.5), Some(PlanKind::LshProbe));
    let want = answers(&c, &qs);
    let full = db.probe_cache_held();
    assert!(full > 0, "the probes kept what they read");
    let budget = full / 4;
    db.set_probe_cache_budget(budget);
    for pass in 0..2 {
        assert_same(&answers(&c, &qs), &want, &format!("budget {budget}, pass {pass}"));
        assert!(db.probe_cache_held() <= budget, "held {} > budget {budget}", db.probe_cache_held());
    }
    db.set_probe_cache_budget(0);
    assert_same(&answers(&c, &qs), &want, "budget 0");
    assert_eq!(db.probe_cache_held(), 0);
}

/// A writer process's commits are seen by this process's read-only handle at its next query.
#[cfg(feature = "cli")]
#[test]
fn a_writer_process_commit_is_seen_by_the_next_query() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "the quick brown fox jumps over the lazy dog again and again";
    std::fs::write(d.join("a.jsonl"), format!("{{\"key\":\"a\",\"text\":\"{text}\"}}\n")).unwrap();
    let cli = |args: &[&str]| {
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(d).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    cli(&["--db", "x.db", "ingest", "c", "a.jsonl"]);
    let reader = Database::open_read_only(d.join("x.db")).unwrap();
    let c = reader.collection("c").unwrap();
    let probe = c.sketcher().sketch_text(&c.config().tokenizer, text).unwrap();
    let q = Query::threshold(probe, 0.9);
    for _ in 0..3 {
        assert_eq!(c.query(&q).unwrap().hits.len(), 1);
    }
    std::fs::write(d.join("b.jsonl"), format!("{{\"key\":\"b\",\"text\":\"{text}\"}}\n")).unwrap();
    cli(&["--db", "x.db", "ingest", "c", "b.jsonl"]);
    assert_eq!(c.query(&q).unwrap().hits.len(), 2, "the writer process's commit is seen");
}
