//! A small database written by format version 1 is committed under `tests/fixtures`; this
//! build must keep opening and reading it exactly. A file with an unknown format version is
//! refused with a clear error.
//!
//! Regenerate (only when deliberately changing the fixture, never to make this test pass):
//! `cargo test --test format_v1_fixture -- --ignored write_fixture`

use std::path::{Path, PathBuf};

use sketchdb::{
    Batch, CollectionConfig, Database, Error, Sketch, SketchParams, Sketcher, StorageError, TokenSet, Tokenizer,
};

const FIXTURE: &str = "tests/fixtures/format_v1.sketchdb";

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)
}

fn collections() -> Vec<(&'static str, CollectionConfig)> {
    vec![
        ("minhash", CollectionConfig::new(SketchParams::minhash(16, 32, 11).unwrap())),
        (
            "oph",
            CollectionConfig::new(SketchParams::oph(70, 8, 12).unwrap())
                .with_tokenizer(Tokenizer::char_ngrams(3, 5).unwrap()),
        ),
        ("bbit", CollectionConfig::new(SketchParams::bbit(40, 4, 13).unwrap())),
        ("simhash", CollectionConfig::new(SketchParams::simhash(128, 14).unwrap())),
    ]
}

fn tokens(i: u64) -> TokenSet {
    TokenSet::from_unsorted((0..(3 + i % 11)).map(|t| t * 0x1234_5677 + i * 31).collect())
}

fn sketch(params: SketchParams, i: u64) -> Sketch {
    Sketcher::new(params).unwrap().sketch(&tokens(i)).unwrap()
}

/// What each collection holds after the writes below: (key, row id, token seed).
fn expected(name: &str) -> Vec<(String, u64, u64)> {
    // 300 inserts (rows 0..300), delete every 7th, upsert keys 0..10 with seed + 1000
    // (rows 300..310), then a text record for the oph collection (row 310).
    let mut v: Vec<(String, u64, u64)> =
        (10..300u64).filter(|i| i % 7 != 0).map(|i| (format!("{name}-{i:03}"), i, i)).collect();
    v.extend((0..10u64).map(|i| (format!("{name}-{i:03}"), 300 + i, i + 1000)));
    v.sort_by_key(|e| e.1);
    v
}

#[test]
#[ignore = "writes the fixture; run only to regenerate it deliberately"]
fn write_fixture() {
    let path = fixture_path();
    let _ = std::fs::remove_file(&path);
    let db = Database::create(&path).unwrap();
    for (name, config) in collections() {
        let c = db.create_collection(name, config).unwrap();
        let mut b = Batch::new();
        for i in 0..300u64 {
            b.insert(format!("{name}-{i:03}"), sketch(config.params, i));
        }
        c.apply(&b).unwrap();
        let mut b = Batch::new();
        for i in (0..300u64).filter(|i| i % 7 == 0) {
            b.delete(format!("{name}-{i:03}"));
        }
        for i in 0..10u64 {
            b.upsert(format!("{name}-{i:03}"), sketch(config.params, i + 1000));
        }
        c.apply(&b).unwrap();
    }
    db.collection("oph").unwrap().insert_text("text", "the quick brown fox").unwrap();
    db.create_collection("empty", CollectionConfig::new(SketchParams::minhash(8, 64, 1).unwrap())).unwrap();
    drop(db);
    println!("wrote {} ({} bytes)", path.display(), std::fs::metadata(&path).unwrap().len());
}

fn copy_fixture(dir: &Path) -> PathBuf {
    let copy = dir.join("fixture.sketchdb");
    std::fs::copy(fixture_path(), &copy).expect("the committed fixture");
    copy
}

#[test]
fn the_v1_fixture_opens_and_reads_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(copy_fixture(dir.path())).unwrap();
    let names: Vec<String> = db.collections().unwrap().iter().map(|c| c.name().to_string()).collect();
    assert_eq!(names, ["bbit", "empty", "minhash", "oph", "simhash"]);
    for (name, config) in collections() {
        let c = db.collection(name).unwrap();
        assert_eq!(c.config(), &config);
        let mut want = expected(name);
        if name == "oph" {
            let s =
                Sketcher::new(config.params).unwrap().sketch_text(&config.tokenizer, "the quick brown fox").unwrap();
            assert_eq!(c.get("text").unwrap().unwrap().sketch, s);
            want.push(("text".into(), 310, u64::MAX));
        }
        let got: Vec<_> = c.scan().unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), want.len(), "{name}");
        for (rec, (key, row, seed)) in got.iter().zip(&want) {
            assert_eq!((rec.key_str().unwrap(), rec.row_id), (key.as_str(), *row), "{name}");
            if *seed != u64::MAX {
                assert_eq!(rec.sketch, sketch(config.params, *seed), "{name} {key}");
            }
        }
        let stats = c.stats().unwrap();
        // every 7th of 0..300, plus the 8 upserted originals still live (0 and 7 were deleted)
        let deleted = 43 + 8;
        assert_eq!((stats.live, stats.deleted), (want.len() as u64, deleted), "{name}");
    }
    assert!(db.collection("empty").unwrap().is_empty().unwrap());
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn an_unknown_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_fixture(dir.path());
    {
        let db = Database::open(&path).unwrap();
        sketchdb::testing::rewrite_format_version(&db, 4).unwrap();
    }
    match Database::open(&path) {
        Err(Error::Storage(e @ StorageError::UnsupportedFormat { found: 4, supported: 3, .. })) => {
            let msg = e.to_string();
            assert!(msg.contains("format version 4") && msg.contains("versions 1 to 3"), "{msg}");
            assert!(msg.contains("fixture.sketchdb") && msg.contains("sketchdb.meta"), "{msg}");
        }
        other => panic!("expected UnsupportedFormat, got {other:?}"),
    }
}
