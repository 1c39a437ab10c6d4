//! A removal from an LSH index lists the row in `sketchdb.lsh_dead` and counts it in its
//! run instead of rewriting a group per band. Probes, the self-join and verify pass over
//! the listed rows' entries: candidates equal a brute-force band-key comparison over the
//! live rows, and dedup over the index equals dedup banded in memory. A run is rewritten
//! without them once an eighth of its rows are removed; compaction drops them all. verify
//! names a damaged listing.

mod common;

use std::collections::BTreeSet;

use common::Rng;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, IndexSummary, QueryKind, QueryOptions, Sketch,
    SketchParams, Sketcher, TokenSet, admin, testing,
    testing::{BandKeyScheme, lsh_rows},
};

const ROWS: usize = 400;

/// `n` sets: near-copies of 40 base sets, so that buckets are shared.
fn sets(rng: &mut Rng, n: usize) -> Vec<TokenSet> {
    let bases: Vec<Vec<u64>> = (0..40).map(|_| (0..rng.range(40, 160)).map(|_| rng.next_u64()).collect()).collect();
    (0..n)
        .map(|i| {
            let mut t: Vec<u64> = bases[i % bases.len()].iter().copied().filter(|_| rng.range(0, 99) < 92).collect();
            t.push(rng.next_u64());
            TokenSet::from_unsorted(t)
        })
        .collect()
}

fn live(c: &Collection) -> Vec<(u64, Sketch)> {
    c.scan().expect("scan").map(|r| r.expect("record")).map(|r| (r.row_id, r.sketch)).collect()
}

fn keys(scheme: &BandKeyScheme, s: &Sketch) -> Vec<u64> {
    scheme.keys(&lsh_rows(s).expect("rows")).expect("keys")
}

/// Candidates of some stored and some removed signatures equal the live rows sharing a band
/// key, and verify is clean.
fn check_exact(c: &Collection, db: &Database, probes: &[Sketch], stage: &str) {
    let scheme = testing::lsh_scheme(c, db).expect("scheme").expect("lsh");
    let rows: Vec<(u64, Vec<u64>)> = live(c).iter().map(|(r, s)| (*r, keys(&scheme, s))).collect();
    for q in probes {
        let qk = keys(&scheme, q);
        let want: Vec<u64> = rows.iter().filter(|(_, k)| k.iter().zip(&qk).any(|(a, b)| a == b)).map(|r| r.0).collect();
        let got = testing::lsh_candidates(c, db, q, scheme.params.bands).expect("candidates");
        assert_eq!(got, want, "{stage}");
    }
    let report = admin::verify(db).expect("verify");
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
}

/// The runs' removed-row counts, in run order, and the listed rows.
fn dead(c: &Collection, db: &Database) -> (Vec<(u32, u64)>, Vec<u64>) {
    let (runs, _) = testing::lsh_group_chunks(c, db).expect("chunks").expect("lsh");
    let listed = testing::lsh_removed_rows(c, db).expect("listed").into_iter().map(|(r, _)| r).collect();
    (runs.iter().map(|r| (r.id, r.dead)).collect(), listed)
}

/// Collection `name` of `params` under `index` in `db`, loaded in one batch with the
/// sketches of `n` sets (keys `k0`, `k1`, ...), which are returned.
fn loaded(
    db: &Database,
    name: &str,
    params: SketchParams,
    index: IndexConfig,
    n: usize,
    seed: u64,
) -> (Collection, Vec<Sketch>) {
    let c = db.create_collection(name, CollectionConfig::new(params).with_index(index)).expect("collection");
    let sk = Sketcher::new(params).expect("sketcher");
    let sketches: Vec<Sketch> = sets(&mut Rng(seed), n).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    let mut b = Batch::new();
    for (i, s) in sketches.iter().enumerate() {
        b.insert(format!("k{i}"), s.clone());
    }
    c.apply(&b).expect("load");
    (c, sketches)
}

