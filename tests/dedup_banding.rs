//! Dedup without an index joins in memory: set sketches are banded (the same candidate pairs
//! as the self-join over a persisted LSH index with the same banding, every pair verified),
//! SimHash fingerprints go through in-memory permuted tables (exact: brute force pairs); and
//! the planner's choice between these and probing every record.

mod common;

use std::collections::BTreeSet;

use common::Rng;
use sketchdb::lsh::*;
use sketchdb::plan::{Stats as PlannerStats, *};
use sketchdb::*;

/// Near-copies of a few base sets: clusters of similar records among unrelated ones.
fn records(rng: &mut Rng, n: usize) -> Vec<(String, TokenSet)> {
    let bases: Vec<Vec<u64>> = (0..25).map(|_| (0..rng.range(50, 300)).map(|_| rng.next_u64()).collect()).collect();
    (0..n)
        .map(|i| {
            let mut t: Vec<u64> = if i % 3 == 0 {
                (0..rng.range(20, 200)).map(|_| rng.next_u64()).collect()
            } else {
                let base = &bases[i % bases.len()];
                let keep = rng.range(80, 100);
                base.iter().copied().filter(|_| rng.range(0, 99) < keep).collect()
            };
            t.extend((0..rng.range(0, 6)).map(|_| rng.next_u64()));
            t.push(rng.next_u64());
            (format!("k{i}"), TokenSet::from_unsorted(t))
        })
        .collect()
}

/// Loads `recs` in three batches, the last deleting every seventh key and replacing every
/// eleventh: the join must skip deleted rows and see replaced ones once.
fn load(coll: &Collection, recs: &[(String, TokenSet)]) {
    let third = recs.len() / 3;
    for part in [&recs[..third], &recs[third..2 * third], &recs[2 * third..]] {
        let mut b = Batch::new();
        for (k, t) in part {
            b.insert(k, coll.sketcher().sketch(t).unwrap());
        }
        coll.apply(&b).unwrap();
    }
    let mut b = Batch::new();
    for (i, (k, t)) in recs.iter().enumerate() {
        if i % 7 == 3 {
            b.delete(k);
        } else if i % 11 == 5 {
            let mut v: Vec<u64> = t.as_slice().to_vec();
            v.pop();
            b.upsert(k, coll.sketcher().sketch(&TokenSet::from_unsorted(v)).unwrap());
        }
    }
    coll.apply(&b).unwrap();
}

fn cluster_rows(d: &DedupResult) -> Vec<Vec<u64>> {
    let mut c: Vec<Vec<u64>> = d.clusters.iter().map(|c| c.rows.clone()).collect();
    c.sort();
    c
}

#[test]
fn banding_in_memory_equals_the_index_self_join_with_the_same_banding() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let recs = records(&mut Rng(41), 1500);
    for (params, t) in [
        (SketchParams::bbit(256, 8, 3).unwrap(), 0.8),
        (SketchParams::minhash(64, 32, 3).unwrap(), 0.6),
        (SketchParams::oph(128, 16, 3).unwrap(), 0.7),
    ] {
        let name = format!("{}-{}", params.kind(), params.bits());
        let plain = db.create_collection(&format!("{name}-plain"), CollectionConfig::new(params)).unwrap();
        let index = IndexConfig::Lsh { threshold: t, bands: None, rows: None };
        let indexed =
            db.create_collection(&format!("{name}-lsh"), CollectionConfig::new(params).with_index(index)).unwrap();
        load(&plain, &recs);
        load(&indexed, &recs);
        let a = plain.dedup(QueryKind::Threshold(t), QueryOptions::default()).unwrap();
        let b = indexed.dedup(QueryKind::Threshold(t), QueryOptions::default()).unwrap();
        let (Some(Access::LshBanding { bands, rows }), Some(Access::LshProbe { bands: index_bands })) =
            (a.plan.map(|p| p.access), b.plan.map(|p| p.access))
        else {
            panic!("{name}: plans {:?} / {:?}", a.plan, b.plan);
        };
        assert_eq!(bands, index_bands, "{name}: the banding an index for t gets");
        assert!(rows >= 1 && bands * rows <= params.slots() as u32);
        assert!(a.pairs > 200, "{name}: the data must plant pairs, got {}", a.pairs);
        assert_eq!(a.pairs, b.pairs, "{name}");
        // EXPLAIN shows the plan dedup ran, without running it.
        for (coll, d) in [(&plain, &a), (&indexed, &b)] {
            let e = coll.explain_dedup(QueryKind::Threshold(t), QueryOptions::default()).unwrap().unwrap();
            assert_eq!(Some(e.choice.plan), d.plan, "{name}");
            assert_eq!(e.choice.reason, d.reason);
            assert!(e.analyze.is_none());
        }
        assert_eq!(cluster_rows(&a), cluster_rows(&b), "{name}");
        // Keys are those of live rows.
        let live: BTreeSet<Vec<u8>> = plain.scan().unwrap().map(|r| r.unwrap().key).collect();
        assert!(a.clusters.iter().flat_map(|c| &c.keys).all(|k| live.contains(k)));
    }
}

