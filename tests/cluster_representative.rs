//! Dedup's representative clustering: every cluster satisfies its stated invariant (each
//! member is a verified pair with the cluster's representative: its estimate reaches the
//! threshold), clusters are disjoint, each lies inside one connected component, and a chain
//! of near-duplicates that components merge is split.

use std::collections::BTreeSet;

use sketchdb::{Batch, Clustering, CollectionConfig, Database, QueryKind, QueryOptions, SketchParams, TokenSet};

/// Families of sets drifting from a base: member m of a family has the first 12 m tokens of
/// the base replaced (by the same tokens in every member), so members m and m + 1 have
/// J = 88 / 112, m and m + 2 J = 76 / 124, and the chain's ends J = 40 / 160.
fn chains(families: u64, per: u64) -> Vec<(String, TokenSet)> {
    let mut out = Vec::new();
    for f in 0..families {
        let base: Vec<u64> = (0..100).map(|t| f * 1_000_000 + t).collect();
        for m in 0..per {
            let mut v = base.clone();
            for (i, t) in v.iter_mut().enumerate().take((12 * m) as usize) {
                *t = f * 1_000_000 + 500_000 + i as u64;
            }
            out.push((format!("f{f}-m{m}"), TokenSet::from_unsorted(v)));
        }
    }
    out
}

#[test]
fn every_cluster_reaches_its_representative_and_chains_split() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("c.sketchdb")).unwrap();
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::bbit(512, 8, 4).unwrap())).unwrap();
    let mut batch = Batch::new();
    for (key, set) in chains(30, 6) {
        batch.insert(&key, c.sketcher().sketch(&set).unwrap());
    }
    c.apply(&batch).unwrap();
    for t in [0.6, 0.75, 0.85] {
        for options in [QueryOptions::default(), QueryOptions { exact: true, ..QueryOptions::default() }] {
            let comps = c.dedup_clustered(QueryKind::Threshold(t), options, Clustering::Components).unwrap();
            let stars = c.dedup_clustered(QueryKind::Threshold(t), options, Clustering::Representative).unwrap();
            assert_eq!(comps.pairs, stars.pairs, "same verified pairs");
            assert!(comps.clusters.iter().all(|c| c.representative.is_none()));
            let mut seen = BTreeSet::new();
            for s in &stars.clusters {
                let rep = s.representative.expect("a representative");
                let at = s.rows.iter().position(|&r| r == rep).expect("the representative is a member");
                for (k, &row) in s.keys.iter().zip(&s.rows) {
                    assert!(seen.insert(row), "row {row} in two clusters");
                    if row != rep {
                        let e = c.estimate(&s.keys[at], k, 0.95).unwrap();
                        assert!(e.value >= t, "t {t}: member {k:?} estimate {} with its representative", e.value);
                    }
                }
                assert!(comps.clusters.iter().any(|c| s.rows.iter().all(|r| c.rows.contains(r))));
            }
            // At t = 0.6 each family's chain is one component (neighbours J = 0.79), but no
            // member reaches all five others (J <= 0.47 three steps apart): no star holds six.
            if t == 0.6 {
                assert!(comps.clusters.iter().any(|c| c.rows.len() == 6));
                assert!(stars.clusters.iter().all(|c| c.rows.len() < 6));
            }
        }
    }
}
