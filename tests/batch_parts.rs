//! `Collection::apply_parts`: a batch written in parts into one open transaction stores
//! exactly what `Collection::apply` of the joined batch stores (rows, row ids, keys, content
//! hashes, exact shingle sets, LSH candidates, statistics, page layout), for inserts,
//! upserts and deletes spread over the parts; a part that is an error, or a write that
//! fails in a later part, leaves nothing of the transaction behind.

mod common;

use common::Rng;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, Error, IndexConfig, QueryKind, QueryOptions, Sketch, SketchParams,
    StorageError, TokenSet, admin, testing,
};

/// One write of a generated stream.
#[derive(Clone)]
enum Write {
    Insert(String, TokenSet, u128),
    Upsert(String, TokenSet, u128),
    Delete(String),
}

fn set(rng: &mut Rng, base: &[u64]) -> TokenSet {
    let mut t = base.to_vec();
    for _ in 0..rng.range(0, 8) {
        let i = rng.range(0, t.len() as u64 - 1) as usize;
        t[i] = rng.next_u64();
    }
    TokenSet::from_unsorted(t)
}

/// `n` writes: inserts of new keys (near-duplicate families, so LSH buckets share rows),
/// upserts and deletes of keys inserted before (stored or written earlier in the stream),
/// and re-inserts of deleted keys.
fn writes(seed: u64, first: usize, n: usize, known: &mut Vec<String>) -> Vec<Write> {
    let mut rng = Rng(seed);
    let bases: Vec<Vec<u64>> = (0..12).map(|_| (0..rng.range(30, 90)).map(|_| rng.next_u64()).collect()).collect();
    let mut out = Vec::new();
    let mut deleted: Vec<String> = Vec::new();
    let mut next = first;
    while out.len() < n {
        let base = &bases[rng.range(0, bases.len() as u64 - 1) as usize];
        let roll = rng.range(0, 99);
        if roll < 12 && !known.is_empty() {
            let key = known[rng.range(0, known.len() as u64 - 1) as usize].clone();
            out.push(Write::Upsert(key, set(&mut rng, base), u128::from(rng.next_u64())));
        } else if roll < 20 && !known.is_empty() {
            let key = known.swap_remove(rng.range(0, known.len() as u64 - 1) as usize);
            deleted.push(key.clone());
            out.push(Write::Delete(key));
        } else if roll < 24 && !deleted.is_empty() {
            let key = deleted.swap_remove(0);
            known.push(key.clone());
            out.push(Write::Insert(key, set(&mut rng, base), u128::from(rng.next_u64())));
        } else {
            let key = format!("k{next:06}");
            next += 1;
            known.push(key.clone());
            out.push(Write::Insert(key, set(&mut rng, base), u128::from(rng.next_u64())));
        }
    }
    out
}

fn batch_of(c: &Collection, writes: &[Write]) -> Batch {
    let mut b = Batch::new();
    for w in writes {
        match w {
            Write::Insert(k, s, h) => b.insert_with_hash_and_shingles(k, c.sketcher().sketch(s).unwrap(), *h, s),
            Write::Upsert(k, s, h) => b.upsert_with_hash_and_shingles(k, c.sketcher().sketch(s).unwrap(), *h, s),
            Write::Delete(k) => b.delete(k),
        };
    }
    b
}

fn collection(dir: &std::path::Path, name: &str) -> (Database, Collection) {
    let db = Database::create(dir.join(name)).unwrap();
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 5).unwrap())
        .with_index(IndexConfig::lsh(0.7))
        .with_exact_shingles(true);
    let c = db.create_collection("c", config).unwrap();
    (db, c)
}

/// A stored row: row id, key, sketch, and what `stored_hash` says of its key.
type Row = (u64, Vec<u8>, Sketch, Option<(u64, Option<u128>)>);

/// Everything a reader can see of `c`, for comparing two files.
#[derive(Debug, PartialEq)]
struct Seen {
    rows: Vec<Row>,
    pages: Vec<u64>,
    candidates: Vec<Vec<u64>>,
    exact: Vec<Vec<(Vec<u8>, Option<f64>)>>,
    stats: String,
}

