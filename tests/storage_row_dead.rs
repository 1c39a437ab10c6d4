//! Deletes and upserts of rows in pages a batch does not rewrite list the rows in
//! `sketchdb.row_dead64` (one word per 64-row chunk) instead of rewriting the 64 KiB page. After mixes
//! of inserts, upserts and deletes (in one batch, across batches, with reopen), every read
//! equals the same collection built from scratch with only the surviving records: gets,
//! iteration, counts, stats, threshold queries through the LSH index and through a scan,
//! top-k and dedup. A failing batch writes nothing; compaction folds the table away and
//! changes no answer; verify names a damaged entry.

mod common;

use std::collections::BTreeMap;

use common::Rng;
use sketchdb::plan::PlanKind;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, Error, IndexConfig, Query, QueryKind, QueryOptions, Sketch,
    SketchParams, Sketcher, StorageError, TokenSet, admin, testing,
};

/// Near-copies of 30 base sets, so that thresholds, top-k and dedup have something to find.
fn set(rng: &mut Rng, bases: &[Vec<u64>], i: u64) -> TokenSet {
    let base = &bases[(i % bases.len() as u64) as usize];
    let mut t: Vec<u64> = base.iter().copied().filter(|_| rng.range(0, 99) < 90).collect();
    t.push(rng.next_u64());
    TokenSet::from_unsorted(t)
}

/// The collection under test and the model of what it must hold: key -> (write order, sketch).
struct Mixed {
    sk: Sketcher,
    bases: Vec<Vec<u64>>,
    rng: Rng,
    order: u64,
    model: BTreeMap<String, (u64, Sketch)>,
}

enum Op {
    Insert(u64),
    Upsert(u64),
    Delete(u64),
}

impl Mixed {
    fn new(params: SketchParams) -> Mixed {
        let mut rng = Rng(33);
        let bases = (0..30).map(|_| (0..rng.range(30, 120)).map(|_| rng.next_u64()).collect()).collect();
        Mixed { sk: Sketcher::new(params).unwrap(), bases, rng, order: 0, model: BTreeMap::new() }
    }

    /// Applies `ops` to `c` as one batch and to the model.
    fn apply(&mut self, c: &Collection, ops: &[Op]) {
        let mut b = Batch::new();
        for op in ops {
            match *op {
                Op::Insert(i) | Op::Upsert(i) => {
                    let s = self.sk.sketch(&set(&mut self.rng, &self.bases, i)).unwrap();
                    let key = format!("k{i:05}");
                    if matches!(op, Op::Insert(_)) {
                        b.insert(&key, s.clone());
                    } else {
                        b.upsert(&key, s.clone());
                    }
                    self.order += 1;
                    self.model.insert(key, (self.order, s));
                }
                Op::Delete(i) => {
                    let key = format!("k{i:05}");
                    b.delete(&key);
                    self.model.remove(&key);
                }
            }
        }
        c.apply(&b).unwrap();
    }

    /// The survivors in the order they were written (the order of their row ids).
    fn survivors(&self) -> Vec<(String, Sketch)> {
        let mut v: Vec<_> = self.model.iter().map(|(k, (o, s))| (*o, k.clone(), s.clone())).collect();
        v.sort_by_key(|e| e.0);
        v.into_iter().map(|(_, k, s)| (k, s)).collect()
    }
}

fn config(params: SketchParams) -> CollectionConfig {
    CollectionConfig::new(params).with_index(IndexConfig::lsh(0.5))
}

/// A collection of `name` in `db` holding `survivors`, inserted in order in one batch.
fn fresh(db: &Database, name: &str, params: SketchParams, survivors: &[(String, Sketch)]) -> Collection {
    let c = db.create_collection(name, config(params)).unwrap();
    let mut b = Batch::new();
    for (k, s) in survivors {
        b.insert(k, s.clone());
    }
    c.apply(&b).unwrap();
    c
}

/// Hits as (key, estimate): row ids differ between the two collections, keys do not.
fn hits(c: &Collection, q: &Query) -> Vec<(Vec<u8>, u64)> {
    c.query(q).unwrap().hits.into_iter().map(|h| (h.key, h.estimate.value.to_bits())).collect()
}

