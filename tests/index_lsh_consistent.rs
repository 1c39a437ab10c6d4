//! The persisted LSH buckets hold exactly the rows whose band keys they are keyed by:
//! candidates of any signature (from the first b' bands) equal a brute-force band-key
//! comparison over the stored sketches; after upserts, deletes, reopen (no rebuild),
//! compaction, rebuilds and buckets big enough to chunk, under every band-hash version (full
//! 64-bit keys of the earliest files, 32-bit keys of 4-byte values, 32-bit keys of values at
//! their own width now). verify is clean and catches a planted
//! inconsistency; the hit-bucket statistic matches the buckets.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::Rng;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, IndexSummary, Sketch, SketchParams, Sketcher, TokenSet,
    admin, testing,
    testing::{BAND_HASH_VERSION, BandKeyScheme, KEY_BITS_V2, lsh_rows},
};

fn stored(c: &Collection) -> Vec<(u64, Sketch)> {
    c.scan().expect("scan").map(|r| r.expect("record")).map(|r| (r.row_id, r.sketch)).collect()
}

/// A new database in `dir` with collection `s` of `params` under `index`, and its sketcher.
fn indexed(dir: &std::path::Path, params: SketchParams, index: IndexConfig) -> (Database, Collection, Sketcher) {
    let db = Database::create(dir.join("db")).expect("create");
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(index)).expect("collection");
    (db, c, Sketcher::new(params).expect("sketcher"))
}

/// The band-hash version the collection's statistics show.
fn shown_band_hash(c: &Collection) -> u16 {
    match c.stats().expect("stats").index {
        Some(IndexSummary::Lsh { band_hash, .. }) => band_hash,
        other => panic!("not an LSH index: {other:?}"),
    }
}

fn keys(scheme: &BandKeyScheme, s: &Sketch) -> Vec<u64> {
    scheme.keys(&lsh_rows(s).expect("rows")).expect("keys")
}

fn check(c: &Collection, db: &Database, queries: &[Sketch], stage: &str) {
    let scheme = testing::lsh_scheme(c, db).expect("scheme").expect("lsh");
    let rows = stored(c);
    let row_keys: Vec<(u64, Vec<u64>)> = rows.iter().map(|(r, s)| (*r, keys(&scheme, s))).collect();
    let b = scheme.params.bands;
    let all: Vec<&Sketch> = rows.iter().map(|(_, s)| s).take(40).chain(queries.iter()).collect();
    for q in all {
        let qk = keys(&scheme, q);
        for bands in [b, b.div_ceil(2), 1] {
            let want: Vec<u64> =
                row_keys.iter().filter(|(_, k)| (0..bands as usize).any(|i| k[i] == qk[i])).map(|(r, _)| *r).collect();
            let got = testing::lsh_candidates(c, db, q, bands).expect("candidates");
            assert_eq!(got, want, "{stage}: bands {bands}");
        }
    }
    // The runs: in the shape writes leave them, every live row in one of them.
    let (runs, _) = testing::lsh_group_chunks(c, db).expect("chunks").expect("lsh");
    if let Err(e) = common::lsh_runs_settled(&runs) {
        panic!("{stage}: {e}");
    }
    let run_of = |row: u64| runs.iter().position(|r| r.first_row <= row && row < r.end_row).expect("row in a run");
    // Removed rows whose entries the runs still hold: listed, held by their pages, counted
    // by their runs, and fewer than an eighth of any run's rows (more are rewritten away).
    let removed = testing::lsh_removed_rows(c, db).expect("removed rows");
    let mut dead = vec![0u64; runs.len()];
    let mut held_keys = Vec::new();
    for (row, sketch) in &removed {
        assert!(rows.iter().all(|(r, _)| r != row), "{stage}: removed row {row} is live");
        dead[run_of(*row)] += 1;
        let sketch = sketch.as_ref().unwrap_or_else(|| panic!("{stage}: removed row {row} is in no page"));
        held_keys.push((*row, keys(&scheme, sketch)));
    }
    for (run, &n) in runs.iter().zip(&dead) {
        assert_eq!(run.dead, n, "{stage}: run {} counts {} removed rows, {n} listed", run.id, run.dead);
        assert!(n * 8 < run.entries / u64::from(b), "{stage}: run {run:?} kept {n} removed rows");
    }
    // The statistic: sum(s^2) / sum(s) over each run's buckets (live and listed removed
    // rows); at most the same sum over the buckets of the whole index (rows sharing a key in
    // two runs count apart), equal to it with one run.
    let mut sizes: HashMap<(usize, usize, u64), u64> = HashMap::new();
    let mut whole: HashMap<(usize, u64), u64> = HashMap::new();
    for (row, k) in row_keys.iter().chain(&held_keys) {
        for (i, &key) in k.iter().enumerate() {
            *sizes.entry((run_of(*row), i, key)).or_default() += 1;
            *whole.entry((i, key)).or_default() += 1;
        }
    }
    let mean_of = |sizes: &mut dyn Iterator<Item = u64>| {
        let (s1, s2) = sizes.fold((0u64, 0u64), |(a, b), s| (a + s, b + s * s));
        if s1 == 0 { 0.0 } else { s2 as f64 / s1 as f64 }
    };
    let want = mean_of(&mut sizes.values().copied());
    let upper = mean_of(&mut whole.values().copied());
    let (_, mean) = testing::lsh_stats(c, db).expect("stats").expect("lsh");
    assert!((mean - want).abs() < 1e-9, "{stage}: mean hit bucket {mean} vs {want}");
    assert!(mean <= upper + 1e-9, "{stage}: {mean} above the whole-index {upper}");
    if runs.len() == 1 {
        assert!((mean - upper).abs() < 1e-9, "{stage}: one run: {mean} vs {upper}");
    }
    let report = admin::verify(db).expect("verify");
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
}

