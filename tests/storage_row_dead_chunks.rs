//! Removed rows by 64-row chunk (`sketchdb.row_dead64`): a delete or upsert of a row in a page
//! the batch does not rewrite reads no page (unless SimHash tables need the row's
//! fingerprint), so the side table is what stops a second removal of one row; SimHash
//! collections, whose deletes do read the page, answer like a collection of the survivors.

mod common;

use std::collections::BTreeMap;

use common::Rng;
use sketchdb::plan::PlanKind;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, Query, QueryKind, QueryOptions, Sketch, SketchParams,
    Sketcher, TokenSet, admin, testing,
};

fn tokens(rng: &mut Rng, bases: &[Vec<u64>], i: u64) -> TokenSet {
    let base = &bases[(i % bases.len() as u64) as usize];
    let mut t: Vec<u64> = base.iter().copied().filter(|_| rng.range(0, 99) < 92).collect();
    t.push(rng.next_u64());
    TokenSet::from_unsorted(t)
}

struct Model {
    sk: Sketcher,
    bases: Vec<Vec<u64>>,
    rng: Rng,
    order: u64,
    live: BTreeMap<String, (u64, Sketch)>,
}

impl Model {
    fn new(params: SketchParams) -> Model {
        let mut rng = Rng(91);
        let bases = (0..12).map(|_| (0..rng.range(40, 90)).map(|_| rng.next_u64()).collect()).collect();
        Model { sk: Sketcher::new(params).unwrap(), bases, rng, order: 0, live: BTreeMap::new() }
    }

    /// Upserts of keys `ups` and deletes of `dels`, as one batch, to `c` and the model.
    fn apply(&mut self, c: &Collection, ups: impl IntoIterator<Item = u64>, dels: impl IntoIterator<Item = u64>) {
        let mut b = Batch::new();
        for i in dels {
            b.delete(format!("k{i:05}"));
            self.live.remove(&format!("k{i:05}"));
        }
        for i in ups {
            let s = self.sk.sketch(&tokens(&mut self.rng, &self.bases, i)).unwrap();
            b.upsert(format!("k{i:05}"), s.clone());
            self.order += 1;
            self.live.insert(format!("k{i:05}"), (self.order, s));
        }
        c.apply(&b).unwrap();
    }

    fn survivors(&self) -> Vec<(String, Sketch)> {
        let mut v: Vec<_> = self.live.iter().map(|(k, (o, s))| (*o, k.clone(), s.clone())).collect();
        v.sort_by_key(|e| e.0);
        v.into_iter().map(|(_, k, s)| (k, s)).collect()
    }
}

fn hits(c: &Collection, s: &Sketch, kind: QueryKind, force: Option<PlanKind>) -> Vec<(Vec<u8>, u64)> {
    let q = Query { sketch: s.clone(), kind, options: QueryOptions { force, ..QueryOptions::default() } };
    let mut h: Vec<_> = c.query(&q).unwrap().hits.into_iter().map(|h| (h.key, h.estimate.value.to_bits())).collect();
    h.sort();
    h
}

fn scan(c: &Collection) -> Vec<(Vec<u8>, Sketch)> {
    c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key, r.sketch)).collect()
}

fn assert_verified(db: &Database, stage: &str) {
    let report = admin::verify(db).unwrap();
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
}

