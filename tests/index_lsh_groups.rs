//! LSH buckets are stored as runs, each packed in groups (top `group_bits` bits of the band
//! key, chosen per run for its size): a group over [`GROUP_CHUNK_ENTRIES`] entries is split
//! over consecutive chunks of bounded size, shrinks back when rows go, and candidates stay
//! exact throughout. Many small write transactions leave few runs, merged by size, with
//! candidates equal to a brute-force band comparison at every step.

mod common;

use std::collections::BTreeMap;

use common::Rng;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, Sketch, SketchParams, Sketcher, TokenSet, admin,
    testing, testing::lsh_rows,
};

const GROUP_CHUNK_ENTRIES: usize = 1024;

/// A new database `db` in `dir` with collection `s` of `params` and `index`, and its sketcher.
fn indexed(dir: &std::path::Path, params: SketchParams, index: IndexConfig) -> (Database, Collection, Sketcher) {
    let db = Database::create(dir.join("db")).expect("create");
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(index)).expect("collection");
    (db, c, Sketcher::new(params).expect("sk"))
}

/// (band, group) -> chunk sizes, checking chunk numbers run 0.. and sizes are bounded (the
/// collection has one run).
fn groups(chunks: &[testing::LshChunk]) -> BTreeMap<(u32, u64), Vec<usize>> {
    let mut out: BTreeMap<(u32, u64), Vec<usize>> = BTreeMap::new();
    for &testing::LshChunk { band, group, chunk, entries: n, .. } in chunks {
        let sizes = out.entry((band, group)).or_default();
        assert_eq!(chunk as usize, sizes.len(), "band {band} group {group:#x}: chunk numbers have a gap");
        assert!((1..=GROUP_CHUNK_ENTRIES).contains(&n), "band {band} group {group:#x} chunk {chunk}: {n} entries");
        sizes.push(n);
    }
    out
}