/// Every read of `got` equals the same read of `want`.
fn assert_same(got: &Collection, want: &Collection, probes: &[Sketch], ever: &[String], stage: &str) {
    assert_eq!(got.len().unwrap(), want.len().unwrap(), "{stage}: len");
    assert_eq!(got.is_empty().unwrap(), want.is_empty().unwrap(), "{stage}: is_empty");
    assert_eq!(got.stats().unwrap().live, want.stats().unwrap().live, "{stage}: stats live");
    let scan = |c: &Collection| -> Vec<(Vec<u8>, Sketch)> {
        c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key, r.sketch)).collect()
    };
    assert_eq!(scan(got), scan(want), "{stage}: scan");
    let mut pages_live = 0;
    got.for_each_page(|p| {
        pages_live += (0..p.len()).filter(|&i| !p.is_deleted(i)).count() as u64;
        true
    })
    .unwrap();
    assert_eq!(pages_live, want.len().unwrap(), "{stage}: live rows of the page columns");
    for k in ever {
        let g = got.get(k).unwrap().map(|r| r.sketch);
        assert_eq!(g, want.get(k).unwrap().map(|r| r.sketch), "{stage}: get {k}");
    }
    let asks: [(QueryKind, Option<PlanKind>); 5] = [
        (QueryKind::Threshold(0.5), Some(PlanKind::LshProbe)),
        (QueryKind::Threshold(0.5), Some(PlanKind::FullScan)),
        (QueryKind::Threshold(0.7), None),
        (QueryKind::TopK(7), Some(PlanKind::FullScan)),
        (QueryKind::TopK(3), None),
    ];
    for (kind, force) in asks {
        for (i, s) in probes.iter().enumerate() {
            let q = Query { sketch: s.clone(), kind, options: QueryOptions { force, ..QueryOptions::default() } };
            assert_eq!(hits(got, &q), hits(want, &q), "{stage}: {kind:?} {force:?} probe {i}");
        }
    }
    let dedup = |c: &Collection| {
        let d = c.dedup(QueryKind::Threshold(0.5), QueryOptions::default()).unwrap();
        let mut clusters: Vec<Vec<Vec<u8>>> = d.clusters.into_iter().map(|c| c.keys).collect();
        clusters.sort();
        (d.pairs, clusters)
    };
    assert_eq!(dedup(got), dedup(want), "{stage}: dedup");
}

fn assert_verified(db: &Database, stage: &str) {
    let report = admin::verify(db).unwrap();
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
}

