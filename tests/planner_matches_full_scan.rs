//! Every exact plan returns the same results as the full scan, on random collections with
//! deletes; forced plans, top-k and Hamming queries included.

mod common;

use common::Rng;
use proptest::prelude::*;
use sketchdb::plan::*;
use sketchdb::*;

fn tokens(rng: &mut Rng, base: &[u64], keep: u64, extra: usize) -> TokenSet {
    let mut t: Vec<u64> = base.iter().copied().filter(|_| rng.range(0, 99) < keep).collect();
    t.extend((0..extra).map(|_| rng.next_u64()));
    if t.is_empty() {
        t.push(rng.next_u64());
    }
    TokenSet::from_unsorted(t)
}

/// A collection of `n` records drawn around a few base sets, a quarter of them deleted.
fn build(db: &Database, name: &str, params: SketchParams, n: usize, seed: u64) -> (Collection, Vec<TokenSet>) {
    let coll = db.create_collection(name, CollectionConfig::new(params)).unwrap();
    let mut rng = Rng(seed);
    let bases: Vec<Vec<u64>> = (0..4).map(|_| (0..rng.range(20, 400)).map(|_| rng.next_u64()).collect()).collect();
    let mut batch = Batch::new();
    let mut sets = Vec::new();
    for i in 0..n {
        let b = &bases[i % bases.len()];
        let keep = rng.range(0, 100);
        let extra = rng.range(0, 150) as usize;
        let set = tokens(&mut rng, b, keep, extra);
        batch.insert(format!("k{i}"), coll.sketcher().sketch(&set).unwrap());
        sets.push(set);
    }
    coll.apply(&batch).unwrap();
    let mut del = Batch::new();
    for i in (0..n).filter(|i| i % 4 == 1) {
        del.delete(format!("k{i}"));
    }
    coll.apply(&del).unwrap();
    (coll, sets)
}

fn forced(kind: PlanKind, exact: bool) -> QueryOptions {
    QueryOptions { force: Some(kind), exact, ..QueryOptions::default() }
}

fn summary(r: &QueryResult) -> Vec<(Vec<u8>, u64)> {
    r.hits.iter().map(|h| (h.key.clone(), h.estimate.value.to_bits())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn column_scans_equal_full_scan(seed in any::<u64>(), n in 1usize..400, t in 0.0f64..1.0, k in 1usize..20,
                                     bits in prop::sample::select(vec![8u8, 16, 32])) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("p.db")).unwrap();
        let (oph, oph_sets) = build(&db, "oph", SketchParams::oph(128, bits, 5).unwrap(), n, seed);
        let (mh, mh_sets) = build(&db, "mh", SketchParams::minhash(64, 32, 5).unwrap(), n, seed);
        for (coll, sets) in [(oph, oph_sets), (mh, mh_sets)] {
        let q = coll.sketcher().sketch(&sets[seed as usize % sets.len()]).unwrap();
        for kind in [QueryKind::Threshold(t), QueryKind::TopK(k)] {
            let full = coll.query(&Query { sketch: q.clone(), kind, options: forced(PlanKind::FullScan, true) }).unwrap();
            let scan = coll.query(&Query { sketch: q.clone(), kind, options: forced(PlanKind::OphBinScan, true) }).unwrap();
            prop_assert_eq!(scan.plan.access.kind(), PlanKind::OphBinScan);
            prop_assert_eq!(summary(&full), summary(&scan));
            // The planner's own choice (exact) agrees too.
            let auto = coll.query(&Query { sketch: q.clone(), kind, options: QueryOptions { exact: true, ..Default::default() } }).unwrap();
            prop_assert_eq!(summary(&auto), summary(&full));
            // Approximate early termination returns a subset, every member over the bar.
            if let QueryKind::Threshold(th) = kind {
                let fast = coll.query(&Query { sketch: q.clone(), kind, options: forced(PlanKind::OphBinScan, false) }).unwrap();
                for h in &fast.hits {
                    prop_assert!(h.estimate.value >= th);
                    prop_assert!(summary(&full).contains(&(h.key.clone(), h.estimate.value.to_bits())));
                }
            }
        }
        }
    }
}