#[test]
fn hot_groups_split_into_bounded_chunks_and_shrink_back() {
    let params = SketchParams::minhash(16, 64, 7).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let (db, c, sk) = indexed(dir.path(), params, index);
    let hot = sk.sketch(&TokenSet::from_unsorted((0..40).collect())).expect("sketch");
    // 2600 identical signatures (one hot bucket per band) plus 300 distinct ones.
    let mut batch = Batch::new();
    for i in 0..2600 {
        batch.insert(format!("h{i}"), hot.clone());
    }
    for i in 0..300u64 {
        let s = sk.sketch(&TokenSet::from_unsorted((1000 * i + 100..1000 * i + 140).collect())).expect("sketch");
        batch.insert(format!("d{i}"), s);
    }
    c.apply(&batch).expect("insert");
    let (runs, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(runs.len(), 1, "one write, one run");
    assert_eq!(runs[0].group_bits, 5, "2900 entries per band / 128 per group -> 2^5 groups");
    let g = groups(&chunks);
    for band in 0..4 {
        let biggest =
            g.iter().filter(|(k, _)| k.0 == band).map(|(_, v)| v.clone()).max_by_key(|v| v.iter().sum::<usize>());
        let biggest = biggest.expect("band has groups");
        assert_eq!(biggest.len(), 3, "band {band}: {biggest:?}");
        let total: usize = biggest.iter().sum();
        assert!(total >= 2600);
        // Spread evenly, not 1024 + 1024 + rest.
        assert!(biggest.iter().all(|&n| n > GROUP_CHUNK_ENTRIES / 2), "{biggest:?}");
    }
    let total: usize = g.values().flatten().sum();
    assert_eq!(total, 2900 * 4);
    assert_eq!(testing::lsh_candidates(&c, &db, &hot, 4).expect("c").len(), 2600);
    assert!(admin::verify(&db).expect("verify").is_ok());

    // Remove most hot rows: the hot groups shrink to one chunk, the others' chunks go.
    let mut batch = Batch::new();
    for i in 100..2600 {
        batch.delete(format!("h{i}"));
    }
    c.apply(&batch).expect("delete");
    let (_, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    let g = groups(&chunks);
    assert!(g.values().all(|v| v.len() == 1), "every group fits one chunk again");
    assert_eq!(g.values().flatten().sum::<usize>(), 400 * 4);
    assert_eq!(testing::lsh_candidates(&c, &db, &hot, 4).expect("c").len(), 100);
    let (_, mean) = testing::lsh_stats(&c, &db).expect("stats").expect("lsh");
    assert!(mean > 20.0, "sum(s^2)/sum(s) counts exact band keys, not groups: {mean}");
    assert!(admin::verify(&db).expect("verify").is_ok());

    // Everything goes: no group is left.
    let mut batch = Batch::new();
    for i in 0..100 {
        batch.delete(format!("h{i}"));
    }
    for i in 0..300 {
        batch.delete(format!("d{i}"));
    }
    c.apply(&batch).expect("delete all");
    let (runs, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert!(chunks.is_empty());
    assert!(runs.is_empty(), "an emptied run is dropped: {runs:?}");
    assert_eq!(testing::lsh_stats(&c, &db).expect("stats").expect("lsh").1, 0.0);
    assert!(admin::verify(&db).expect("verify").is_ok());
}

#[test]
fn rebuild_chooses_group_bits_for_the_row_count() {
    let params = SketchParams::minhash(8, 64, 9).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(2) };
    let (db, mut c, sk) = indexed(dir.path(), params, index);
    let mut batch = Batch::new();
    for i in 0..140_000u64 {
        let s = sk.sketch(&TokenSet::from_unsorted(vec![i, i + 1_000_000])).expect("sketch");
        batch.insert(format!("{i}"), s);
    }
    c.apply(&batch).expect("insert");
    c.rebuild_index(index).expect("rebuild");
    let (runs, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].group_bits, 11, "140k rows / 128 per group -> 2^11 groups");
    groups(&chunks);
    assert!(admin::verify(&db).expect("verify").is_ok());
}

/// Candidates of `probes` in every prefix of bands equal a brute-force band-key comparison
/// over the stored sketches; the runs are in the shape writes leave them
/// ([`common::lsh_runs_settled`]); verify is clean. Returns the run count.
fn check_runs(c: &Collection, db: &Database, probes: &[Sketch], stage: &str) -> usize {
    let scheme = testing::lsh_scheme(c, db).expect("scheme").expect("lsh");
    let keys = |s: &Sketch| scheme.keys(&lsh_rows(s).expect("rows")).expect("keys");
    let rows: Vec<(u64, Vec<u64>)> =
        c.scan().expect("scan").map(|r| r.expect("record")).map(|r| (r.row_id, keys(&r.sketch))).collect();
    for q in probes {
        let qk = keys(q);
        for bands in 1..=scheme.params.bands {
            let want: Vec<u64> =
                rows.iter().filter(|(_, k)| (0..bands as usize).any(|i| k[i] == qk[i])).map(|(r, _)| *r).collect();
            assert_eq!(testing::lsh_candidates(c, db, q, bands).expect("candidates"), want, "{stage}: bands {bands}");
        }
    }
    let (runs, chunks) = testing::lsh_group_chunks(c, db).expect("chunks").expect("lsh");
    if let Err(e) = common::lsh_runs_settled(&runs) {
        panic!("{stage}: {e}");
    }
    for (row, _) in &rows {
        assert!(runs.iter().any(|r| r.first_row <= *row && *row < r.end_row), "{stage}: row {row} in no run");
    }
    assert!(chunks.iter().all(|ch| runs.iter().any(|r| r.id == ch.run)), "{stage}: a chunk of an unlisted run");
    let report = admin::verify(db).expect("verify");
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
    runs.len()
}

#[test]
fn many_small_writes_leave_few_runs_and_exact_candidates() {
    let params = SketchParams::minhash(16, 64, 3).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let (db, c, sk) = indexed(dir.path(), params, index);
    let path = dir.path().join("db");
    let mut rng = Rng(11);
    // Sets drawn from 30 families of near-duplicates, so buckets are shared across runs.
    let families: Vec<Vec<u64>> = (0..30).map(|_| (0..24).map(|_| rng.next_u64()).collect()).collect();
    let draw = |rng: &mut Rng| {
        let mut t = families[rng.range(0, 29) as usize].clone();
        for _ in 0..rng.range(0, 3) {
            let i = rng.range(0, t.len() as u64 - 1) as usize;
            t[i] = rng.next_u64();
        }
        sk.sketch(&TokenSet::from_unsorted(t)).expect("sketch")
    };
    let probes: Vec<Sketch> = (0..12).map(|_| draw(&mut rng)).collect();
    let (mut live, mut next_key, mut max_runs) = (Vec::<u64>::new(), 0u64, 0usize);
    for step in 0..150 {
        let mut batch = Batch::new();
        for _ in 0..rng.range(1, 40) {
            batch.insert(format!("k{next_key}"), draw(&mut rng));
            live.push(next_key);
            next_key += 1;
        }
        // Deletes and upserts of older rows: they reach runs written long before.
        for _ in 0..rng.range(0, 6) {
            if live.len() > 50 {
                let i = rng.range(0, live.len() as u64 - 41) as usize;
                if rng.range(0, 1) == 0 {
                    batch.delete(format!("k{}", live.swap_remove(i)));
                } else {
                    batch.upsert(format!("k{}", live[i]), draw(&mut rng));
                }
            }
        }
        c.apply(&batch).expect("apply");
        if step % 15 == 14 {
            max_runs = max_runs.max(check_runs(&c, &db, &probes, &format!("step {step}")));
        }
    }
    // About 3,000 rows in 150 writes of about 20: runs merge in size tiers of 4, so a
    // handful at most (one per write would be 150).
    assert!((2..=10).contains(&max_runs), "{max_runs} runs");
    drop(c);
    drop(db);
    let db = Database::open(&path).expect("reopen");
    let mut c = db.collection("s").expect("collection");
    check_runs(&c, &db, &probes, "reopened");
    // Every page has holes: compaction moves every live row, so they form one new run.
    db.compact().expect("compact");
    assert_eq!(check_runs(&c, &db, &probes, "compacted"), 1);
    c.rebuild_index(index).expect("rebuild");
    assert_eq!(check_runs(&c, &db, &probes, "rebuilt"), 1);
    // A chunk removed behind the index's back is found.
    assert!(testing::drop_first_index_bucket(&c, &db).expect("plant"));
    let report = admin::verify(&db).expect("verify");
    assert!(report.problems.iter().any(|p| p.detail.contains("sketchdb.lsh_runs")), "{:?}", report.problems);
}

/// Without deleted rows compaction moves nothing, but it still merges the index's runs.
#[test]
fn compaction_merges_runs_of_an_insert_only_index() {
    let params = SketchParams::minhash(16, 64, 4).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let (db, c, sk) = indexed(dir.path(), params, index);
    let sketch = |i: u64| {
        sk.sketch(&TokenSet::from_unsorted((0..30).map(|t| (i % 40) * 1000 + t + i % 3).collect())).expect("sketch")
    };
    for b in 0..40u64 {
        let mut batch = Batch::new();
        for i in 0..(5 + b % 7) {
            let n = b * 100 + i;
            batch.insert(format!("k{n}"), sketch(n));
        }
        c.apply(&batch).expect("insert");
    }
    let probes: Vec<Sketch> = (0..8).map(|i| sketch(i * 7)).collect();
    assert!(check_runs(&c, &db, &probes, "loaded") > 1);
    let summary = db.compact().expect("compact");
    assert_eq!((summary.rows_moved, summary.indexes_optimized), (0, 1));
    assert_eq!(check_runs(&c, &db, &probes, "compacted"), 1);
    assert_eq!(db.compact().expect("again").indexes_optimized, 0, "one run: nothing to merge");
}

/// An LSH index in the single-run layout of earlier builds is named and refused by queries,
/// writes and verify, never misread; the records stay readable, and a rebuild replaces it
/// (clearing the old layout's values).
#[test]
fn an_index_in_the_earlier_layout_is_refused_until_rebuilt() {
    let params = SketchParams::minhash(16, 64, 5).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let (db, mut c, sk) = indexed(dir.path(), params, index);
    let s = |i: u64| sk.sketch(&TokenSet::from_unsorted((i * 100..i * 100 + 30).collect())).expect("sketch");
    let mut batch = Batch::new();
    for i in 0..20 {
        batch.insert(format!("k{i}"), s(i));
    }
    c.apply(&batch).expect("insert");
    assert!(testing::plant_legacy_lsh_index(&c, &db).expect("plant"));
    let says_rebuild = |e: String| assert!(e.contains("earlier build") && e.contains("rebuild"), "{e}");
    says_rebuild(testing::lsh_candidates(&c, &db, &s(3), 4).expect_err("probe").to_string());
    says_rebuild(c.insert("new", &s(99)).expect_err("write").to_string());
    let report = admin::verify(&db).expect("verify");
    assert!(report.problems.iter().any(|p| p.detail.contains("earlier build")), "{:?}", report.problems);
    assert_eq!(c.len().expect("len"), 20, "records read as before");
    assert!(c.get("k3").expect("get").is_some());
    c.rebuild_index(index).expect("rebuild");
    assert!(!testing::legacy_lsh_values(&c, &db).expect("legacy"), "the old layout's values are cleared");
    assert_eq!(check_runs(&c, &db, &[s(3)], "rebuilt"), 1);
    c.insert("new", &s(99)).expect("write after the rebuild");
}
