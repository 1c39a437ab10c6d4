//! Batches whose new keys sort after every stored key are written through one redb cursor
//! (the writer's append path, taken from 64 such keys on). Whatever mix a batch holds, the
//! outcome must equal the per-op semantics: checked against an in-memory model over random
//! batches into two collections (so one collection's appends land before the other's keys),
//! with ascending new keys, new keys between stored keys, old keys, duplicates, inserts and
//! deletes of one key in one batch, and bad keys that fail the batch.

use std::collections::BTreeMap;

use proptest::prelude::*;
use sketchdb::{Batch, Collection, CollectionConfig, Database, Error, Sketch, SketchParams, StorageError, TokenSet};

#[derive(Clone, Debug)]
enum Op {
    /// Insert of a key past every key used so far (the append path's case).
    InsertNext,
    /// Upsert of a key past every key used so far.
    UpsertNext,
    /// Upsert of an earlier key.
    UpsertOld(usize),
    /// Insert of a key right after an earlier key (between it and the next stored key).
    InsertGap(usize),
    /// Upsert of a key right after an earlier key.
    UpsertGap(usize),
    /// Delete of an earlier key (absent or live).
    DeleteOld(usize),
    /// Upsert of a key used in this batch (the same key twice in one batch).
    UpsertRepeat(usize),
    /// Delete of a key used in this batch.
    DeleteRepeat(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        40 => Just(Op::InsertNext),
        10 => Just(Op::UpsertNext),
        8 => any::<usize>().prop_map(Op::UpsertOld),
        8 => any::<usize>().prop_map(Op::InsertGap),
        4 => any::<usize>().prop_map(Op::UpsertGap),
        4 => any::<usize>().prop_map(Op::DeleteOld),
        2 => any::<usize>().prop_map(Op::UpsertRepeat),
        2 => any::<usize>().prop_map(Op::DeleteRepeat),
    ]
}

/// What makes a batch fail, placed at a position of the batch: an empty key, an insert of
/// a live earlier key, an insert of a key this batch already used.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Empty,
    InsertOld,
    InsertRepeat,
}

fn fault() -> impl Strategy<Value = Option<(Fault, usize)>> {
    prop_oneof![
        6 => Just(None),
        1 => any::<usize>().prop_map(|i| Some((Fault::Empty, i))),
        1 => any::<usize>().prop_map(|i| Some((Fault::InsertOld, i))),
        1 => any::<usize>().prop_map(|i| Some((Fault::InsertRepeat, i))),
    ]
}

/// One collection's expected contents: key -> (row id, sketch seed), and the next row id.
#[derive(Clone, Default)]
struct Model {
    live: BTreeMap<Vec<u8>, (u64, u64)>,
    next_row: u64,
}

/// The result the per-op semantics give for `ops` (the model is left unchanged on error).
fn expected(model: &Model, ops: &[(u8, Vec<u8>, u64)]) -> Result<Model, &'static str> {
    let mut m = model.clone();
    for (kind, key, seed) in ops {
        if key.is_empty() {
            return Err("empty");
        }
        match kind {
            0 if m.live.contains_key(key) => return Err("duplicate"),
            0 | 1 => {
                m.live.insert(key.clone(), (m.next_row, *seed));
                m.next_row += 1;
            }
            _ => {
                m.live.remove(key);
            }
        }
    }
    Ok(m)
}

fn sketch(c: &Collection, seed: u64) -> Sketch {
    c.sketcher().sketch(&TokenSet::from_unsorted(vec![seed, seed + 1, seed * 7 + 3])).unwrap()
}

fn check(c: &Collection, m: &Model) {
    let stored: Vec<(Vec<u8>, u64, Sketch)> =
        c.scan().unwrap().map(|r| r.map(|r| (r.key, r.row_id, r.sketch)).unwrap()).collect();
    let mut stored_keys: Vec<&Vec<u8>> = stored.iter().map(|s| &s.0).collect();
    stored_keys.sort();
    assert_eq!(stored_keys, m.live.keys().collect::<Vec<_>>(), "live keys");
    for (key, (row, seed)) in &m.live {
        let r = c.get(key).unwrap().unwrap_or_else(|| panic!("key {key:?} lost"));
        assert_eq!(r.row_id, *row, "row of {key:?}");
        assert_eq!(r.sketch, sketch(c, *seed), "sketch of {key:?}");
    }
    assert_eq!(c.len().unwrap(), m.live.len() as u64);
}

type Batches = Vec<(bool, Vec<Op>, Option<(Fault, usize)>)>;

