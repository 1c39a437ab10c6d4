//! Bad input at the library API: malformed, truncated, foreign and future-version files,
//! bad paths, bad parameters, bad keys, incompatible sketches. Each gives a typed error with
//! a message that says what and where; none panics.

use sketchdb::{
    Batch, CollectionConfig, Database, Error, Query, SketchError, SketchParams, Sketcher, StorageError, TokenSet,
};

fn small_db(path: &std::path::Path) {
    let db = Database::create(path).unwrap();
    let c = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(32, 32, 1).unwrap())).unwrap();
    let mut b = Batch::new();
    for i in 0..200u64 {
        b.insert(format!("k{i}"), c.sketcher().sketch(&TokenSet::from_unsorted(vec![i, i + 1, i + 2])).unwrap());
    }
    c.apply(&b).unwrap();
}

#[test]
fn truncated_files_are_refused_or_read_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    small_db(&path);
    let full = std::fs::read(&path).unwrap();
    let mut refused = 0;
    for len in
        [0, 1, 8, 63, 64, 511, 512, 4095, 4096, 4097, full.len() / 3, full.len() / 2, full.len() - 4096, full.len() - 1]
    {
        let p = dir.path().join(format!("t{len}"));
        std::fs::write(&p, &full[..len]).unwrap();
        match Database::open(&p) {
            Err(e) => {
                refused += 1;
                let msg = e.to_string();
                assert!(msg.contains(&p.display().to_string()) || msg.contains("storage engine"), "{msg}");
            }
            Ok(db) => {
                // What opens must read consistently or report damage.
                let _ = sketchdb::admin::verify(&db);
                if let Ok(c) = db.collection("docs") {
                    for r in c.scan().into_iter().flatten() {
                        let _ = r;
                    }
                }
            }
        }
    }
    assert!(refused >= 10, "{refused}");
}