#[test]
fn mixed_writes_answer_like_a_collection_of_the_survivors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.sketchdb");
    let params = SketchParams::minhash(64, 32, 5).unwrap();
    let mut m = Mixed::new(params);
    let ever: Vec<String> = (0..1400u64).map(|i| format!("k{i:05}")).collect();
    let probe_keys = |m: &Mixed| -> Vec<Sketch> {
        // Live records, and some the model no longer holds (their last sketches are gone).
        let mut p: Vec<Sketch> = m.model.values().step_by(37).map(|(_, s)| s.clone()).collect();
        let mut rng = Rng(7);
        p.extend((0..6).map(|i| m.sk.sketch(&set(&mut rng, &m.bases, i)).unwrap()));
        p
    };
    {
        let db = Database::create(&path).unwrap();
        assert_eq!(testing::file_format_version(&db).unwrap(), 3);
        let c = db.create_collection("mixed", config(params)).unwrap();
        m.apply(&c, &(0..1000).map(Op::Insert).collect::<Vec<_>>());
        // One batch: spread deletes and upserts of stored rows, inserts, deletes and a
        // second upsert of keys inserted earlier in the same batch.
        let mut ops: Vec<Op> = (0..1000).step_by(5).map(Op::Delete).collect();
        ops.extend((1..1000).step_by(7).map(Op::Upsert));
        ops.extend((1000..1200).map(Op::Insert));
        ops.extend((1000..1200).step_by(9).map(Op::Delete));
        ops.extend((1001..1200).step_by(11).map(Op::Upsert));
        ops.extend((2..1000).step_by(13).map(Op::Upsert));
        m.apply(&c, &ops);
        assert!(!testing::row_dead_entries(&c, &db).unwrap().is_empty(), "spread deletes use the side table");
        let want = fresh(&db, "want1", params, &m.survivors());
        assert_same(&c, &want, &probe_keys(&m), &ever, "after one mixed batch");
        db.drop_collection("want1").unwrap();
        assert_verified(&db, "after one mixed batch");
    }
    // Reopened: more deletes into pages that already have entries, then appends.
    let db = Database::open(&path).unwrap();
    let c = db.collection("mixed").unwrap();
    m.apply(&c, &(1..1000).step_by(3).map(Op::Delete).collect::<Vec<_>>());
    m.apply(&c, &(3..1100).step_by(17).map(Op::Upsert).collect::<Vec<_>>());
    m.apply(&c, &(1200..1400).map(Op::Insert).collect::<Vec<_>>());
    let want = fresh(&db, "want2", params, &m.survivors());
    assert_same(&c, &want, &probe_keys(&m), &ever, "across batches and a reopen");
    assert_verified(&db, "across batches and a reopen");

    // A failing batch (a duplicate insert after spread deletes) writes nothing.
    let entries = testing::row_dead_entries(&c, &db).unwrap();
    let mut b = Batch::new();
    for i in (0..1400u64).step_by(2) {
        b.delete(format!("k{i:05}"));
    }
    b.insert("k01399", m.model["k01399"].1.clone());
    assert!(matches!(c.apply(&b), Err(Error::Storage(StorageError::DuplicateKey { .. }))));
    assert_eq!(testing::row_dead_entries(&c, &db).unwrap(), entries, "a failed batch leaves the table");
    assert_same(&c, &want, &probe_keys(&m), &ever, "after a failed batch");

    // Compaction folds every entry into rewritten pages and changes no answer.
    let deleted = c.stats().unwrap().deleted;
    assert!(deleted > 0);
    let summary = db.compact().unwrap();
    assert_eq!(summary.rows_purged, deleted);
    assert!(testing::row_dead_entries(&c, &db).unwrap().is_empty(), "compaction empties the table");
    assert_eq!(c.stats().unwrap().deleted, 0);
    // Compaction moved rows to new row ids (the survivors of holed pages after the others):
    // the comparison is with the survivors inserted in the compacted order.
    let order: Vec<(String, Sketch)> =
        c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key_str().unwrap().to_string(), r.sketch)).collect();
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(sorted, m.model.iter().map(|(k, (_, s))| (k.clone(), s.clone())).collect::<Vec<_>>());
    let want = fresh(&db, "want3", params, &order);
    assert_same(&c, &want, &probe_keys(&m), &ever, "after compaction");
    assert_verified(&db, "after compaction");
}

#[test]
fn appending_to_the_tail_page_folds_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("tail.sketchdb")).unwrap();
    let params = SketchParams::minhash(16, 32, 2).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(params)).unwrap();
    let mut m = Mixed::new(params);
    m.apply(&c, &(0..10).map(Op::Insert).collect::<Vec<_>>());
    m.apply(&c, &[Op::Delete(3), Op::Delete(7)]);
    let entries = testing::row_dead_entries(&c, &db).unwrap();
    assert_eq!(entries, vec![(0, (1u64 << 3 | 1 << 7).to_le_bytes().to_vec())]);
    // The tail page (rows 0..10) takes more rows: it is rewritten with rows 3 and 7 deleted.
    m.apply(&c, &(10..12).map(Op::Insert).collect::<Vec<_>>());
    assert!(testing::row_dead_entries(&c, &db).unwrap().is_empty());
    let keys: Vec<String> = c.scan().unwrap().map(|r| r.unwrap().key_str().unwrap().to_string()).collect();
    assert_eq!(keys, m.survivors().into_iter().map(|(k, _)| k).collect::<Vec<_>>());
    assert_eq!((c.stats().unwrap().live, c.stats().unwrap().deleted), (10, 2));
    assert_verified(&db, "after the fold");
}

