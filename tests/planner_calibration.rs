//! Calibration measures the cost constants, stores them in the database, and the planner
//! uses them after reopening.

use sketchdb::plan::{Stats as PlannerStats, *};
use sketchdb::*;

#[test]
fn calibration_is_stored_and_used_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let db = Database::create(&path).unwrap();
    assert!(!db.cost_model().unwrap().calibrated);
    let coll = db.create_collection("o", CollectionConfig::new(SketchParams::oph(64, 8, 1).unwrap())).unwrap();
    coll.insert_tokens("a", &TokenSet::from_unsorted((0..50).collect())).unwrap();
    let m = db.calibrate().unwrap();
    for v in [m.decode_per_slot, m.bin_compare, m.fingerprint_compare, m.lookup, m.verify_per_slot] {
        assert!(v.is_finite() && v > 0.0, "{m:?}");
    }
    drop(coll);
    drop(db);
    let db = Database::open(&path).unwrap();
    assert_eq!(db.cost_model().unwrap(), m);
    let coll = db.collection("o").unwrap();
    let q = coll.sketch_of("a").unwrap();
    let e = coll.explain(&Query::threshold(q, 0.5), false).unwrap();
    assert!(e.choice.reason.contains("calibrated costs"), "{}", e.choice.reason);
}

#[test]
fn choose_is_pure_and_prefers_the_cheaper_path() {
    let sk = Sketcher::new(SketchParams::oph(128, 8, 1).unwrap()).unwrap();
    let q = sk.sketch(&TokenSet::from_unsorted((0..100).collect())).unwrap();
    let stats = PlannerStats {
        live: 1_000_000,
        deleted: 0,
        kind: SketchKind::Oph,
        slots: 128,
        bits: 8,
        lsh: None,
        simhash: None,
        banding: BandingPurpose::Estimated,
    };
    let costs = CostModel::default();
    let query = Query::threshold(q.clone(), 0.9);
    let a = choose(&query, &stats, &costs);
    assert_eq!(a, choose(&query, &stats, &costs), "same inputs, same choice");
    assert_eq!(a.plan.access.kind(), PlanKind::OphBinScan);
    // Forcing reports the forced plan but still costs every alternative.
    let forced = Query { options: QueryOptions { force: Some(PlanKind::FullScan), ..Default::default() }, ..query };
    let f = choose(&forced, &stats, &costs);
    assert_eq!(f.plan.access.kind(), PlanKind::FullScan);
    assert_eq!(f.alternatives.len(), 4);
    // A Hamming query is not eligible for an OPH collection's bin scan.
    let h = choose(&Query::hamming(q, 3), &stats, &costs);
    assert!(h.alternatives.iter().all(|a| a.cost_ns.is_none() || a.plan.access.kind() == PlanKind::FullScan));
}