fn family(rng: &mut Rng, n_families: usize, per: usize) -> Vec<TokenSet> {
    let mut out = vec![];
    for _ in 0..n_families {
        let base: Vec<u64> = (0..rng.range(20, 200)).map(|_| rng.next_u64()).collect();
        for v in 0..per {
            let mut t = base.clone();
            // Variants replace a few tokens; variant 0 is the base, 1 an identical copy.
            if v > 1 {
                for _ in 0..rng.range(1, (base.len() / 4) as u64) {
                    let i = rng.range(0, t.len() as u64 - 1) as usize;
                    t[i] = rng.next_u64();
                }
            }
            out.push(TokenSet::from_unsorted(t));
        }
    }
    out
}

fn run(params: SketchParams, index: IndexConfig, seed: u64) {
    run_at(params, index, seed, BAND_HASH_VERSION);
}

/// The consistency run over an index whose band keys follow band-hash `version`.
fn run_at(params: SketchParams, index: IndexConfig, seed: u64, version: u16) {
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db");
    let db = Database::create(&path).expect("create");
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(index)).expect("collection");
    if version != BAND_HASH_VERSION {
        assert!(testing::set_empty_lsh_band_hash_version(&c, &db, version).expect("set version"));
    }
    let scheme = testing::lsh_scheme(&c, &db).expect("scheme").expect("lsh");
    assert_eq!((scheme.version, scheme.key_bits()), (version, if version == 1 { 64 } else { KEY_BITS_V2 }));
    assert_eq!(shown_band_hash(&c), version, "stats show the stored keys' version");
    let sk = Sketcher::new(params).expect("sketcher");
    let sets = family(&mut rng, 30, 6);
    let sketches: Vec<Sketch> = sets.iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    let mut batch = Batch::new();
    for (i, s) in sketches.iter().enumerate().skip(5) {
        batch.insert(format!("k{i}"), s.clone());
    }
    c.apply(&batch).expect("insert");
    for (i, s) in sketches.iter().enumerate().take(5) {
        c.insert(format!("k{i}"), s).expect("insert");
    }
    let queries: Vec<Sketch> = family(&mut rng, 3, 3).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    check(&c, &db, &queries, "after insert");

    let mut batch = Batch::new();
    for i in (0..sketches.len()).step_by(4) {
        batch.delete(format!("k{i}"));
    }
    for i in (1..sketches.len()).step_by(5) {
        batch.upsert(format!("k{i}"), sketches[(i * 7) % sketches.len()].clone());
    }
    batch.insert("new", sketches[3].clone()).delete("new"); // added and removed in one batch
    c.apply(&batch).expect("update");
    c.delete("k2").expect("delete");
    c.upsert("k3", &sketches[9]).expect("upsert");
    check(&c, &db, &queries, "after deletes and upserts");

    drop(c);
    drop(db);
    let db = Database::open(&path).expect("open");
    let mut c = db.collection("s").expect("collection");
    check(&c, &db, &queries, "after reopen");

    let s = db.compact().expect("compact");
    assert!(s.rows_moved > 0);
    check(&c, &db, &queries, "after compaction");

    assert_eq!(testing::lsh_scheme(&c, &db).expect("scheme").expect("lsh").version, version, "kept until a rebuild");
    c.rebuild_index(IndexConfig::Lsh { threshold: 0.6, bands: Some(4), rows: Some(2) }).expect("rebuild");
    assert_eq!(testing::lsh_stats(&c, &db).expect("stats").expect("lsh").0.bands, 4);
    assert_eq!(testing::lsh_scheme(&c, &db).expect("scheme").expect("lsh").version, BAND_HASH_VERSION);
    assert_eq!(shown_band_hash(&c), BAND_HASH_VERSION);
    check(&c, &db, &queries, "after rebuild");

    // Plant an inconsistency: verify names it.
    assert!(testing::drop_first_index_bucket(&c, &db).expect("plant"));
    let report = admin::verify(&db).expect("verify");
    assert!(report.problems.iter().any(|p| p.detail.contains("sketchdb.lsh_runs")), "{:?}", report.problems);
}