#[test]
fn removed_rows_are_listed_until_their_run_is_rewritten() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db");
    let db = Database::create(&path).expect("create");
    let (c, sketches) =
        loaded(&db, "s", SketchParams::bbit(64, 8, 3).expect("params"), IndexConfig::lsh(0.6), ROWS, 17);
    let probes: Vec<Sketch> = sketches.iter().step_by(9).cloned().collect();
    let (runs, listed) = dead(&c, &db);
    assert_eq!((runs.len(), listed.len()), (1, 0));
    let (run0, _) = runs[0];
    let (infos, _) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    let entries = infos[0].entries;

    // 40 removals (a tenth of the run) in batches of 8: listed, counted, entries kept.
    for first in (0..40).step_by(8) {
        let mut b = Batch::new();
        for i in first..first + 8 {
            b.delete(format!("k{}", i * 10));
        }
        c.apply(&b).expect("delete");
    }
    let (runs, listed) = dead(&c, &db);
    assert_eq!(runs, vec![(run0, 40)], "the run is not rewritten below an eighth");
    assert_eq!(listed, (0..40).map(|i| i * 10).collect::<Vec<u64>>());
    let (infos, _) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(infos[0].entries, entries, "removed rows' entries stay");
    match c.stats().expect("stats").index {
        Some(IndexSummary::Lsh { removed_rows, runs, .. }) => assert_eq!((removed_rows, runs), (40, 1)),
        other => panic!("{other:?}"),
    }
    check_exact(&c, &db, &probes, "after 40 removals");

    // Kept across a reopen, without a rebuild.
    drop(c);
    drop(db);
    let db = Database::open(&path).expect("open");
    let c = db.collection("s").expect("collection");
    assert_eq!(dead(&c, &db), (vec![(run0, 40)], listed.clone()));
    check_exact(&c, &db, &probes, "after reopen");

    // An upsert removes the old row (listed) and adds the new one to a new run.
    c.upsert("k1", &sketches[2]).expect("upsert");
    let (runs, listed) = dead(&c, &db);
    assert_eq!(runs[0], (run0, 41));
    assert_eq!(runs.len(), 2);
    assert!(listed.contains(&1));
    check_exact(&c, &db, &probes, "after an upsert");

    // Removals that reach an eighth of the run's rows (50 of 400) rewrite it without them.
    let mut b = Batch::new();
    for i in 0..9 {
        b.delete(format!("k{}", i * 10 + 5));
    }
    c.apply(&b).expect("delete");
    let (runs, listed) = dead(&c, &db);
    assert_ne!(runs[0].0, run0, "rewritten under a new run number");
    assert!(runs.iter().all(|&(_, d)| d == 0) && listed.is_empty(), "{runs:?} {listed:?}");
    let (infos, _) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    let bands = testing::lsh_scheme(&c, &db).expect("scheme").expect("lsh").params.bands;
    assert_eq!(infos.iter().map(|r| r.entries).sum::<u64>(), live(&c).len() as u64 * u64::from(bands));
    check_exact(&c, &db, &probes, "after the rewrite");
}