/// Banding loses pairs only with the probability its banding states: against the exact
/// self-join (every record probed by an exact plan), its pairs are a subset, and with the
/// default recall target of 0.95 most of them.
#[test]
fn banding_pairs_are_verified_and_recall_is_high() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let coll = db.create_collection("c", CollectionConfig::new(SketchParams::bbit(256, 8, 9).unwrap())).unwrap();
    load(&coll, &records(&mut Rng(5), 900));
    let t = 0.7;
    let banded = coll.dedup(QueryKind::Threshold(t), QueryOptions::default()).unwrap();
    assert!(matches!(banded.plan.map(|p| p.access), Some(Access::LshBanding { .. })), "{:?}", banded.plan);
    let exact = coll.dedup(QueryKind::Threshold(t), QueryOptions { exact: true, ..Default::default() }).unwrap();
    assert!(exact.plan.is_some_and(|p| p.access.is_exact()), "{:?}", exact.plan);
    assert!(exact.pairs > 200, "{}", exact.pairs);
    assert!(banded.pairs <= exact.pairs);
    assert!(banded.pairs as f64 >= 0.9 * exact.pairs as f64, "{} of {}", banded.pairs, exact.pairs);
    // Every banded cluster lies inside one exact cluster (its pairs are exact pairs).
    let exact_of: std::collections::HashMap<u64, usize> =
        exact.clusters.iter().enumerate().flat_map(|(i, c)| c.rows.iter().map(move |&r| (r, i))).collect();
    for c in &banded.clusters {
        let home: BTreeSet<Option<&usize>> = c.rows.iter().map(|r| exact_of.get(r)).collect();
        assert_eq!(home.len(), 1, "{c:?}");
        assert!(!home.contains(&None));
    }
}

fn stats(live: u64, kind: SketchKind, slots: usize, bits: u8) -> PlannerStats {
    PlannerStats { live, deleted: 0, kind, slots, bits, lsh: None, simhash: None, banding: BandingPurpose::Estimated }
}

#[test]
fn the_planner_bands_in_memory_unless_exactness_a_forced_plan_or_size_says_otherwise() {
    let sk = Sketcher::new(SketchParams::bbit(512, 8, 1).unwrap()).unwrap();
    let probe = sk.sketch(&TokenSet::from_unsorted((0..100).collect())).unwrap();
    let costs = CostModel::default();
    let q = |options: QueryOptions| Query::threshold(probe.clone(), 0.8).with_options(options);
    let big = stats(1_000_000, SketchKind::BBitMinHash, 512, 8);
    let access = |s: &PlannerStats, o: QueryOptions| choose_dedup(&q(o), s, &costs).plan.access;
    let c = choose_dedup(&q(QueryOptions::default()), &big, &costs);
    assert!(matches!(c.plan.access, Access::LshBanding { bands: 39, rows: 13 }), "{c:?}");
    assert_eq!(c, choose_dedup(&q(QueryOptions::default()), &big, &costs), "pure");
    assert!(c.alternatives.iter().any(|a| a.plan.access == Access::FullScan && a.cost_ns.is_some()));
    // Exact answers and other forced plans probe every record.
    assert_eq!(access(&big, QueryOptions { exact: true, ..Default::default() }), Access::FullScan);
    let forced = |k| QueryOptions { force: Some(k), ..Default::default() };
    assert_eq!(access(&big, forced(PlanKind::FullScan)), Access::FullScan);
    assert!(matches!(access(&big, forced(PlanKind::LshProbe)), Access::LshBanding { .. }));
    // A recall target the banding cannot promise.
    let strict = QueryOptions { recall_target: 0.999, ..Default::default() };
    assert_eq!(access(&big, strict), Access::FullScan);
    // One record: probing it once costs less than banding.
    assert_eq!(access(&stats(1, SketchKind::BBitMinHash, 512, 8), QueryOptions::default()), Access::FullScan);
    // An eligible LSH index is joined directly.
    let params = LshParams { bands: 39, rows: 13 };
    let indexed = PlannerStats { lsh: Some(LshStats { params, mean_hit_bucket: 2.0, runs: 1 }), ..big };
    assert_eq!(access(&indexed, QueryOptions::default()), Access::LshProbe { bands: 39 });
    // SimHash: tables covering the radius, else tables built in memory (every record
    // probed only when forced or tiny).
    let fp = Sketcher::new(SketchParams::simhash(64, 1).unwrap()).unwrap();
    let fq = Query::hamming(fp.sketch(&TokenSet::from_unsorted((0..9).collect())).unwrap(), 3);
    let sh = stats(1_000_000, SketchKind::SimHash, 1, 64);
    assert_eq!(choose_dedup(&fq, &sh, &costs).plan.access, Access::SimhashInMemory { tables: 4 });
    let forced_scan = fq.clone().with_options(QueryOptions { force: Some(PlanKind::FullScan), ..Default::default() });
    assert_eq!(choose_dedup(&forced_scan, &sh, &costs).plan.access, Access::FullScan);
    let tiny = stats(1, SketchKind::SimHash, 1, 64);
    assert_eq!(choose_dedup(&fq, &tiny, &costs).plan.access, Access::FullScan);
    let tables = SimhashStats { tables: 4, radius: 3, prefix_bits: 16, runs: 1 };
    let sh = PlannerStats { simhash: Some(tables), ..sh };
    assert_eq!(choose_dedup(&fq, &sh, &costs).plan.access, Access::SimhashProbe { tables: 4 });
}