#[test]
fn simhash_deletes_and_upserts_answer_like_a_collection_of_the_survivors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("simhash.sketchdb");
    let params = SketchParams::simhash(64, 4).unwrap();
    let config = CollectionConfig::new(params).with_index(IndexConfig::simhash_tables(3));
    let mut m = Model::new(params);
    let check = |db: &Database, c: &Collection, m: &Model, stage: &str| {
        let want = db.create_collection("want", config).unwrap();
        let mut b = Batch::new();
        for (k, s) in m.survivors() {
            b.insert(k, s);
        }
        want.apply(&b).unwrap();
        assert_eq!(scan(c), scan(&want), "{stage}: scan");
        assert_eq!(c.len().unwrap(), want.len().unwrap(), "{stage}: len");
        let mut rng = Rng(5);
        for i in 0..8 {
            let probe = m.sk.sketch(&tokens(&mut rng, &m.bases, i)).unwrap();
            for r in [0u32, 3, 8] {
                let kind = QueryKind::Hamming(r);
                let by_scan = hits(c, &probe, kind, Some(PlanKind::FullScan));
                assert_eq!(by_scan, hits(&want, &probe, kind, Some(PlanKind::FullScan)), "{stage}: scan r={r}");
                if r <= 3 {
                    assert_eq!(hits(c, &probe, kind, Some(PlanKind::SimhashProbe)), by_scan, "{stage}: tables r={r}");
                }
            }
        }
        db.drop_collection("want").unwrap();
        assert_verified(db, stage);
    };
    {
        let db = Database::create(&path).unwrap();
        let c = db.create_collection("c", config).unwrap();
        m.apply(&c, 0..3000, []);
        // Deletes only: every removed row goes to the side table (its page is read for the
        // fingerprint, not rewritten).
        m.apply(&c, [], (0..3000).step_by(5));
        assert!(!testing::row_dead_entries(&c, &db).unwrap().is_empty());
        m.apply(&c, (1..3000).step_by(7), (2..3000).step_by(9));
        check(&db, &c, &m, "two batches");
    }
    let db = Database::open(&path).unwrap();
    let c = db.collection("c").unwrap();
    m.apply(&c, (2..3000).step_by(11), (3..3000).step_by(4));
    m.apply(&c, 3000..3100, (1..3000).step_by(13));
    check(&db, &c, &m, "reopened");
    db.compact().unwrap();
    assert!(testing::row_dead_entries(&c, &db).unwrap().is_empty());
    let mut got = scan(&c);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want: Vec<_> = m.survivors().into_iter().map(|(k, s)| (k.into_bytes(), s)).collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want, "compacted");
    assert_verified(&db, "compacted");
}

#[test]
fn a_key_whose_row_is_already_listed_removed_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("listed.sketchdb")).unwrap();
    let configs = [
        ("plain", CollectionConfig::new(SketchParams::minhash(16, 32, 7).unwrap())),
        ("lsh", CollectionConfig::new(SketchParams::minhash(16, 32, 7).unwrap()).with_index(IndexConfig::lsh(0.5))),
        (
            "simhash",
            CollectionConfig::new(SketchParams::simhash(64, 7).unwrap()).with_index(IndexConfig::simhash_tables(2)),
        ),
    ];
    for (name, config) in configs {
        let c = db.create_collection(name, config).unwrap();
        let mut m = Model::new(config.params);
        m.apply(&c, 0..200, []);
        // Row 70 (key k00070) listed as removed while its key still maps to it: damage a
        // delete that reads no page can only see in the side table.
        testing::write_raw_row_dead(&c, &db, 1, 1 << 6).unwrap();
        let entries = testing::row_dead_entries(&c, &db).unwrap();
        let stats = c.stats().unwrap();
        for upsert in [false, true] {
            let mut b = Batch::new();
            b.delete("k00010");
            if upsert {
                b.upsert("k00070", m.live["k00001"].1.clone());
            } else {
                b.delete("k00070");
            }
            let e = c.apply(&b).expect_err("a second removal of row 70");
            assert!(e.to_string().contains("a key maps to a deleted row"), "{name}: {e}");
            assert_eq!(testing::row_dead_entries(&c, &db).unwrap(), entries, "{name}: nothing written");
            assert_eq!(c.stats().unwrap(), stats, "{name}: nothing written");
            assert!(c.get("k00010").unwrap().is_some(), "{name}");
        }
        // Deleting an absent key is counted, not refused.
        let mut b = Batch::new();
        b.delete("absent").delete("k00011");
        let s = c.apply(&b).unwrap();
        assert_eq!((s.deleted, s.missing), (1, 1), "{name}");
    }
}