/// Runs one case; returns the batches committed and their ops.
fn run_case(batches: Batches) -> (usize, usize) {
    let mut ops_committed = 0;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let params = SketchParams::minhash(16, 64, 5).unwrap();
    let colls = [
        db.create_collection("a", CollectionConfig::new(params)).unwrap(),
        db.create_collection("b", CollectionConfig::new(params)).unwrap(),
    ];
    let mut models = [Model::default(), Model::default()];
    // Keys are "k" + big-endian counters, so a higher counter sorts later.
    let mut next_key = [0u64; 2];
    let mut seed = 0u64;
    let mut committed = 0;
    for (which, ops, fault) in batches {
        let w = usize::from(which);
        let (c, model) = (&colls[w], &models[w]);
        let old: Vec<Vec<u8>> = model.live.keys().cloned().collect();
        let mut this: Vec<(u8, Vec<u8>, u64)> = Vec::new();
        for op in ops {
            seed += 1;
            let fresh = |n: &mut u64| {
                *n += 1;
                [b"k".as_slice(), &n.to_be_bytes()].concat()
            };
            let pick = |v: &[Vec<u8>], i: usize| (!v.is_empty()).then(|| v[i % v.len()].clone());
            let used: Vec<Vec<u8>> = this.iter().map(|t| t.1.clone()).collect();
            let entry = match op {
                Op::InsertNext => Some((0, fresh(&mut next_key[w]))),
                Op::UpsertNext => Some((1, fresh(&mut next_key[w]))),
                Op::UpsertOld(i) => pick(&old, i).map(|k| (1, k)),
                Op::InsertGap(i) => pick(&old, i).map(|k| (0, [k.as_slice(), &[0x80]].concat())),
                Op::UpsertGap(i) => pick(&old, i).map(|k| (1, [k.as_slice(), &[0x40]].concat())),
                Op::DeleteOld(i) => pick(&old, i).map(|k| (2, k)),
                Op::UpsertRepeat(i) => pick(&used, i).map(|k| (1, k)),
                Op::DeleteRepeat(i) => pick(&used, i).map(|k| (2, k)),
            };
            if let Some((kind, key)) = entry {
                this.push((kind, key, seed));
            }
        }
        if let Some((fault, at)) = fault {
            let at = at % (this.len() + 1);
            let used: Vec<Vec<u8>> = this[..at].iter().map(|t| t.1.clone()).collect();
            let key = match fault {
                Fault::Empty => Some(Vec::new()),
                Fault::InsertOld => old.first().cloned(),
                Fault::InsertRepeat => used.last().cloned(),
            };
            if let Some(key) = key {
                this.insert(at, (0, key, 0));
            }
        }
        let mut batch = Batch::new();
        for (kind, key, s) in &this {
            match kind {
                0 => batch.insert(key, sketch(c, *s)),
                1 => batch.upsert(key, sketch(c, *s)),
                _ => batch.delete(key),
            };
        }
        let got = c.apply(&batch);
        match (expected(model, &this), got) {
            (Ok(m), Ok(_)) => {
                committed += 1;
                ops_committed += this.len();
                models[w] = m;
            }
            (Err("duplicate"), Err(Error::Storage(StorageError::DuplicateKey { .. }))) => {}
            (Err("empty"), Err(Error::Storage(StorageError::EmptyKey { .. }))) => {}
            (want, got) => panic!("expected {:?}, got {got:?}", want.map(|_| "ok")),
        }
        check(&colls[0], &models[0]);
        check(&colls[1], &models[1]);
    }
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    (committed, ops_committed)
}

#[test]
fn append_path_equals_per_op_semantics() {
    let strategy = proptest::collection::vec((any::<bool>(), proptest::collection::vec(op(), 0..260), fault()), 1..10);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(24));
    let (batches, ops) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    runner
        .run(&strategy, |case| {
            let (b, o) = run_case(case);
            batches.set(batches.get() + b);
            ops.set(ops.get() + o);
            Ok(())
        })
        .unwrap();
    let (batches, ops) = (batches.get(), ops.get());
    // The comparison means something only if many batches (of many ops) were committed.
    assert!(batches >= 48 && ops >= 48 * 64, "{batches} batches, {ops} ops committed");
}

/// The append path's own case at size: 20 batches of 5,000 ascending keys, every fifth
/// batch also upserting and deleting earlier keys; each key keeps its row and sketch.
#[test]
fn ascending_batches_keep_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let params = SketchParams::minhash(16, 64, 5).unwrap();
    let c = db.create_collection("seq", CollectionConfig::new(params)).unwrap();
    let mut m = Model::default();
    for b in 0..20u64 {
        let mut ops: Vec<(u8, Vec<u8>, u64)> =
            (b * 5000..(b + 1) * 5000).map(|i| (0, i.to_be_bytes().to_vec(), i)).collect();
        if b % 5 == 4 {
            ops.push((1, (b * 1000).to_be_bytes().to_vec(), 7));
            ops.push((2, (b * 1000 + 1).to_be_bytes().to_vec(), 0));
        }
        let mut batch = Batch::new();
        for (kind, key, s) in &ops {
            match kind {
                0 => batch.insert(key, sketch(&c, *s)),
                1 => batch.upsert(key, sketch(&c, *s)),
                _ => batch.delete(key),
            };
        }
        c.apply(&batch).unwrap();
        m = expected(&m, &ops).unwrap();
    }
    check(&c, &m);
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
}