/// Without tables, a Hamming dedup builds them in memory: exactly the pairs within the radius
/// (brute force over every pair; distance exactly k and identical fingerprints included),
/// and the same result as the persisted tables' self-join.
#[test]
fn simhash_dedup_in_memory_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    for bits in [64u8, 128] {
        let params = SketchParams::simhash(bits, 1).unwrap();
        let plain = db.create_collection(&format!("plain{bits}"), CollectionConfig::new(params)).unwrap();
        let tables = IndexConfig::SimhashTables { radius: 3 };
        let indexed =
            db.create_collection(&format!("tables{bits}"), CollectionConfig::new(params).with_index(tables)).unwrap();
        let mut rng = Rng(u64::from(bits));
        let mask = if bits == 64 { u128::from(u64::MAX) } else { u128::MAX };
        let mut fps: Vec<u128> = Vec::new();
        for _ in 0..150 {
            let base = (u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64())) & mask;
            fps.push(base);
            // Neighbours at distance 0..=4 (4 is outside the radius).
            for d in 0..rng.range(0, 5) {
                let mut x = base;
                for _ in 0..d {
                    x ^= 1u128 << rng.range(0, u64::from(bits) - 1);
                }
                fps.push(x);
            }
        }
        let mut b = Batch::new();
        for (i, &x) in fps.iter().enumerate() {
            b.insert(format!("f{i}"), Sketch::SimHash(SimHash::from_parts(params, x).unwrap()));
        }
        plain.apply(&b).unwrap();
        indexed.apply(&b).unwrap();
        let mut del = Batch::new();
        for i in (0..fps.len()).filter(|i| i % 9 == 4) {
            del.delete(format!("f{i}"));
        }
        plain.apply(&del).unwrap();
        indexed.apply(&del).unwrap();
        for radius in [0, 2, 3] {
            let a = plain.dedup(QueryKind::Hamming(radius), QueryOptions::default()).unwrap();
            assert!(matches!(a.plan.map(|p| p.access), Some(Access::SimhashInMemory { .. })), "{:?}", a.plan);
            let b = indexed.dedup(QueryKind::Hamming(radius), QueryOptions::default()).unwrap();
            assert!(matches!(b.plan.map(|p| p.access), Some(Access::SimhashProbe { .. })), "{:?}", b.plan);
            let live: Vec<(u64, u128)> = plain
                .scan()
                .unwrap()
                .map(|r| r.unwrap())
                .map(|r| match r.sketch {
                    Sketch::SimHash(h) => (r.row_id, h.value()),
                    _ => unreachable!(),
                })
                .collect();
            let mut want = 0u64;
            for (i, x) in live.iter().enumerate() {
                for y in &live[i + 1..] {
                    if (x.1 ^ y.1).count_ones() <= radius {
                        want += 1;
                    }
                }
            }
            assert!(want > 50, "bits {bits} radius {radius}: planted pairs {want}");
            assert_eq!(a.pairs, want, "bits {bits} radius {radius}");
            assert_eq!(b.pairs, want);
            assert_eq!(cluster_rows(&a), cluster_rows(&b), "bits {bits} radius {radius}");
        }
    }
}

#[test]
fn explain_dedup_of_an_empty_collection_or_a_bad_question() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let coll = db.create_collection("c", CollectionConfig::new(SketchParams::bbit(64, 8, 1).unwrap())).unwrap();
    assert!(coll.explain_dedup(QueryKind::Threshold(0.8), QueryOptions::default()).unwrap().is_none());
    // Every record deleted: still nothing to join.
    let mut b = Batch::new();
    b.insert("x", coll.sketcher().sketch(&TokenSet::from_unsorted(vec![1, 2, 3])).unwrap());
    coll.apply(&b).unwrap();
    assert!(coll.explain_dedup(QueryKind::Threshold(0.8), QueryOptions::default()).unwrap().is_some());
    coll.delete("x").unwrap();
    assert!(coll.explain_dedup(QueryKind::Threshold(0.8), QueryOptions::default()).unwrap().is_none());
    assert!(coll.explain_dedup(QueryKind::TopK(3), QueryOptions::default()).is_err());
    assert!(coll.explain_dedup(QueryKind::Threshold(1.5), QueryOptions::default()).is_err());
}
