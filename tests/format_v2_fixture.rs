//! A database written by file format version 2 (removed rows listed per page in the table
//! `sketchdb.row_dead`) is committed as `tests/fixtures/format_v2_row_dead.sketchdb`. This
//! build reads it exactly (read-only it stays version 2), and its first write that records a
//! removed row moves the version-2 entries into version 3's `sketchdb.row_dead64` and
//! rewrites the format record as version 3 in the same transaction; every answer stays the
//! model's through deletes, upserts, reopen, verify and compaction.
//!
//! The fixture was written by the build of commit d540818 (format version 2):
//! `cargo test --test format_v2_fixture -- --ignored write_fixture`. A later build writes
//! version 3, and the generator then fails instead of replacing the fixture.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sketchdb::plan::PlanKind;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, Query, QueryKind, QueryOptions, Sketch, SketchParams,
    Sketcher, TokenSet, admin, testing,
};

const FIXTURE: &str = "tests/fixtures/format_v2_row_dead.sketchdb";

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)
}

fn collections() -> Vec<(&'static str, CollectionConfig)> {
    vec![
        (
            "minhash",
            CollectionConfig::new(SketchParams::minhash(16, 32, 11).unwrap()).with_index(IndexConfig::lsh(0.5)),
        ),
        ("oph", CollectionConfig::new(SketchParams::oph(70, 8, 12).unwrap())),
        ("bbit", CollectionConfig::new(SketchParams::bbit(40, 4, 13).unwrap()).with_index(IndexConfig::lsh(0.5))),
        (
            "simhash",
            CollectionConfig::new(SketchParams::simhash(64, 14).unwrap()).with_index(IndexConfig::simhash_tables(4)),
        ),
    ]
}

/// Rows per collection in the fixture's first batch (several pages of each kind but SimHash).
const ROWS: u64 = 1500;

/// Near-copies of 20 bases, so threshold and Hamming queries have neighbours to find.
fn tokens(i: u64) -> TokenSet {
    let base = i % 20;
    let mut t: Vec<u64> = (0..40u64).map(|j| base * 1_000_003 + j * 7919).collect();
    t.push(0xABCD_0000 + i);
    t.push(0x1234_0000 + i * 3);
    TokenSet::from_unsorted(t)
}

fn sketch(params: SketchParams, seed: u64) -> Sketch {
    Sketcher::new(params).unwrap().sketch(&tokens(seed)).unwrap()
}

fn key(name: &str, i: u64) -> String {
    format!("{name}-{i:05}")
}

/// The writes the fixture's collections got, in batches: (key index, token seed) upserts or
/// deletes (seed `None`).
fn fixture_batches() -> Vec<Vec<(u64, Option<u64>)>> {
    let first: Vec<_> = (0..ROWS).map(|i| (i, Some(i))).collect();
    // Spread deletes and upserts: upserts append to the tail page (which folds its entries),
    // deletes of other pages' rows go to the side table.
    let mut second: Vec<_> = (0..ROWS).filter(|i| i % 5 == 0).map(|i| (i, None)).collect();
    second.extend((0..ROWS).filter(|i| i % 7 == 3).map(|i| (i, Some(i + 5000))));
    // Deletes only: every removed row goes to the side table.
    let third: Vec<_> = (0..ROWS).filter(|i| i % 11 == 1 && i % 5 != 0).map(|i| (i, None)).collect();
    vec![first, second, third]
}

/// The model: key index -> (write order, token seed).
type Model = BTreeMap<u64, (u64, u64)>;

fn apply(
    c: &Collection,
    name: &str,
    params: SketchParams,
    model: &mut Model,
    order: &mut u64,
    ops: &[(u64, Option<u64>)],
) {
    let mut b = Batch::new();
    for &(i, seed) in ops {
        match seed {
            Some(s) => {
                b.upsert(key(name, i), sketch(params, s));
                *order += 1;
                model.insert(i, (*order, s));
            }
            None => {
                b.delete(key(name, i));
                model.remove(&i);
            }
        }
    }
    c.apply(&b).unwrap();
}

fn fixture_model() -> (Model, u64) {
    let (mut model, mut order) = (Model::new(), 0);
    for ops in fixture_batches() {
        for (i, seed) in ops {
            match seed {
                Some(s) => {
                    order += 1;
                    model.insert(i, (order, s));
                }
                None => {
                    model.remove(&i);
                }
            }
        }
    }
    (model, order)
}

#[test]
#[ignore = "writes the fixture; run only to regenerate it deliberately, with a version-2 build"]
fn write_fixture() {
    let path = fixture_path();
    let _ = std::fs::remove_file(&path);
    let db = Database::create(&path).unwrap();
    for (name, config) in collections() {
        let c = db.create_collection(name, config).unwrap();
        let (mut model, mut order) = (Model::new(), 0);
        for ops in fixture_batches() {
            apply(&c, name, config.params, &mut model, &mut order, &ops);
        }
        assert!(!testing::row_dead_entries(&c, &db).unwrap().is_empty(), "{name}");
    }
    assert_eq!(testing::file_format_version(&db).unwrap(), 2, "only a version-2 build may write this fixture");
    drop(db);
    println!("wrote {} ({} bytes)", path.display(), std::fs::metadata(&path).unwrap().len());
}

/// The survivors of `model` in row order, as (key, sketch).
fn survivors(name: &str, params: SketchParams, model: &Model) -> Vec<(String, Sketch)> {
    let mut v: Vec<_> = model.iter().map(|(i, (o, s))| (*o, *i, *s)).collect();
    v.sort();
    v.into_iter().map(|(_, i, s)| (key(name, i), sketch(params, s))).collect()
}

