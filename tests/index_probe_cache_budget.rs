//! The probe cache budget (per database): with no
//! budget nothing is kept and the answers are the same; with a budget the caches hold at most
//! that; lowering it lets the caches go.

use sketchdb::{
    Batch, CollectionConfig, Database, IndexConfig, SimHash, Sketch, SketchParams, Sketcher, TokenSet, testing,
};

#[test]
fn the_budget_bounds_what_probes_keep_and_never_changes_answers() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let params = SketchParams::minhash(16, 64, 3).expect("p");
    let sk = Sketcher::new(params).expect("sk");
    let lsh = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let sets = db.create_collection("s", CollectionConfig::new(params).with_index(lsh)).expect("collection");
    let sketch = |base: u64| sk.sketch(&TokenSet::from_unsorted((base..base + 40).collect())).expect("sketch");
    let mut b = Batch::new();
    for i in 0..400u64 {
        b.insert(format!("k{i}"), sketch(1000 * i));
    }
    sets.apply(&b).expect("insert");
    let fp_params = SketchParams::simhash(64, 1).expect("p");
    let tables = IndexConfig::SimhashTables { radius: 3 };
    let fps = db.create_collection("f", CollectionConfig::new(fp_params).with_index(tables)).expect("collection");
    let fp = |v: u64| Sketch::SimHash(SimHash::from_parts(fp_params, u128::from(v)).expect("fp"));
    let mut b = Batch::new();
    for i in 0..400u64 {
        b.insert(format!("f{i}"), fp(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }
    fps.apply(&b).expect("insert");

    let probes: Vec<Sketch> = (0..50u64).map(|i| sketch(1000 * i + 3)).collect();
    let answers = |db: &Database| -> Vec<Vec<u64>> {
        let mut out: Vec<Vec<u64>> =
            probes.iter().map(|p| testing::lsh_candidates(&sets, db, p, 4).expect("probe")).collect();
        for i in 0..50u64 {
            let q = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0b1011;
            let hits = testing::simhash_within(&fps, db, u128::from(q), 3).expect("radius");
            out.push(hits.into_iter().map(|(row, _)| row).collect());
        }
        out
    };

    assert_eq!(db.probe_cache_budget(), 1 << 30);
    db.set_probe_cache_budget(0);
    assert_eq!(db.probe_cache_held(), 0);
    let uncached = answers(&db);
    assert_eq!(db.probe_cache_held(), 0, "nothing is kept without a budget");
    assert!(uncached.iter().any(|a| !a.is_empty()), "the probes find rows");

    db.set_probe_cache_budget(1 << 20);
    assert_eq!(answers(&db), uncached);
    let held = db.probe_cache_held();
    assert!(held > 0 && held <= 1 << 20, "held {held}");
    assert_eq!(answers(&db), uncached, "answers from the cache");

    // A budget below what is held lets the caches go.
    db.set_probe_cache_budget(held / 2);
    assert_eq!(db.probe_cache_held(), 0);
    assert_eq!(answers(&db), uncached);
    assert!(db.probe_cache_held() <= held / 2);
}
