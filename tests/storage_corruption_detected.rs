//! A flipped byte in a page is caught by verify and by every read of that page (an error
//! naming the collection and page), never a panic or a wrong signature.

use sketchdb::{Batch, Collection, CollectionConfig, Database, Error, SketchParams, StorageError, TokenSet};

fn fill(c: &Collection, n: u64) {
    let mut b = Batch::new();
    for i in 0..n {
        let t = TokenSet::from_unsorted((0..25).map(|x| x * 7_777_777 + i).collect());
        b.insert(format!("key-{i:05}"), c.sketcher().sketch(&t).unwrap());
    }
    c.apply(&b).unwrap();
}

fn assert_corrupt_page(r: Result<impl std::fmt::Debug, Error>, page: u64) {
    match r {
        Err(Error::Storage(StorageError::CorruptPage { collection, page: p, .. })) => {
            assert_eq!((collection.as_str(), p), ("docs", page));
        }
        other => panic!("expected CorruptPage(docs, {page}), got {other:?}"),
    }
}

#[test]
fn flipped_bytes_in_a_page_value_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let c = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(128, 32, 9).unwrap())).unwrap();
    let other = db.create_collection("other", CollectionConfig::new(SketchParams::simhash(64, 9).unwrap())).unwrap();
    fill(&c, 1000);
    other.insert_text("x", "some words here").unwrap();
    let pages = sketchdb::testing::page_starts(&c, &db).unwrap();
    assert!(pages.len() >= 4, "{pages:?}");
    let page = pages[2];
    let good = sketchdb::testing::read_raw_page(&c, &db, page).unwrap().unwrap();
    let key_in_page = format!("key-{:05}", page + 3);
    let key_elsewhere = format!("key-{:05}", pages[1]);
    // Header (row count), tombstone bitmap, a value column, the cardinality column, the key
    // heap, the last byte.
    for (n, at) in [25, 48, 100, good.len() / 2, good.len() - 20, good.len() - 1].into_iter().enumerate() {
        let mut bad = good.clone();
        bad[at] ^= 0x04;
        sketchdb::testing::write_raw_page(&c, &db, page, &bad).unwrap();

        assert_corrupt_page(c.get(&key_in_page), page);
        assert_corrupt_page(c.get_row(page + 1), page);
        assert_corrupt_page(c.for_each_page(|_| true), page);
        let scanned: Vec<_> = c.scan().unwrap().collect();
        assert_eq!(scanned.iter().filter(|r| r.is_err()).count(), 1);
        assert_corrupt_page(scanned.into_iter().find(|r| r.is_err()).unwrap(), page);
        // A delete reads no page (its row is listed beside the page), so the damage does not
        // stop it; compaction, which would rewrite the page, is refused and writes nothing.
        let gone = format!("key-{:05}", page + 10 + n as u64);
        assert!(c.delete(&gone).unwrap());
        assert!(c.get(&gone).unwrap().is_none());
        assert_corrupt_page(db.compact(), page);
        // Other pages and collections are unaffected.
        assert!(c.get(&key_elsewhere).unwrap().is_some());
        assert!(other.get("x").unwrap().is_some());

        let report = sketchdb::admin::verify(&db).unwrap();
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        let p = &report.problems[0];
        assert_eq!((p.collection.as_deref(), p.page), (Some("docs"), Some(page)), "{p}");
        assert!(report.engine_integrity_ok);
    }
    sketchdb::testing::write_raw_page(&c, &db, page, &good).unwrap();
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
    assert!(c.get(&key_in_page).unwrap().is_some());
}

#[test]
fn a_flipped_byte_in_the_file_is_caught_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (page, good) = {
        let db = Database::create(&path).unwrap();
        let c =
            db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(128, 32, 9).unwrap())).unwrap();
        fill(&c, 1000);
        let page = sketchdb::testing::page_starts(&c, &db).unwrap()[3];
        (page, sketchdb::testing::read_raw_page(&c, &db, page).unwrap().unwrap())
    };
    // Find the page's bytes in the file and flip one in its value columns.
    let mut file = std::fs::read(&path).unwrap();
    let needle = &good[..200];
    let at = file.windows(needle.len()).position(|w| w == needle).expect("page bytes in the file");
    file[at + 1000] ^= 0x01;
    std::fs::write(&path, &file).unwrap();

    let db = Database::open(&path).unwrap();
    let c = db.collection("docs").unwrap();
    for i in page..page + 20 {
        assert_corrupt_page(c.get(format!("key-{i:05}")), page);
    }
    assert!(c.get("key-00000").unwrap().is_some());
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(
        report.problems.iter().any(|p| p.collection.as_deref() == Some("docs") && p.page == Some(page)),
        "{:?}",
        report.problems
    );
}