#[test]
fn foreign_and_future_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    // A text file, a file of zeros, a PNG-like header.
    for (name, bytes) in [
        ("text", b"hello, this is not a database\n".repeat(200)),
        ("zeros", vec![0u8; 64 * 1024]),
        ("png", [b"\x89PNG\r\n\x1a\n".to_vec(), vec![7u8; 5000]].concat()),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        match Database::open(&p) {
            Err(Error::Storage(StorageError::NotSketchdb { path, reason })) => {
                assert_eq!(path, p);
                assert!(!reason.is_empty());
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // A redb database that is not a sketchdb one.
    let p = dir.path().join("plain-redb");
    {
        let db = redb::Database::create(&p).unwrap();
        let t = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("other");
            t.open_table(def).unwrap().insert("x", &1).unwrap();
        }
        t.commit().unwrap();
    }
    let e = Database::open(&p).unwrap_err();
    assert!(matches!(e, Error::Storage(StorageError::NotSketchdb { .. })), "{e:?}");
    assert!(e.to_string().contains("not a sketchdb database"), "{e}");
    // A newer format version.
    let p = dir.path().join("future");
    {
        let db = Database::create(&p).unwrap();
        sketchdb::testing::rewrite_format_version(&db, 9).unwrap();
    }
    match Database::open(&p) {
        Err(e @ Error::Storage(StorageError::UnsupportedFormat { found: 9, supported: 3, .. })) => {
            assert!(e.to_string().contains("version 9"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_paths_give_io_errors_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing_dir = dir.path().join("no/such/dir/db");
    // Regression: this said "storage engine error during create: I/O error: No such file or
    // directory", without the path.
    let e = Database::create(&missing_dir).unwrap_err();
    assert!(matches!(e, Error::Storage(StorageError::Io { op: "create", .. })), "{e:?}");
    assert!(e.to_string().contains("no/such/dir"), "{e}");
    let e = Database::open(dir.path()).unwrap_err();
    assert!(e.to_string().contains(&dir.path().display().to_string()), "{e}");
    let existing = dir.path().join("exists");
    std::fs::write(&existing, b"x").unwrap();
    assert!(matches!(Database::create(&existing), Err(Error::Storage(StorageError::AlreadyExists { .. }))));
    assert_eq!(std::fs::read(&existing).unwrap(), b"x", "create must not touch an existing file");
}

#[test]
fn bad_parameters_and_sketches_are_typed_errors() {
    for r in [
        SketchParams::minhash(0, 32, 1),
        SketchParams::minhash(5000, 32, 1),
        SketchParams::minhash(16, 16, 1),
        SketchParams::bbit(16, 3, 1),
        SketchParams::oph(16, 64, 1),
        SketchParams::simhash(32, 1),
        SketchParams::bbit_with_universe(16, 2, 0, 1),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, SketchError::InvalidParam { .. }), "{e:?}");
        assert!(!e.to_string().is_empty());
    }
    let s = Sketcher::new(SketchParams::minhash(16, 32, 1).unwrap()).unwrap();
    assert!(s.sketch(&TokenSet::from_unsorted(vec![])).is_err());
    assert!(TokenSet::from_sorted(vec![3, 1]).is_err());
    assert!(sketchdb::MinHash::from_parts(SketchParams::minhash(16, 32, 1).unwrap(), vec![1; 15], 3).is_err());
    assert!(sketchdb::MinHash::from_parts(SketchParams::minhash(16, 32, 1).unwrap(), vec![u64::MAX; 16], 3).is_err());

    let db = sketchdb::testing::create_on(Database::builder(), sketchdb::testing::MemoryBackend::new()).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::simhash(64, 1).unwrap())).unwrap();
    // Text with no words (SimHash of nothing), binary keys in errors shown as hex.
    let text_err = c.insert_text("k", "   ... !!! ");
    assert!(text_err.is_err(), "{text_err:?}");
    let key = [0xffu8, 0xfe, 0x00];
    c.insert(key, &c.sketcher().sketch(&TokenSet::from_unsorted(vec![1])).unwrap()).unwrap();
    let e = c.insert(key, &c.sketcher().sketch(&TokenSet::from_unsorted(vec![2])).unwrap()).unwrap_err();
    assert!(e.to_string().contains("0xfffe00"), "{e}");
    // A batch with one bad write applies nothing, whatever its size.
    let mut b = Batch::new();
    for i in 0..5000u64 {
        b.insert(format!("x{i}"), c.sketcher().sketch(&TokenSet::from_unsorted(vec![i])).unwrap());
    }
    b.insert(vec![b'y'; sketchdb::MAX_KEY_LEN + 1], c.sketcher().sketch(&TokenSet::from_unsorted(vec![9])).unwrap());
    assert!(matches!(c.apply(&b), Err(Error::Storage(StorageError::KeyTooLong { .. }))));
    assert_eq!(c.len().unwrap(), 1);
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
    // A question that does not fit is refused by EXPLAIN as by the query itself.
    let probe = c.sketch_of(key).unwrap();
    for q in [Query::threshold(probe.clone(), f64::NAN), Query::threshold(probe.clone(), 1.5)] {
        assert!(matches!(c.query(&q), Err(Error::Query(_))), "{:?}", c.query(&q));
        assert!(matches!(c.explain(&q, false), Err(Error::Query(_))), "{:?}", c.explain(&q, false));
    }
}

/// The OPH estimator's public inputs: impossible counts and bad levels are typed errors
/// (they used to underflow `bins - n_emp` or reach the incomplete beta with NaN).
#[test]
fn oph_estimator_refuses_impossible_counts_and_levels() {
    use sketchdb::estimate::{OphCounts, oph_estimate};
    let ok = OphCounts { bins: 128, n_emp: 8, n_mat: 60, both: 100 };
    assert!(oph_estimate(ok, 8, 0, 0, 0.95).is_ok());
    for bad in [
        OphCounts { bins: 128, n_emp: 200, n_mat: 0, both: 0 },
        OphCounts { bins: 128, n_emp: 8, n_mat: 0, both: 121 },
        OphCounts { bins: 128, n_emp: 8, n_mat: 101, both: 100 },
    ] {
        assert!(matches!(oph_estimate(bad, 8, 0, 0, 0.95), Err(SketchError::InvalidParam { .. })), "{bad:?}");
    }
    for level in [f64::NAN, 0.0, 1.0, 2.0] {
        assert!(matches!(oph_estimate(ok, 8, 0, 0, level), Err(SketchError::InvalidParam { .. })), "{level}");
    }
}