/// Keys of the hits of `q` under plan `force`, sorted.
fn hit_keys(c: &Collection, sketch: &Sketch, kind: QueryKind, force: PlanKind) -> Vec<Vec<u8>> {
    let q =
        Query { sketch: sketch.clone(), kind, options: QueryOptions { force: Some(force), ..QueryOptions::default() } };
    let mut k: Vec<_> = c.query(&q).unwrap().hits.into_iter().map(|h| h.key).collect();
    k.sort();
    k
}

/// `c` holds exactly `model`'s survivors: scan, gets of every key ever written, counts, and
/// the index answers equal a full scan's (which reads the pages with the side table).
fn assert_model(c: &Collection, name: &str, params: SketchParams, model: &Model, stage: &str) {
    let want = survivors(name, params, model);
    let got: Vec<(String, Sketch)> =
        c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key_str().unwrap().to_string(), r.sketch)).collect();
    assert_eq!(got, want, "{stage}: {name} scan");
    assert_eq!(c.len().unwrap(), want.len() as u64, "{stage}: {name} len");
    for i in (0..ROWS).step_by(3) {
        let g = c.get(key(name, i)).unwrap().map(|r| r.sketch);
        assert_eq!(g, model.get(&i).map(|(_, s)| sketch(params, *s)), "{stage}: {name} get {i}");
    }
    let (kind, index) = match params.kind() {
        sketchdb::SketchKind::SimHash => (QueryKind::Hamming(4), Some(PlanKind::SimhashProbe)),
        _ if name == "oph" => (QueryKind::Threshold(0.5), None),
        _ => (QueryKind::Threshold(0.5), Some(PlanKind::LshProbe)),
    };
    for seed in [0u64, 3, 7, 5003, 5010, 13] {
        let probe = sketch(params, seed);
        let scan = hit_keys(c, &probe, kind, PlanKind::FullScan);
        let live: Vec<Vec<u8>> = want.iter().map(|(k, _)| k.as_bytes().to_vec()).collect();
        assert!(scan.iter().all(|k| live.contains(k)), "{stage}: {name} scan hits are live");
        if let Some(plan) = index {
            assert_eq!(hit_keys(c, &probe, kind, plan), scan, "{stage}: {name} {plan:?} probe {seed}");
        }
    }
}

fn assert_verified(db: &Database, stage: &str) {
    let report = admin::verify(db).unwrap();
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
}

#[test]
fn the_v2_fixture_reads_exactly_and_is_upgraded_to_version_3_by_its_first_removal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.sketchdb");
    std::fs::copy(fixture_path(), &path).expect("the committed fixture");
    let (fixture, order) = fixture_model();
    {
        let db = Database::open_read_only(&path).unwrap();
        assert_eq!(testing::file_format_version(&db).unwrap(), 2);
        for (name, config) in collections() {
            let c = db.collection(name).unwrap();
            assert!(!testing::legacy_row_dead_entries(&c, &db).unwrap().is_empty(), "{name}: v2 entries");
            assert_model(&c, name, config.params, &fixture, "read-only v2");
        }
        assert_verified(&db, "read-only v2");
    }
    let db = Database::open(&path).unwrap();
    assert_eq!(testing::file_format_version(&db).unwrap(), 2, "opening changes nothing");
    let mut models = vec![];
    for (name, config) in collections() {
        let c = db.collection(name).unwrap();
        let (mut model, mut order) = (fixture.clone(), order);
        // Deletes of rows in pages with v2 entries, a delete of a key already gone, upserts.
        let mut ops: Vec<(u64, Option<u64>)> = (0..ROWS).filter(|i| i % 13 == 2).map(|i| (i, None)).collect();
        ops.push((0, None));
        ops.extend((0..ROWS).filter(|i| i % 17 == 4).map(|i| (i, Some(i + 9000))));
        apply(&c, name, config.params, &mut model, &mut order, &ops);
        assert_eq!(testing::file_format_version(&db).unwrap(), 3, "{name}: the first removal upgrades the file");
        assert!(testing::legacy_row_dead_entries(&c, &db).unwrap().is_empty(), "{name}: v2 entries moved");
        // The batch appends to the tail page, which folds its rows in: a collection of one
        // page (SimHash's) keeps no entry.
        let pages = testing::page_starts(&c, &db).unwrap().len();
        assert_eq!(testing::row_dead_entries(&c, &db).unwrap().is_empty(), pages == 1, "{name}: v3 entries");
        assert_model(&c, name, config.params, &model, "after the upgrading write");
        models.push(model);
    }
    assert_verified(&db, "version 3");
    drop(db);
    let db = Database::open(&path).unwrap();
    for ((name, config), model) in collections().into_iter().zip(&models) {
        assert_model(&db.collection(name).unwrap(), name, config.params, model, "reopened");
    }
    db.compact().unwrap();
    for ((name, config), model) in collections().into_iter().zip(&models) {
        let c = db.collection(name).unwrap();
        assert!(testing::row_dead_entries(&c, &db).unwrap().is_empty(), "{name}: compaction folds every entry");
        // Compaction moves rows: compare as sets of (key, sketch).
        let mut got: Vec<(String, Sketch)> =
            c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key_str().unwrap().to_string(), r.sketch)).collect();
        let mut want = survivors(name, config.params, model);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "{name} after compaction");
    }
    assert_verified(&db, "compacted");
}