#[test]
fn minhash64_explicit_banding() {
    run(
        SketchParams::minhash(32, 64, 1).expect("p"),
        IndexConfig::Lsh { threshold: 0.5, bands: Some(8), rows: Some(4) },
        1,
    );
}

/// Files written before band-hash version 2 hold full 64-bit band keys, and files written
/// before version 3 32-bit keys of 4-byte values: both are probed, maintained, compacted and
/// verified as they are, until a rebuild moves them to the current version.
#[test]
fn band_hash_versions_1_and_2_indexes_stay_readable_and_maintained() {
    run_at(
        SketchParams::minhash(32, 64, 1).expect("p"),
        IndexConfig::Lsh { threshold: 0.5, bands: Some(8), rows: Some(2) },
        5,
        1,
    );
    run_at(SketchParams::bbit(64, 8, 3).expect("p"), IndexConfig::lsh(0.8), 6, 1);
    run_at(SketchParams::bbit(64, 8, 3).expect("p"), IndexConfig::lsh(0.8), 7, 2);
    run_at(SketchParams::bbit(64, 16, 3).expect("p"), IndexConfig::lsh(0.7), 8, 2);
    run_at(
        SketchParams::minhash(32, 32, 1).expect("p"),
        IndexConfig::Lsh { threshold: 0.5, bands: Some(8), rows: Some(2) },
        9,
        2,
    );
}

#[test]
fn minhash32_optimised_banding() {
    run(SketchParams::minhash(64, 32, 2).expect("p"), IndexConfig::lsh(0.7), 2);
}

#[test]
fn bbit_and_oph() {
    run(SketchParams::bbit(64, 8, 3).expect("p"), IndexConfig::lsh(0.8), 3);
    run(SketchParams::bbit(64, 16, 5).expect("p"), IndexConfig::lsh(0.7), 5);
    run(
        SketchParams::bbit(128, 2, 6).expect("p"),
        IndexConfig::Lsh { threshold: 0.6, bands: Some(10), rows: Some(5) },
        6,
    );
    run(SketchParams::oph(64, 16, 4).expect("p"), IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: None }, 4);
}

