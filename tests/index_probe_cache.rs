//! Index probes keep the values they read in a cache keyed by (database handle, collection,
//! index definition bytes, and for SimHash tables the collection's next row and live count).
//! These tests pin what makes that sound: a probe never sees values of another database with
//! byte-identical definitions, of a later commit (a held snapshot keeps its own answers), or
//! of an earlier one (after inserts, deletes, upserts that leave the definition unchanged and
//! compaction, the answers follow the index). Queries also keep the records they score there
//! (LSH candidates, SimHash matches): their answers follow upserts, deletes and compaction
//! too.

use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, Query, QueryOptions, SimHash, Sketch, SketchParams,
    Sketcher, TokenSet, plan::PlanKind, testing,
};

const INDEX: IndexConfig = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };

/// A new database with collection `s` of 16 x 64-bit MinHash (family seed `seed`) under
/// [`INDEX`], and its sketcher.
fn indexed(seed: u64) -> (tempfile::TempDir, Database, Collection, Sketcher) {
    let params = SketchParams::minhash(16, 64, seed).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(INDEX)).expect("collection");
    (dir, db, c, Sketcher::new(params).expect("sk"))
}

fn sketch(sk: &Sketcher, base: u64) -> Sketch {
    sk.sketch(&TokenSet::from_unsorted((base..base + 40).collect())).expect("sketch")
}

/// Inserts rows `k0..k{n-1}` in one batch, row i holding `value(i)`.
fn fill(c: &Collection, n: u64, value: impl Fn(u64) -> Sketch) {
    let mut b = Batch::new();
    for i in 0..n {
        b.insert(format!("k{i}"), value(i));
    }
    c.apply(&b).expect("insert");
}

/// Two files, each with collection id 1 and 50 distinct signatures written in one batch:
/// their index definitions are byte-identical (same scheme, one run of rows 0..50, every
/// bucket of size 1), their buckets are not.
#[test]
fn identical_definitions_in_two_databases_do_not_share_chunks() {
    let params = SketchParams::minhash(16, 64, 1).expect("p");
    let sk = Sketcher::new(params).expect("sk");
    let dir = tempfile::tempdir().expect("dir");
    let open = |name: &str, base: u64| {
        let db = Database::create(dir.path().join(name)).expect("create");
        let c = db.create_collection("s", CollectionConfig::new(params).with_index(INDEX)).expect("collection");
        fill(&c, 50, |i| sketch(&sk, base + 1000 * i));
        (db, c)
    };
    let (db1, c1) = open("one", 0);
    let (db2, c2) = open("two", 10_000_000);
    assert_eq!(testing::lsh_stats(&c1, &db1).expect("s"), testing::lsh_stats(&c2, &db2).expect("s"));
    let probe = sketch(&sk, 3000);
    assert_eq!(testing::lsh_candidates(&c1, &db1, &probe, 4).expect("c"), vec![3]);
    assert_eq!(testing::lsh_candidates(&c2, &db2, &probe, 4).expect("c"), Vec::<u64>::new());
    assert_eq!(testing::lsh_candidates(&c1, &db1, &probe, 4).expect("c"), vec![3]);
}

#[test]
fn snapshots_and_later_commits_each_see_their_own_buckets() {
    let (_dir, db, c, sk) = indexed(2);
    let probe = sketch(&sk, 7);
    fill(&c, 20, |i| sketch(&sk, 100_000 * (i + 1)));
    let before = testing::hold_snapshot(&db).expect("snapshot");
    assert!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c").is_empty());
    // A matching row arrives: the latest commit finds it, the held snapshot does not.
    c.insert("match", &probe).expect("insert");
    assert_eq!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c"), vec![20]);
    assert!(testing::lsh_candidates_in(&before, &c, &probe, 4).expect("c").is_empty());
    let with_match = testing::hold_snapshot(&db).expect("snapshot");
    // It goes again: the latest commit no longer finds it, the second snapshot still does.
    c.delete("match").expect("delete");
    assert!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c").is_empty());
    assert_eq!(testing::lsh_candidates_in(&with_match, &c, &probe, 4).expect("c"), vec![20]);
    assert!(testing::lsh_candidates_in(&before, &c, &probe, 4).expect("c").is_empty());
    // Upserted back under a new row, then compacted (rows move, runs merge): still found,
    // under the row id it has now.
    c.upsert("match", &probe).expect("upsert");
    assert_eq!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c"), vec![21]);
    c.delete("k3").expect("delete");
    drop((before, with_match)); // file compaction waits for no reader
    let s = db.compact().expect("compact");
    assert!(s.rows_moved > 0);
    let row = c.get("match").expect("get").expect("present").row_id;
    assert_eq!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c"), vec![row]);
    let (runs, _) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(runs.len(), 1, "compaction merges the runs: {runs:?}");
}