#[test]
fn full_scan_matches_brute_force_for_every_set_kind() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("b.db")).unwrap();
    for (name, params) in [
        ("mh", SketchParams::minhash(64, 32, 1).unwrap()),
        ("bb", SketchParams::bbit(128, 4, 1).unwrap()),
        ("op", SketchParams::oph(64, 16, 1).unwrap()),
    ] {
        let (coll, sets) = build(&db, name, params, 200, 99);
        let sk = coll.sketcher().clone();
        let q = sk.sketch(&sets[3]).unwrap();
        let got = coll.query(&Query::threshold(q.clone(), 0.3)).unwrap();
        let mut want: Vec<(String, f64)> = (0..sets.len())
            .filter(|i| i % 4 != 1)
            .map(|i| (format!("k{i}"), q.similarity(&sk.sketch(&sets[i]).unwrap(), 0.95).unwrap().value))
            .filter(|(_, v)| *v >= 0.3)
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut got: Vec<(String, f64)> =
            got.hits.iter().map(|h| (h.key_str().unwrap().to_string(), h.estimate.value)).collect();
        got.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        assert_eq!(got, want, "{name}");
        assert!(!got.is_empty());
    }
}

#[test]
fn hamming_scan_keeps_distance_k_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("h.db")).unwrap();
    let params = SketchParams::simhash(64, 0).unwrap();
    let coll = db.create_collection("fp", CollectionConfig::new(params)).unwrap();
    let mut rng = Rng(5);
    let q: u64 = rng.next_u64();
    let mut batch = Batch::new();
    let mut want = Vec::new();
    for i in 0..500u64 {
        let fp = match i % 10 {
            0 => q,                                        // identical duplicates
            1 => q ^ 0b111,                                // exactly distance 3
            2 => q ^ (1 << 63) ^ (1 << 1) ^ (1 << 17) ^ 1, // distance 4: excluded
            _ => rng.next_u64(),
        };
        let d = (fp ^ q).count_ones();
        if d <= 3 {
            want.push((d, i));
        }
        batch.insert(format!("{i}"), Sketch::SimHash(SimHash::from_parts(params, u128::from(fp)).unwrap()));
    }
    coll.apply(&batch).unwrap();
    let query = Sketch::SimHash(SimHash::from_parts(params, u128::from(q)).unwrap());
    let r = coll.query(&Query::hamming(query, 3)).unwrap();
    let got: Vec<(u32, u64)> =
        r.hits.iter().map(|h| (h.distance.unwrap(), h.key_str().unwrap().parse().unwrap())).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(got.iter().filter(|(d, _)| *d == 0).count(), 50);
    assert_eq!(got.iter().filter(|(d, _)| *d == 3).count(), 50);
}

#[test]
fn bad_queries_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("e.db")).unwrap();
    let (coll, sets) = build(&db, "mh", SketchParams::minhash(32, 32, 1).unwrap(), 10, 1);
    let q = coll.sketcher().sketch(&sets[0]).unwrap();
    let err = |r: Result<QueryResult>| match r.unwrap_err() {
        Error::Query(e) => e,
        other => panic!("expected a query error, got {other:?}"),
    };
    assert!(matches!(
        err(coll.query(&Query::threshold(q.clone(), 1.5))),
        QueryError::InvalidParam { param: "threshold", .. }
    ));
    assert!(matches!(err(coll.query(&Query::top_k(q.clone(), 0))), QueryError::InvalidParam { param: "k", .. }));
    assert!(matches!(err(coll.query(&Query::hamming(q.clone(), 3))), QueryError::Unsupported { .. }));
    assert!(matches!(
        err(coll.query_key("nope", QueryKind::Threshold(0.5), QueryOptions::default())),
        QueryError::UnknownKey { .. }
    ));
    let other = Sketcher::new(SketchParams::minhash(32, 32, 2).unwrap()).unwrap().sketch(&sets[0]).unwrap();
    assert!(matches!(
        coll.query(&Query::threshold(other, 0.5)).unwrap_err(),
        Error::Sketch(SketchError::Incompatible { field: "seed", .. })
    ));
}