/// A collection `name` of 10 rows (one page: rows 0..10) in `db`.
fn ten_rows(db: &Database, name: &str) -> (Collection, Mixed) {
    let params = SketchParams::minhash(16, 32, 3).unwrap();
    let c = db.create_collection(name, CollectionConfig::new(params)).unwrap();
    let mut m = Mixed::new(params);
    m.apply(&c, &(0..10).map(Op::Insert).collect::<Vec<_>>());
    (c, m)
}

/// Verify reports a problem of collection `name` that `matches`.
fn reports(db: &Database, name: &str, matches: impl Fn(&admin::Problem) -> bool, says: &str) {
    let report = admin::verify(db).unwrap();
    assert!(
        report.problems.iter().any(|p| p.collection.as_deref() == Some(name) && matches(p)),
        "{says}: {:?}",
        report.problems
    );
}

fn scan_refuses_page_0(c: &Collection, says: &str) {
    match c.scan().unwrap().collect::<Result<Vec<_>, _>>() {
        Err(Error::Storage(StorageError::CorruptPage { page: 0, .. })) => {}
        other => panic!("{says}: a scan must refuse the page, got {other:?}"),
    }
}

#[test]
fn verify_names_a_damaged_entry_and_reads_refuse_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("bad.sketchdb")).unwrap();
    // A chunk entry listing no row.
    let (c, _) = ten_rows(&db, "empty");
    testing::write_raw_row_dead(&c, &db, 0, 0).unwrap();
    reports(
        &db,
        "empty",
        |p| p.page == Some(0) && p.detail.contains("sketchdb.row_dead64") && p.detail.contains("no row"),
        "empty word",
    );
    scan_refuses_page_0(&c, "empty word");
    // A row no page holds: the page reads as before, verify names the row.
    let (c, m) = ten_rows(&db, "past");
    testing::write_raw_row_dead(&c, &db, 0, 1 << 12).unwrap();
    reports(&db, "past", |p| p.row == Some(12) && p.detail.contains("no stored page holds"), "row past the page");
    assert_eq!(c.scan().unwrap().count(), m.model.len());
    // A row the page's own bitmap already has (row 3 is folded into the rewritten tail).
    let (c, mut m) = ten_rows(&db, "twice");
    m.apply(&c, &[Op::Delete(3), Op::Insert(10)]);
    assert!(testing::row_dead_entries(&c, &db).unwrap().is_empty());
    testing::write_raw_row_dead(&c, &db, 0, 1 << 3).unwrap();
    reports(&db, "twice", |p| p.page == Some(0) && p.detail.contains("row index 3 removed twice"), "removed twice");
    scan_refuses_page_0(&c, "removed twice");
    // Version-2 entries (one bitmap per page) a version-2 build wrote and this build reads.
    let bad: [(&[u8], &str); 4] = [
        (&(1u64 << 12).to_le_bytes(), "row index 12 removed"),
        (&[0u8; 8], "at least one removed row"),
        (&[1, 2, 3], "multiple of 8"),
        (&[1u8; 16], "length"),
    ];
    for (i, (bytes, says)) in bad.into_iter().enumerate() {
        let name = format!("v2-{i}");
        let (c, _) = ten_rows(&db, &name);
        testing::write_raw_legacy_row_dead(&c, &db, 0, bytes).unwrap();
        reports(
            &db,
            &name,
            |p| p.page == Some(0) && p.detail.contains("sketchdb.row_dead") && p.detail.contains(says),
            says,
        );
        scan_refuses_page_0(&c, says);
    }
    // A version-2 entry for a page that is not stored.
    let (c, _) = ten_rows(&db, "v2-missing");
    testing::write_raw_legacy_row_dead(&c, &db, 5, &1u64.to_le_bytes()).unwrap();
    reports(&db, "v2-missing", |p| p.page == Some(5) && p.detail.contains("not stored"), "missing page");
}