/// Batches of more than a thousand new sketches get their band keys and sorted entries from
/// a job run beside the record writes: a batch of inserts, then one of upserts (replacing
/// stored rows), inserts upserted again in the same batch (added rows dropped before the
/// flush), deletes, and an insert of a sketch the index cannot band, which fails the whole
/// batch and leaves the index as it was.
#[test]
fn large_batches_keyed_beside_the_record_writes_stay_consistent() {
    let params = SketchParams::bbit(64, 8, 7).expect("p");
    let mut rng = Rng(11);
    let dir = tempfile::tempdir().expect("dir");
    let (db, c, sk) = indexed(dir.path(), params, IndexConfig::lsh(0.7));
    let sketches: Vec<Sketch> = family(&mut rng, 400, 5).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    let queries: Vec<Sketch> = family(&mut rng, 3, 3).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    let mut batch = Batch::new();
    for (i, s) in sketches.iter().enumerate().take(1500) {
        batch.insert(format!("k{i}"), s.clone());
    }
    c.apply(&batch).expect("insert");
    check(&c, &db, &queries, "large insert");

    let mut batch = Batch::new();
    for i in (0..1500).filter(|i| i % 4 != 0) {
        batch.upsert(format!("k{i}"), sketches[(i * 7 + 3) % sketches.len()].clone());
    }
    for i in 1500..sketches.len() {
        batch.insert(format!("k{i}"), sketches[i].clone());
        if i % 3 == 0 {
            batch.upsert(format!("k{i}"), sketches[i - 1000].clone());
        }
    }
    for i in (0..1500).step_by(8) {
        batch.delete(format!("k{i}"));
    }
    c.apply(&batch).expect("update");
    check(&c, &db, &queries, "large update");

    // An all-empty OPH sketch cannot be banded; in a b-bit collection it is refused before
    // that, as incompatible. Either way nothing of the batch lands.
    let before = c.len().expect("len");
    let mut batch = Batch::new();
    for (i, s) in sketches.iter().enumerate().take(1100) {
        batch.insert(format!("x{i}"), s.clone());
    }
    let other = Sketcher::new(SketchParams::bbit(64, 4, 7).expect("p")).expect("sk");
    batch.insert("bad", other.sketch(&TokenSet::from_unsorted((0..9).collect())).expect("sketch"));
    assert!(c.apply(&batch).is_err());
    assert_eq!(c.len().expect("len"), before);
    check(&c, &db, &queries, "after a failed large batch");
}

#[test]
fn huge_buckets_are_chunked_and_stay_consistent() {
    let params = SketchParams::minhash(16, 64, 5).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let mut c = db.create_collection("s", CollectionConfig::new(params).with_index(index)).expect("collection");
    let s = Sketcher::new(params).expect("sk").sketch(&TokenSet::from_unsorted((0..50).collect())).expect("sketch");
    // 5000 identical signatures: every band's bucket spans three chunks.
    let mut batch = Batch::new();
    for i in 0..3000 {
        batch.insert(format!("{i}"), s.clone());
    }
    c.apply(&batch).expect("insert");
    let mut batch = Batch::new();
    for i in 3000..5000 {
        batch.insert(format!("{i}"), s.clone());
    }
    c.apply(&batch).expect("insert");
    assert_eq!(testing::lsh_candidates(&c, &db, &s, 4).expect("c").len(), 5000);
    let mut batch = Batch::new();
    for i in (0..5000).step_by(3) {
        batch.delete(format!("{i}"));
    }
    c.apply(&batch).expect("delete");
    c.insert("last", &s).expect("insert");
    check(&c, &db, std::slice::from_ref(&s), "chunked");
    // One run after a rebuild: every live row is in the one bucket of each band.
    c.rebuild_index(index).expect("rebuild");
    check(&c, &db, std::slice::from_ref(&s), "chunked, rebuilt");
    let (_, mean) = testing::lsh_stats(&c, &db).expect("stats").expect("lsh");
    let live = c.len().expect("len") as f64;
    assert!((mean - live).abs() < 1e-9);
    let got: BTreeSet<u64> = testing::lsh_candidates(&c, &db, &s, 1).expect("c").into_iter().collect();
    assert_eq!(got.len() as f64, live);
}