#[test]
fn dedup_clusters_are_connected_components_of_verified_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let (coll, _) = build(&db, "oph", SketchParams::oph(128, 16, 3).unwrap(), 300, 17);
    let t = 0.6;
    let d = coll.dedup(QueryKind::Threshold(t), QueryOptions { exact: true, ..Default::default() }).unwrap();
    // Brute force: all verified pairs, then components by repeated merging.
    let recs: Vec<Record> = coll.scan().unwrap().map(|r| r.unwrap()).collect();
    let mut comp: Vec<usize> = (0..recs.len()).collect();
    let mut pairs = 0;
    for i in 0..recs.len() {
        for j in i + 1..recs.len() {
            if recs[i].sketch.similarity(&recs[j].sketch, 0.95).unwrap().value >= t {
                pairs += 1;
                let (a, b) = (comp[i], comp[j]);
                for c in comp.iter_mut() {
                    if *c == b {
                        *c = a;
                    }
                }
            }
        }
    }
    assert_eq!(d.pairs, pairs);
    let mut want: Vec<Vec<u64>> = Vec::new();
    for c in 0..recs.len() {
        let members: Vec<u64> = (0..recs.len()).filter(|&i| comp[i] == c).map(|i| recs[i].row_id).collect();
        if members.len() > 1 {
            want.push(members);
        }
    }
    let mut got: Vec<Vec<u64>> = d.clusters.iter().map(|c| c.rows.clone()).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert!(!got.is_empty());
}

/// Dedup by an LSH plan joins over the buckets in one pass; its pairs must be exactly the
/// verified pairs among each record's own LSH candidates (what probing every record finds),
/// across deletes and upserts.
#[test]
fn lsh_dedup_equals_verified_pairs_of_per_record_probes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let params = SketchParams::minhash(64, 32, 5).unwrap();
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(4) };
    let coll = db.create_collection("lsh", CollectionConfig::new(params).with_index(index)).unwrap();
    let mut rng = Rng(99);
    let bases: Vec<Vec<u64>> = (0..6).map(|_| (0..rng.range(20, 300)).map(|_| rng.next_u64()).collect()).collect();
    let mut live = std::collections::BTreeSet::new();
    for round in 0..3 {
        let mut batch = Batch::new();
        for i in 0..200 {
            let b = &bases[(i + round) % bases.len()];
            let (keep, extra) = (rng.range(40, 100), rng.range(0, 40) as usize);
            let set = tokens(&mut rng, b, keep, extra);
            let key = format!("k{}", (i * 7 + round * 50) % 400);
            batch.upsert(&key, coll.sketcher().sketch(&set).unwrap());
            live.insert(key);
        }
        for i in (0..400).filter(|i| i % 11 == round) {
            if live.remove(&format!("k{i}")) {
                batch.delete(format!("k{i}"));
            }
        }
        coll.apply(&batch).unwrap();
    }
    let t = 0.6;
    let options = forced(PlanKind::LshProbe, false);
    let d = coll.dedup(QueryKind::Threshold(t), options).unwrap();
    assert!(matches!(d.plan.map(|p| p.access), Some(Access::LshProbe { .. })), "{:?}", d.plan);
    let recs: Vec<Record> = coll.scan().unwrap().map(|r| r.unwrap()).collect();
    let by_row: std::collections::HashMap<u64, &Record> = recs.iter().map(|r| (r.row_id, r)).collect();
    let mut want_pairs = std::collections::BTreeSet::new();
    for r in &recs {
        for c in sketchdb::testing::lsh_candidates(&coll, &db, &r.sketch, u32::MAX).unwrap() {
            let other = by_row[&c];
            if c > r.row_id && r.sketch.similarity(&other.sketch, 0.95).unwrap().value >= t {
                want_pairs.insert((r.row_id, c));
            }
        }
    }
    assert_eq!(d.pairs, want_pairs.len() as u64);
    assert!(d.pairs > 50, "the data must plant pairs: {}", d.pairs);
    // Components of the expected pairs.
    let mut comp: std::collections::HashMap<u64, u64> = recs.iter().map(|r| (r.row_id, r.row_id)).collect();
    for &(a, b) in &want_pairs {
        let (ca, cb) = (comp[&a], comp[&b]);
        if ca != cb {
            let (lo, hi) = (ca.min(cb), ca.max(cb));
            comp.values_mut().filter(|c| **c == hi).for_each(|c| *c = lo);
        }
    }
    let mut want: std::collections::BTreeMap<u64, Vec<u64>> = std::collections::BTreeMap::new();
    for (row, c) in comp {
        want.entry(c).or_default().push(row);
    }
    let mut want: Vec<Vec<u64>> = want
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|mut g| {
            g.sort_unstable();
            g
        })
        .collect();
    let mut got: Vec<Vec<u64>> = d.clusters.iter().map(|c| c.rows.clone()).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

