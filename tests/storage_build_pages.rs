//! Large insert batches (thousands of rows, the shape of a bulk load) must write exactly the
//! rows that one-insert batches write: the same keys, row ids and sketches, page after page
//! (continuing the collection's partly filled last page, keys of many lengths so pages end
//! at both the row capacity and the byte bound); and a large batch failing in the middle (a
//! duplicate key, an empty key) writes nothing.

use sketchdb::{Batch, Collection, CollectionConfig, Database, Error, Sketch, SketchParams, StorageError, TokenSet};

fn sketch(c: &Collection, seed: u64) -> Sketch {
    c.sketcher().sketch(&TokenSet::from_unsorted(vec![seed, seed * 3 + 1, seed * 7 + 3, seed ^ 0x55])).unwrap()
}

/// Key `i`: its number, then up to 300 filler bytes (so some pages fill up by bytes first).
fn key(i: u64) -> Vec<u8> {
    let mut k = format!("key-{i:07}-").into_bytes();
    k.resize(k.len() + (i as usize * 37) % 301, b'a' + (i % 26) as u8);
    k
}

fn rows(c: &Collection) -> Vec<(Vec<u8>, u64, Sketch)> {
    c.scan().unwrap().map(|r| r.map(|r| (r.key, r.row_id, r.sketch)).unwrap()).collect()
}

#[test]
fn large_insert_batches_write_the_rows_single_inserts_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let params = SketchParams::minhash(64, 32, 5).unwrap();
    let big = db.create_collection("big", CollectionConfig::new(params)).unwrap();
    let one = db.create_collection("one", CollectionConfig::new(params)).unwrap();
    // Batches: a few rows (a partly filled last page), then large ones, then a few again.
    let sizes = [7u64, 3000, 1024, 5, 2500];
    let mut next = 0u64;
    for n in sizes {
        let mut batch = Batch::new();
        for i in next..next + n {
            batch.insert(key(i), sketch(&big, i));
            let mut single = Batch::new();
            single.insert(key(i), sketch(&one, i));
            one.apply(&single).unwrap();
        }
        let summary = big.apply(&batch).unwrap();
        assert_eq!((summary.first_row, summary.new_rows), (next, n));
        next += n;
    }
    let (got, want) = (rows(&big), rows(&one));
    assert_eq!(got.len() as u64, next);
    assert!(got == want, "the batched collection's rows differ from the per-op collection's");
    for (i, (k, row, s)) in got.iter().enumerate() {
        assert_eq!((k, *row), (&key(i as u64), i as u64));
        assert_eq!(s, &sketch(&big, i as u64));
    }
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    // Reopened, the pages read back the same.
    drop((big, one));
    drop(db);
    let db = Database::open(dir.path().join("db")).unwrap();
    assert!(rows(&db.collection("big").unwrap()) == want);
}

#[test]
fn a_large_insert_batch_failing_in_the_middle_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let params = SketchParams::minhash(64, 32, 5).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(params)).unwrap();
    let mut first = Batch::new();
    for i in 0..1500 {
        first.insert(key(i), sketch(&c, i));
    }
    c.apply(&first).unwrap();
    let before = rows(&c);
    // A duplicate of a stored key at 1,200 of 2,000, then an empty key last.
    let faults: [(usize, Vec<u8>); 2] = [(1200, key(3)), (1999, Vec::new())];
    for (at, bad) in faults {
        let mut batch = Batch::new();
        for i in 0..2000u64 {
            if i as usize == at {
                batch.insert(&bad, sketch(&c, i));
            } else {
                batch.insert(key(10_000 + i), sketch(&c, 10_000 + i));
            }
        }
        match c.apply(&batch) {
            Err(Error::Storage(StorageError::DuplicateKey { .. })) if !bad.is_empty() => {}
            Err(Error::Storage(StorageError::EmptyKey { .. })) if bad.is_empty() => {}
            other => panic!("fault at {at}: {other:?}"),
        }
        assert!(rows(&c) == before, "a failed batch changed the collection");
        assert_eq!(c.len().unwrap(), 1500);
    }
    // The next batch appends after the stored rows, as if the failed ones never ran.
    let mut next = Batch::new();
    for i in 1500..3000 {
        next.insert(key(i), sketch(&c, i));
    }
    assert_eq!(c.apply(&next).unwrap().first_row, 1500);
    let got = rows(&c);
    assert_eq!(got.len(), 3000);
    assert!(got.iter().enumerate().all(|(i, r)| r.0 == key(i as u64) && r.1 == i as u64));
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
}