/// Dedup over an index holding removed rows' entries equals dedup banded in memory over the
/// same live rows, and is unchanged by a compaction, which drops every listed row.
#[test]
fn dedup_and_compaction_pass_over_listed_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let params = SketchParams::bbit(128, 8, 5).expect("params");
    let t = 0.7;
    let index = IndexConfig::Lsh { threshold: t, bands: None, rows: None };
    let plain = db.create_collection("plain", CollectionConfig::new(params)).expect("plain");
    let indexed = db.create_collection("lsh", CollectionConfig::new(params).with_index(index)).expect("lsh");
    let sk = Sketcher::new(params).expect("sketcher");
    let sketches: Vec<Sketch> = sets(&mut Rng(29), 1200).iter().map(|t| sk.sketch(t).expect("sketch")).collect();
    for c in [&plain, &indexed] {
        let mut b = Batch::new();
        for (i, s) in sketches.iter().enumerate() {
            b.insert(format!("k{i}"), s.clone());
        }
        c.apply(&b).expect("load");
        // 100 removals: under an eighth of the run, so all stay listed.
        let mut b = Batch::new();
        for i in (0..1200).step_by(12) {
            b.delete(format!("k{i}"));
        }
        c.apply(&b).expect("delete");
    }
    assert_eq!(dead(&indexed, &db).1.len(), 100);
    let clusters = |c: &Collection| {
        let d = c.dedup(QueryKind::Threshold(t), QueryOptions::default()).expect("dedup");
        // Sorted within and across clusters (a compaction renumbers rows).
        let mut keys: Vec<Vec<Vec<u8>>> = d.clusters.iter().map(|c| c.keys.clone()).collect();
        keys.iter_mut().for_each(|k| k.sort());
        keys.sort();
        (d.pairs, keys, format!("{:?}", d.plan.map(|p| p.access)))
    };
    let (pairs, want, plan) = clusters(&plain);
    assert!(plan.contains("LshBanding"), "{plan}");
    assert!(pairs > 500, "the data must plant pairs: {pairs}");
    let (got_pairs, got, plan) = clusters(&indexed);
    assert!(plan.contains("LshProbe"), "{plan}");
    assert_eq!(got_pairs, pairs);
    assert!(got == want, "the clusters differ");
    let live_keys: BTreeSet<Vec<u8>> = indexed.scan().unwrap().map(|r| r.unwrap().key).collect();
    assert!(got.iter().flatten().all(|k| live_keys.contains(k)), "a removed row in a cluster");

    // Every page has removed rows: every live row moves, and the flush rewrites the run.
    db.compact().expect("compact");
    let (runs, listed) = dead(&indexed, &db);
    assert_eq!((runs.len(), listed.len()), (1, 0));
    assert_eq!(runs[0].1, 0);
    assert!(clusters(&indexed).1 == want, "the clusters differ after compaction");
    check_exact(&indexed, &db, &sketches[..40], "after compaction");
}

/// A compaction that moves few rows leaves a run with removed rows below the rewrite share;
/// the index is optimized in the compaction's own transaction, so no listed row outlives
/// its record.
#[test]
fn compaction_drops_listed_rows_in_its_own_transaction() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let (c, sketches) =
        loaded(&db, "s", SketchParams::bbit(128, 8, 5).expect("params"), IndexConfig::lsh(0.7), 4000, 5);
    let pages = testing::page_starts(&c, &db).expect("pages");
    assert!(pages.len() >= 8, "{pages:?}");
    // Five removals in the second page: its other rows move, and their old rows are listed
    // too, still under an eighth of the run.
    for row in pages[1]..pages[1] + 5 {
        c.delete(format!("k{row}")).expect("delete");
    }
    let s = db.compact().expect("compact");
    assert_eq!(s.pages_rewritten, 1);
    assert_eq!(s.indexes_optimized, 1, "{s:?}");
    let (runs, listed) = dead(&c, &db);
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].1, listed.len()), (0, 0));
    check_exact(&c, &db, &sketches[..60], "after compaction");
}

#[test]
fn verify_names_a_damaged_listing() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let (c, _) = loaded(&db, "s", SketchParams::bbit(64, 8, 3).expect("params"), IndexConfig::lsh(0.6), 200, 3);
    for i in [3, 50, 170] {
        c.delete(format!("k{i}")).expect("delete");
    }
    assert!(admin::verify(&db).expect("verify").is_ok());
    assert_eq!(testing::unlist_first_lsh_removed_row(&c, &db).expect("unlist"), Some(3));
    let report = admin::verify(&db).expect("verify");
    let details: Vec<&str> = report.problems.iter().map(|p| p.detail.as_str()).collect();
    assert!(details.iter().any(|d| d.contains("counts 3 removed rows; sketchdb.lsh_dead lists 2")), "{details:?}");
    assert!(details.iter().any(|d| d.contains("row 3 is neither a live row nor a listed removed row")), "{details:?}");
}