/// Identical signatures share a bucket in every band: the self-join must pass each of their
/// pairs on once (m(m-1)/2 pairs), not once per band.
#[test]
fn lsh_dedup_counts_pairs_of_identical_records_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let params = SketchParams::minhash(64, 32, 5).unwrap();
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(4) };
    let coll = db.create_collection("dup", CollectionConfig::new(params).with_index(index)).unwrap();
    let mut rng = Rng(7);
    let same: Vec<u64> = (0..200).map(|_| rng.next_u64()).collect();
    let mut batch = Batch::new();
    for i in 0..40 {
        batch.insert(format!("same{i}"), coll.sketcher().sketch(&TokenSet::from_unsorted(same.clone())).unwrap());
    }
    for i in 0..40 {
        let other: Vec<u64> = (0..200).map(|_| rng.next_u64()).collect();
        batch.insert(format!("other{i}"), coll.sketcher().sketch(&TokenSet::from_unsorted(other)).unwrap());
    }
    coll.apply(&batch).unwrap();
    let d = coll.dedup(QueryKind::Threshold(0.9), forced(PlanKind::LshProbe, false)).unwrap();
    assert!(matches!(d.plan.map(|p| p.access), Some(Access::LshProbe { bands: 16 })), "{:?}", d.plan);
    assert_eq!(d.pairs, 40 * 39 / 2);
    assert_eq!(d.clusters.len(), 1);
    assert_eq!(d.clusters[0].rows.len(), 40);
    assert!(d.clusters[0].keys.iter().all(|k| k.starts_with(b"same")));
}

/// Bad questions and options are typed errors on every path, dedup's join included.
#[test]
fn bad_thresholds_and_levels_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("d.db")).unwrap();
    let (coll, sets) = build(&db, "oph", SketchParams::oph(128, 8, 3).unwrap(), 50, 3);
    let q = coll.sketcher().sketch(&sets[0]).unwrap();
    for level in [f64::NAN, 0.0, 1.0, -0.5, f64::INFINITY] {
        let options = QueryOptions { level, ..QueryOptions::default() };
        let e = coll.query(&Query::threshold(q.clone(), 0.5).with_options(options)).unwrap_err();
        assert!(e.to_string().contains("level"), "{e}");
        assert!(coll.dedup(QueryKind::Threshold(0.5), options).unwrap_err().to_string().contains("level"));
    }
    for t in [1.5, -0.1, f64::NAN] {
        let e = coll.dedup(QueryKind::Threshold(t), QueryOptions::default()).unwrap_err();
        assert!(e.to_string().contains("threshold"), "{e}");
    }
    let options = QueryOptions { recall_target: f64::NAN, ..QueryOptions::default() };
    assert!(coll.query(&Query::threshold(q, 0.5).with_options(options)).unwrap_err().to_string().contains("recall"));
}