#[test]
fn simhash_collections_cannot_have_lsh() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let p = SketchParams::simhash(64, 1).expect("p");
    assert!(db.create_collection("x", CollectionConfig::new(p).with_index(IndexConfig::lsh(0.5))).is_err());
    let p = SketchParams::minhash(16, 64, 1).expect("p");
    let bad = IndexConfig::Lsh { threshold: 0.5, bands: Some(8), rows: Some(4) };
    assert!(db.create_collection("y", CollectionConfig::new(p).with_index(bad)).is_err());
}

/// An index written by a build that kept a reverse map (`sketchdb.lsh_rows`, one entry of
/// band keys per live row) opens as it is: probes answer from its runs, verify checks the map
/// and names a damaged entry. The next write drops the map, whatever it holds (deletes take a
/// row's band keys from its stored signature), and records the index without it; from then on
/// an entry there is a stray verify reports.
#[test]
fn the_reverse_map_of_an_earlier_build_is_checked_then_dropped_by_the_next_write() {
    let dir = tempfile::tempdir().expect("dir");
    let params = SketchParams::minhash(32, 32, 1).expect("p");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(8), rows: Some(4) };
    let (db, c, sk) = indexed(dir.path(), params, index);
    let mut rng = Rng(77);
    let sets = family(&mut rng, 6, 4);
    for (i, set) in sets.iter().enumerate() {
        c.insert(format!("k{i}"), &sk.sketch(set).expect("sketch")).expect("insert");
    }
    let queries: Vec<Sketch> = sets.iter().take(3).map(|t| sk.sketch(t).expect("sketch")).collect();
    assert_eq!(testing::lsh_reverse_entries(&c, &db).expect("count"), 0, "this build keeps no reverse map");
    assert_eq!(testing::plant_lsh_reverse_map(&c, &db, true).expect("plant"), sets.len() as u64);
    assert_eq!(testing::lsh_keeps_reverse_map(&c, &db).expect("def"), Some(true));
    assert!(admin::verify(&db).expect("verify").is_ok());
    check(&c, &db, &queries, "earlier build's reverse map");
    // Damage: 8 band keys of 32 bits (4 bytes each), then a planted byte.
    let row = testing::extend_first_lsh_reverse_entry(&c, &db).expect("plant").expect("a reverse entry");
    let report = admin::verify(&db).expect("verify");
    assert!(
        report.problems.iter().any(|p| p.row == Some(row) && p.detail.contains("sketchdb.lsh_rows holds 33 bytes")),
        "{:?}",
        report.problems
    );
    // The next write (a delete) drops the map, damaged entry and all.
    assert!(c.delete("k1").expect("delete"));
    assert_eq!(testing::lsh_reverse_entries(&c, &db).expect("count"), 0);
    assert_eq!(testing::lsh_keeps_reverse_map(&c, &db).expect("def"), Some(false));
    assert!(admin::verify(&db).expect("verify").is_ok());
    check(&c, &db, &queries, "reverse map dropped");
    drop((c, db));
    let db = Database::open(dir.path().join("db")).expect("reopen");
    let c = db.collection("s").expect("collection");
    assert_eq!(testing::lsh_keeps_reverse_map(&c, &db).expect("def"), Some(false));
    c.delete("k2").expect("delete");
    check(&c, &db, &queries, "reopened, deleted");
    // Entries the definition does not own are strays.
    assert!(testing::plant_lsh_reverse_map(&c, &db, false).expect("plant") > 0);
    let report = admin::verify(&db).expect("verify");
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.detail.contains("sketchdb.lsh_rows: entry, but the index keeps no reverse map")),
        "{:?}",
        report.problems
    );
}