#[test]
fn an_ended_rows_content_hash_stays_until_compaction_purges_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("hashes.sketchdb")).unwrap();
    let params = SketchParams::minhash(16, 32, 9).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(params).with_index(IndexConfig::lsh(0.5))).unwrap();
    let mut m = Model::new(params);
    let key = |i: u64| format!("k{i:05}");
    // key -> the hash its live row was written with (None: written without one).
    let mut want: BTreeMap<String, Option<u128>> = BTreeMap::new();
    let mut b = Batch::new();
    for i in 0..2000u64 {
        b.insert_with_hash(key(i), m.sk.sketch(&tokens(&mut m.rng, &m.bases, i)).unwrap(), u128::from(i) + 1);
        want.insert(key(i), Some(u128::from(i) + 1));
    }
    c.apply(&b).unwrap();
    let mut b = Batch::new();
    for i in (0..2000u64).filter(|i| i % 4 == 0) {
        b.delete(key(i));
        want.remove(&key(i));
    }
    for i in (0..2000u64).filter(|i| i % 5 == 1) {
        b.upsert_with_hash(key(i), m.sk.sketch(&tokens(&mut m.rng, &m.bases, i)).unwrap(), 7000 + u128::from(i));
        want.insert(key(i), Some(7000 + u128::from(i)));
    }
    for i in (0..2000u64).filter(|i| i % 7 == 2) {
        b.upsert(key(i), m.sk.sketch(&tokens(&mut m.rng, &m.bases, i)).unwrap());
        want.insert(key(i), None);
    }
    c.apply(&b).unwrap();
    let check = |stage: &str| -> Vec<u64> {
        let snap = c.snapshot().unwrap();
        let mut hashed = vec![];
        for i in 0..2000u64 {
            let got = snap.stored_hash(key(i)).unwrap();
            assert_eq!(got.map(|g| g.1), want.get(&key(i)).copied(), "{stage}: {}", key(i));
            if let Some((row, Some(_))) = got {
                hashed.push(row);
            }
        }
        hashed.sort_unstable();
        hashed
    };
    let hashed = check("after deletes and upserts");
    let entries = testing::content_hash_rows(&c, &db).unwrap();
    assert!(hashed.iter().all(|r| entries.contains(r)), "every live hashed row has its entry");
    assert!(entries.len() > hashed.len(), "ended rows keep their entries until compaction");
    assert_verified(&db, "before compaction");
    db.compact().unwrap();
    let hashed = check("compacted");
    assert_eq!(testing::content_hash_rows(&c, &db).unwrap(), hashed, "compaction purges the ended rows' entries");
    assert_verified(&db, "compacted");
}

/// Content hashes of a batch's new rows are written through one cursor at the end of their
/// collection's entries: with two collections taking turns, each key reads back its own
/// hash, whichever collection's entries follow the gap.
#[test]
fn content_hashes_of_two_collections_taking_turns_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("turns.sketchdb")).unwrap();
    let params = SketchParams::minhash(16, 32, 3).unwrap();
    let first = db.create_collection("first", CollectionConfig::new(params)).unwrap();
    let second = db.create_collection("second", CollectionConfig::new(params)).unwrap();
    let sk = Sketcher::new(params).unwrap();
    let hash = |c: u128, i: u64| (c << 64) | u128::from(i * 31 + 5);
    let mut next = [0u64; 2];
    // Batch sizes on both sides of the one-by-one threshold.
    for (turn, n) in [(1usize, 200u64), (0, 300), (1, 65), (0, 3), (0, 64), (1, 500)] {
        let c = if turn == 0 { &first } else { &second };
        let mut b = Batch::new();
        for i in next[turn]..next[turn] + n {
            let s = sk.sketch(&TokenSet::from_unsorted(vec![i, i + 1, 1000 + i])).unwrap();
            b.insert_with_hash(format!("k{i}"), s, hash(turn as u128, i));
        }
        c.apply(&b).unwrap();
        next[turn] += n;
    }
    for (turn, c) in [&first, &second].into_iter().enumerate() {
        let snap = c.snapshot().unwrap();
        for i in 0..next[turn] {
            let got = snap.stored_hash(format!("k{i}")).unwrap();
            assert_eq!(got.map(|g| g.1), Some(Some(hash(turn as u128, i))), "collection {turn}, k{i}");
        }
    }
    assert_verified(&db, "two collections");
}
