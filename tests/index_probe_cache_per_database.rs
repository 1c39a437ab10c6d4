//! Two databases in one process have independent probe caches: each its own budget and held
//! bytes; filling one neither evicts nor counts against the other.

use sketchdb::{Batch, Collection, CollectionConfig, Database, IndexConfig, SketchParams, Sketcher, TokenSet, testing};

fn lsh_db(dir: &std::path::Path) -> (Database, Collection, Sketcher) {
    let db = Database::create(dir).expect("create");
    let params = SketchParams::minhash(16, 64, 3).expect("p");
    let sk = Sketcher::new(params).expect("sk");
    let lsh = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(lsh)).expect("collection");
    let mut b = Batch::new();
    for i in 0..300u64 {
        let base = 1000 * i;
        b.insert(format!("k{i}"), sk.sketch(&TokenSet::from_unsorted((base..base + 40).collect())).expect("sketch"));
    }
    c.apply(&b).expect("insert");
    (db, c, sk)
}

fn probe(db: &Database, c: &Collection, sk: &Sketcher) -> Vec<Vec<u64>> {
    (0..40u64)
        .map(|i| {
            let base = 1000 * i + 3;
            let s = sk.sketch(&TokenSet::from_unsorted((base..base + 40).collect())).expect("sketch");
            testing::lsh_candidates(c, db, &s, 4).expect("probe")
        })
        .collect()
}

#[test]
fn two_databases_have_independent_probe_caches() {
    let dir = tempfile::tempdir().expect("dir");
    let (a, ca, ska) = lsh_db(&dir.path().join("a"));
    let (b, cb, skb) = lsh_db(&dir.path().join("b"));
    a.set_probe_cache_budget(1 << 20);
    b.set_probe_cache_budget(1 << 21);
    assert_eq!((a.probe_cache_budget(), b.probe_cache_budget()), (1 << 20, 1 << 21));
    assert_eq!((a.probe_cache_held(), b.probe_cache_held()), (0, 0));

    let answers_a = probe(&a, &ca, &ska);
    let held_a = a.probe_cache_held();
    assert!(held_a > 0 && held_a <= 1 << 20, "held {held_a}");
    assert_eq!(b.probe_cache_held(), 0, "probing one database fills only its cache");

    let answers_b = probe(&b, &cb, &skb);
    let held_b = b.probe_cache_held();
    assert!(held_b > 0 && held_b <= 1 << 21, "held {held_b}");
    assert_eq!(a.probe_cache_held(), held_a, "filling the other database's cache evicts nothing here");
    assert_eq!(answers_a, answers_b, "the same rows, the same answers");

    // Letting one database's caches go leaves the other's budget and bytes alone.
    a.set_probe_cache_budget(0);
    assert_eq!(a.probe_cache_held(), 0);
    assert_eq!((b.probe_cache_budget(), b.probe_cache_held()), (1 << 21, held_b));
    assert_eq!(probe(&a, &ca, &ska), answers_a);
    assert_eq!(a.probe_cache_held(), 0, "nothing is kept without a budget");
    assert_eq!(probe(&b, &cb, &skb), answers_b, "answers from the cache");
    assert_eq!(b.probe_cache_held(), held_b, "the repeated probes read what b keeps");
}