/// Many small batches: the new run of each batch that fills a tier is merged in the same
/// transaction (read from memory, never stored), and merges cascade up the tiers; the buckets stay exactly
/// the band keys of the stored rows after every batch, verify stays clean, and so do deletes
/// and upserts arriving in a batch that merges.
#[test]
fn merges_that_take_the_new_batch_keep_the_buckets_exact() {
    let params = SketchParams::bbit(64, 8, 9).expect("p");
    let mut rng = Rng(21);
    let dir = tempfile::tempdir().expect("dir");
    let (db, c, sk) = indexed(dir.path(), params, IndexConfig::lsh(0.8));
    let queries: Vec<Sketch> = family(&mut rng, 3, 2).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    let mut runs_seen = Vec::new();
    for b in 0..17 {
        let mut batch = Batch::new();
        for (i, t) in family(&mut rng, 4, 3).iter().enumerate() {
            batch.insert(format!("b{b}-{i}"), sk.sketch(t).expect("sketch"));
        }
        if b % 3 == 2 {
            batch.delete(format!("b{}-0", b - 1));
            batch.upsert(format!("b{}-1", b - 2), queries[0].clone());
        }
        c.apply(&batch).expect("batch");
        check(&c, &db, &queries, &format!("after batch {b}"));
        let report = admin::verify(&db).expect("verify");
        assert!(report.is_ok(), "after batch {b}: {:?}", report.problems);
        match c.stats().expect("stats").index {
            Some(IndexSummary::Lsh { runs, .. }) => runs_seen.push(runs),
            other => panic!("{other:?}"),
        }
    }
    // Runs grew and merged back (each time with the new batch's run never stored), at least
    // three times.
    assert!(runs_seen.windows(2).filter(|w| w[1] < w[0]).count() >= 3, "{runs_seen:?}");
}

/// Runs written before chunk layout 2 hold layout-1 values: they are probed, verified,
/// merged with layout-2 runs, have rows deleted from them and are compacted, with the
/// buckets exact throughout; what writes rewrite comes out in layout 2.
#[test]
fn chunks_of_layout_1_stay_readable_and_maintained() {
    let params = SketchParams::bbit(64, 8, 9).expect("p");
    let mut rng = Rng(33);
    let dir = tempfile::tempdir().expect("dir");
    let (db, c, sk) = indexed(dir.path(), params, IndexConfig::lsh(0.8));
    let queries: Vec<Sketch> = family(&mut rng, 3, 2).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    let layouts = |c: &Collection| -> BTreeSet<u8> {
        let (_, chunks) = testing::lsh_group_chunks(c, &db).expect("chunks").expect("lsh");
        chunks.iter().map(|ch| ch.layout).collect()
    };
    let batch_of = |b: usize, rng: &mut Rng| {
        let mut batch = Batch::new();
        // Groups of a few hundred entries over row ids of two bytes: layout 2 is shorter.
        for (i, t) in family(rng, 400, 3).iter().enumerate() {
            batch.insert(format!("b{b}-{i}"), sk.sketch(t).expect("sketch"));
        }
        batch
    };
    for b in 0..2 {
        c.apply(&batch_of(b, &mut rng)).expect("batch");
    }
    assert_eq!(layouts(&c), BTreeSet::from([2]), "this build writes layout 2");
    assert!(testing::rewrite_lsh_chunks_as_layout_1(&c, &db).expect("rewrite") > 0);
    assert_eq!(layouts(&c), BTreeSet::from([1]));
    check(&c, &db, &queries, "layout 1");
    assert!(admin::verify(&db).expect("verify").is_ok());
    // Deletes rewrite layout-1 groups; new runs merge with the old ones.
    for b in 2..6 {
        let mut batch = batch_of(b, &mut rng);
        batch.delete(format!("b{}-0", b - 2));
        batch.upsert(format!("b{}-1", b - 2), queries[0].clone());
        c.apply(&batch).expect("batch");
        check(&c, &db, &queries, &format!("after batch {b}"));
        let report = admin::verify(&db).expect("verify");
        assert!(report.is_ok(), "after batch {b}: {:?}", report.problems);
    }
    assert!(layouts(&c).contains(&2));
    db.compact().expect("compact");
    check(&c, &db, &queries, "after compaction");
    assert_eq!(layouts(&c), BTreeSet::from([2]), "compaction rewrites every run");
}