/// An upsert moves a key to a new row and keeps the SimHash definition's bytes (the live row
/// count is unchanged); probes must still see the move, and a snapshot from before must not.
/// A new database with collection `f` of 64-bit SimHash under radius-3 tables.
fn simhash_indexed() -> (tempfile::TempDir, Database, Collection) {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let config = CollectionConfig::new(simhash_params()).with_index(IndexConfig::SimhashTables { radius: 3 });
    let c = db.create_collection("f", config).expect("collection");
    (dir, db, c)
}

/// The parameters of [`simhash_indexed`]'s collection.
fn simhash_params() -> SketchParams {
    SketchParams::simhash(64, 3).expect("64-bit SimHash")
}

/// The fingerprint `v` under [`simhash_params`].
fn fp(v: u64) -> Sketch {
    Sketch::SimHash(SimHash::from_parts(simhash_params(), u128::from(v)).expect("fp"))
}

#[test]
fn simhash_probes_follow_upserts_that_keep_the_definition() {
    let (_dir, db, c) = simhash_indexed();
    fill(&c, 200, |i| fp(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    let target = 0x0123_4567_89ab_cdefu64;
    assert!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe").is_empty());
    let before = testing::hold_snapshot(&db).expect("snapshot");
    c.upsert("k7", &fp(target ^ 0b101)).expect("upsert");
    assert_eq!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe"), vec![(200, 2)]);
    assert!(testing::simhash_within_in(&before, &c, u128::from(target), 3).expect("probe").is_empty());
    // Once more: the key moves again, the definition still unchanged.
    c.upsert("k7", &fp(target)).expect("upsert");
    assert_eq!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe"), vec![(201, 0)]);
    c.delete("k7").expect("delete");
    assert!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe").is_empty());
}

/// (key, row id, estimate) of every hit of a threshold query run through a forced plan.
fn answers(c: &Collection, probe: &Sketch, t: f64, plan: PlanKind) -> Vec<(String, u64, f64)> {
    let options = QueryOptions { force: Some(plan), ..QueryOptions::default() };
    let r = c.query(&Query::threshold(probe.clone(), t).with_options(options)).expect("query");
    assert_eq!(r.plan.access.kind(), plan);
    let mut hits: Vec<_> =
        r.hits.into_iter().map(|h| (String::from_utf8(h.key).expect("key"), h.row_id, h.estimate.value)).collect();
    hits.sort_by(|a, b| a.0.cmp(&b.0));
    hits
}

/// Verified LSH answers, twice (the second time from the kept records), equal a full scan's
/// answers among the index's candidates after every kind of change to their records.
#[test]
fn verified_records_follow_upserts_deletes_and_compaction() {
    let (_dir, db, c, sk) = indexed(5);
    let probe = sketch(&sk, 7);
    // Every fourth row near the probe (a shifted token range), the rest far from it.
    fill(&c, 40, |i| sketch(&sk, if i % 4 == 0 { 7 + i / 4 } else { 100_000 * (i + 1) }));
    // The scan's answers among the index's candidates (banding is approximate; verification
    // of the candidates is exact).
    let check = |stage: &str| {
        let candidates = testing::lsh_candidates(&c, &db, &probe, 4).expect("candidates");
        let mut scan = answers(&c, &probe, 0.6, PlanKind::FullScan);
        scan.retain(|h| candidates.contains(&h.1));
        for round in 0..2 {
            assert_eq!(answers(&c, &probe, 0.6, PlanKind::LshProbe), scan, "{stage}, round {round}");
        }
        scan
    };
    let first = check("loaded");
    assert!(first.len() >= 3, "{first:?}");
    // A matching key upserted far away, then back near, then deleted.
    let (key, _, _) = first[0].clone();
    c.upsert(&key, &sketch(&sk, 9_000_000)).expect("upsert");
    assert!(!check("upserted away").iter().any(|h| h.0 == key));
    c.upsert(&key, &probe).expect("upsert");
    assert!(check("upserted back").iter().any(|h| h.0 == key && h.2 == 1.0));
    c.delete(&key).expect("delete");
    assert!(!check("deleted").iter().any(|h| h.0 == key));
    // Compaction moves rows to new ids: the answers name them.
    c.delete("k1").expect("delete");
    db.compact().expect("compact");
    let moved = check("compacted");
    assert_eq!(moved.len(), first.len() - 1);
    // With nothing kept (budget 0) the answers are the same.
    let budget = db.probe_cache_budget();
    db.set_probe_cache_budget(0);
    assert_eq!(answers(&c, &probe, 0.6, PlanKind::LshProbe), moved);
    db.set_probe_cache_budget(budget);
}

/// (key, row id, distance) of every hit of a radius-3 query run through a forced plan.
fn hamming_answers(c: &Collection, probe: &Sketch, plan: PlanKind) -> Vec<(String, u64, Option<u32>)> {
    let options = QueryOptions { force: Some(plan), ..QueryOptions::default() };
    let r = c.query(&Query::hamming(probe.clone(), 3).with_options(options)).expect("query");
    assert_eq!(r.plan.access.kind(), plan);
    let mut hits: Vec<_> =
        r.hits.into_iter().map(|h| (String::from_utf8(h.key).expect("key"), h.row_id, h.distance)).collect();
    hits.sort();
    hits
}

/// SimHash answers keep their matches' records in the cache too: scored through the tables,
/// twice (the second time from the kept records), they equal a full scan's after upserts
/// that keep the definition and the live count, deletes and compaction, and with nothing
/// kept.
#[test]
fn simhash_answers_follow_upserts_deletes_and_compaction() {
    let (_dir, db, c) = simhash_indexed();
    let target = 0x0123_4567_89ab_cdefu64;
    // Every fifth row within distance 0..=4 of the target (4 is outside the radius).
    fill(&c, 100, |i| {
        fp(if i % 5 == 0 { target ^ ((1u64 << (i / 5 % 5)) - 1) } else { i.wrapping_mul(0x9e37_79b9_7f4a_7c15) })
    });
    let probe = fp(target);
    let check = |stage: &str| {
        let scan = hamming_answers(&c, &probe, PlanKind::FullScan);
        for round in 0..2 {
            assert_eq!(hamming_answers(&c, &probe, PlanKind::SimhashProbe), scan, "{stage}, round {round}");
        }
        scan
    };
    let first = check("loaded");
    assert_eq!(first.len(), 16, "{first:?}");
    // A match moved far away and back (each upsert keeps the live count), then deleted.
    c.upsert("k0", &fp(!target)).expect("upsert");
    assert!(!check("upserted away").iter().any(|h| h.0 == "k0"));
    c.upsert("k0", &fp(target ^ 1)).expect("upsert");
    assert!(check("upserted back").iter().any(|h| h.0 == "k0" && h.2 == Some(1)));
    c.delete("k0").expect("delete");
    assert!(!check("deleted").iter().any(|h| h.0 == "k0"));
    // Compaction moves rows to new ids: the answers name them.
    db.compact().expect("compact");
    let moved = check("compacted");
    assert_eq!(moved.len(), first.len() - 1);
    assert!(moved.iter().all(|h| !first.iter().any(|f| f.0 == h.0 && f.1 == h.1)), "rows moved: {moved:?}");
    let budget = db.probe_cache_budget();
    db.set_probe_cache_budget(0);
    assert_eq!(hamming_answers(&c, &probe, PlanKind::SimhashProbe), moved);
    db.set_probe_cache_budget(budget);
}