fn seen(db: &Database, c: &Collection) -> Seen {
    // Verify first: it needs no reader open.
    let report = admin::verify(db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let snap = c.snapshot().unwrap();
    let records: Vec<_> = c.scan().unwrap().map(|r| r.unwrap()).collect();
    let rows = records
        .iter()
        .map(|r| (r.row_id, r.key.clone(), r.sketch.clone(), snap.stored_hash(&r.key).unwrap()))
        .collect();
    let queries: Vec<&Sketch> = records.iter().step_by(37).map(|r| &r.sketch).collect();
    let candidates = queries.iter().map(|q| testing::lsh_candidates(c, db, q, 8).unwrap()).collect();
    let exact_opts = QueryOptions { exact: true, ..QueryOptions::default() };
    let exact = records
        .iter()
        .step_by(41)
        .map(|r| {
            let hits = c.query_key(&r.key, QueryKind::Threshold(0.6), exact_opts).unwrap().hits;
            hits.into_iter().map(|h| (h.key, h.exact)).collect()
        })
        .collect();
    Seen { rows, pages: testing::page_starts(c, db).unwrap(), candidates, exact, stats: format!("{:?}", c.stats()) }
}

#[test]
fn parts_store_what_the_joined_batch_stores() {
    let dir = tempfile::tempdir().unwrap();
    let (db_a, a) = collection(dir.path(), "whole.db");
    let (db_b, b) = collection(dir.path(), "parts.db");
    let mut known = Vec::new();
    // A first batch stored in both; then batches whose writes touch it and each other.
    let stored = writes(1, 0, 900, &mut known);
    a.apply(&batch_of(&a, &stored)).unwrap();
    b.apply(&batch_of(&b, &stored)).unwrap();
    for (round, cuts) in [vec![1usize, 2, 64, 300, 301], vec![700], vec![5, 10, 15, 1000], vec![]].iter().enumerate() {
        let ws = writes(10 + round as u64, 1000 * (round + 1), 1200, &mut known);
        let whole = a.apply(&batch_of(&a, &ws)).unwrap();
        let mut bounds = vec![0];
        bounds.extend(cuts.iter().copied().filter(|&c| c < ws.len()));
        bounds.push(ws.len());
        let parts: Vec<Result<Batch, Error>> = bounds.windows(2).map(|w| Ok(batch_of(&b, &ws[w[0]..w[1]]))).collect();
        let in_parts = b.apply_parts(parts).unwrap();
        assert_eq!(in_parts, whole, "round {round}");
        assert_eq!(seen(&db_b, &b), seen(&db_a, &a), "round {round}");
    }
}

/// How a caller's parts end early, or a write's error.
#[derive(Debug)]
enum Stop {
    Caller,
    Db(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Db(e)
    }
}

#[test]
fn a_stopped_or_failed_transaction_leaves_nothing_of_its_parts() {
    let dir = tempfile::tempdir().unwrap();
    let (db, c) = collection(dir.path(), "x.db");
    let mut known = Vec::new();
    let stored = writes(3, 0, 600, &mut known);
    c.apply(&batch_of(&c, &stored)).unwrap();
    let before = seen(&db, &c);
    let next_row = c.stats().unwrap().next_row;
    let next = writes(4, 5000, 900, &mut known);
    let parts = |c: &Collection| -> Vec<Batch> { next.chunks(300).map(|w| batch_of(c, w)).collect() };

    // A part that is an error after two parts were written: it is returned, nothing stays.
    let mut stopped: Vec<Result<Batch, Stop>> = parts(&c).into_iter().take(2).map(Ok).collect();
    stopped.push(Err(Stop::Caller));
    stopped.push(Ok(batch_of(&c, &next[..1])));
    assert!(matches!(c.apply_parts(stopped), Err(Stop::Caller)));
    assert_eq!(seen(&db, &c), before);

    // A write that fails in the third part (an insert of a stored key): nothing stays.
    let mut failing = parts(&c);
    let taken = stored.iter().find_map(|w| match w {
        Write::Insert(k, ..) if known.contains(k) => Some(k.clone()),
        _ => None,
    });
    let taken = taken.expect("a key stored and still live");
    failing[2].insert(&taken, c.sketcher().sketch(&TokenSet::from_unsorted(vec![1, 2, 3])).unwrap());
    let failing: Vec<Result<Batch, Stop>> = failing.into_iter().map(Ok).collect();
    match c.apply_parts(failing) {
        Err(Stop::Db(Error::Storage(StorageError::DuplicateKey { key, .. }))) => assert_eq!(key, format!("{taken:?}")),
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    assert_eq!(seen(&db, &c), before);

    // The database takes the same writes whole afterwards.
    let all: Vec<Result<Batch, Error>> = parts(&c).into_iter().map(Ok).collect();
    let summary = c.apply_parts(all).unwrap();
    assert_eq!(summary.first_row, next_row);
}
