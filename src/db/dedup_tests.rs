//! The dedup join holds OPH sketches in columns: its results equal those of the same join
//! over the sketches held one per record (the path of the other kinds), on every plan that
//! reads them, for every bin width and on any number of threads.

use super::database::Database;
use crate::db::batch::Batch;
use crate::db::collection::Collection;
use crate::db::config::{CollectionConfig, IndexConfig};
use crate::planner::cluster::Clustering;
use crate::planner::dedup_exec::{DedupResult, dedup_with};
use crate::planner::dedup_load::{Sketches, load};
use crate::planner::query::{QueryKind, QueryOptions};
use crate::sketch::hash::splitmix64;
use crate::sketch::oph::OphSketch;
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::Sketch;
use crate::sketch::tokens::TokenSet;

/// Near-copies of a few base sets among unrelated ones; a fifth of the sets have one to four
/// tokens (most bins empty: densification reaches its fallback), and with `empties` every
/// 97th record is a stored sketch of the empty set (all bins empty, cardinality 0), which
/// an LSH index refuses.
fn fill(coll: &Collection, n: u64, seed: u64, empties: bool) {
    let mut state = seed;
    let bases: Vec<Vec<u64>> =
        (0..12).map(|_| (0..40 + splitmix64(&mut state) % 200).map(|_| splitmix64(&mut state)).collect()).collect();
    let params = *coll.sketcher().params();
    let t = params.slots();
    let empty_set = OphSketch::from_parts(params, vec![0; t], all_empty(t), 0).expect("empty-set sketch");
    let mut b = Batch::new();
    for i in 0..n {
        let r = splitmix64(&mut state);
        let tokens: Vec<u64> = match i % 5 {
            0 => {
                let small = &bases[(r % 3) as usize][..4];
                small.iter().copied().filter(|_| !splitmix64(&mut state).is_multiple_of(4)).chain([small[0]]).collect()
            }
            1 => (0..20 + r % 100).map(|_| splitmix64(&mut state)).collect(),
            _ => {
                let base = &bases[(r % 12) as usize];
                base.iter().copied().filter(|_| !splitmix64(&mut state).is_multiple_of(10)).chain([r]).collect()
            }
        };
        let sketch = if empties && i % 97 == 50 {
            Sketch::Oph(empty_set.clone())
        } else {
            coll.sketcher().sketch(&TokenSet::from_unsorted(tokens)).expect("sketch")
        };
        b.insert(format!("k{i}"), sketch);
    }
    coll.apply(&b).expect("insert");
    let mut b = Batch::new();
    for i in (0..n).filter(|i| i % 9 == 4) {
        b.delete(format!("k{i}"));
    }
    coll.apply(&b).expect("delete");
}

fn all_empty(t: usize) -> Vec<u64> {
    (0..t.div_ceil(64)).map(|w| if (w + 1) * 64 <= t { u64::MAX } else { (1u64 << (t % 64)) - 1 }).collect()
}

/// What a dedup found, without its timings.
fn found(d: &DedupResult) -> impl PartialEq + std::fmt::Debug {
    (d.pairs, d.verified.clone(), d.clusters.clone(), d.candidates, d.plan, d.reason.clone(), d.scoring)
}

#[test]
fn oph_columns_join_as_the_sketches_one_per_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::create(dir.path().join("d.sketchdb")).expect("create");
    for (n, params, t) in [
        (1200, SketchParams::oph(128, 8, 3), 0.6),
        (900, SketchParams::oph(100, 16, 4), 0.5),
        (700, SketchParams::oph(64, 32, 5), 0.7),
    ] {
        let params = params.expect("params");
        let name = format!("b{}", params.bits());
        let plain = db.create_collection(&name, CollectionConfig::new(params)).expect("plain");
        let index = IndexConfig::Lsh { threshold: t, bands: None, rows: None };
        let indexed = db.create_collection(&format!("{name}-lsh"), CollectionConfig::new(params).with_index(index));
        let indexed = indexed.expect("indexed");
        let probed = db.create_collection(&format!("{name}-probed"), CollectionConfig::new(params)).expect("probed");
        fill(&plain, n, params.bits().into(), true);
        fill(&indexed, n, params.bits().into(), false);
        fill(&probed, n, params.bits().into(), true);
        let snap = db.store.current_snapshot().expect("snapshot");
        let exact = QueryOptions { exact: true, ..Default::default() };
        // In-memory banding, the index's bucket self-join, and a probe of every record.
        for (coll, options) in
            [(&plain, QueryOptions::default()), (&indexed, QueryOptions::default()), (&probed, exact)]
        {
            for clustering in [Clustering::Components, Clustering::Representative] {
                for threads in [1, 3] {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
                    let run = |each: bool| {
                        pool.install(|| {
                            dedup_with(
                                &snap,
                                coll.info(),
                                QueryKind::Threshold(t),
                                options,
                                clustering,
                                &coll.costs(),
                                || {
                                    let loaded = load(&snap, coll.info())?;
                                    assert!(
                                        matches!(loaded.sketches, Sketches::Oph(_)),
                                        "OPH sketches load as columns"
                                    );
                                    Ok(if each { loaded.into_each().expect("each") } else { loaded })
                                },
                            )
                        })
                        .expect("dedup")
                    };
                    let (columns, each) = (run(false), run(true));
                    let what = format!("{name} {:?} {clustering:?} {threads} threads", columns.plan);
                    assert!(columns.pairs > 100, "{what}: the data must plant pairs, got {}", columns.pairs);
                    assert_eq!(found(&columns), found(&each), "{what}");
                }
            }
        }
    }
}

/// Two sketches of the empty set have no estimate of their similarity: every path that
/// compares a probe with stored records, and every dedup plan, treats such a pair as no
/// match (as an empty document is), and still finds the planted pairs among the others.
#[test]
fn pairs_of_empty_set_sketches_are_no_match_on_every_path() {
    use crate::planner::plan::PlanKind;
    use crate::planner::query::Query;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::create(dir.path().join("e.sketchdb")).expect("create");
    let params = SketchParams::oph(64, 8, 11).expect("params");
    let coll = db.create_collection("e", CollectionConfig::new(params)).expect("collection");
    let t = params.slots();
    let empty = Sketch::Oph(OphSketch::from_parts(params, vec![0; t], all_empty(t), 0).expect("empty-set sketch"));
    let base: Vec<u64> = (1..=200).collect();
    let near: Vec<u64> = (2..=201).collect();
    let other: Vec<u64> = (1000..1150).collect();
    let sketch = |v: &[u64]| coll.sketcher().sketch(&TokenSet::from_unsorted(v.to_vec())).expect("sketch");
    let mut b = Batch::new();
    b.insert("empty-a", empty.clone()).insert("empty-b", empty.clone()).insert("empty-c", empty.clone());
    b.insert("base", sketch(&base)).insert("near", sketch(&near)).insert("other", sketch(&other));
    coll.apply(&b).expect("insert");
    let keys = |q: &Query| -> Vec<String> {
        let r = coll.query(q).expect("query");
        r.hits.iter().map(|h| String::from_utf8_lossy(&h.key).into_owned()).collect()
    };
    for force in [Some(PlanKind::FullScan), Some(PlanKind::OphBinScan), None] {
        let options = QueryOptions { force, exact: force.is_none(), ..QueryOptions::default() };
        let q = |sketch: &Sketch, kind| Query { sketch: sketch.clone(), kind, options };
        assert!(keys(&q(&empty, QueryKind::Threshold(0.5))).is_empty(), "{force:?}: the empty set matches nothing");
        let top = keys(&q(&empty, QueryKind::TopK(6)));
        assert!(top.iter().all(|k| !k.starts_with("empty")), "{force:?}: top-k of the empty set: {top:?}");
        assert_eq!(keys(&q(&sketch(&base), QueryKind::Threshold(0.8))), ["base", "near"], "{force:?}");
    }
    for options in [QueryOptions::default(), QueryOptions { exact: true, ..QueryOptions::default() }] {
        let d = coll.dedup(QueryKind::Threshold(0.8), options).expect("dedup");
        assert_eq!(d.pairs, 1, "{:?}: only base and near pair", d.plan);
        assert_eq!(d.clusters.len(), 1, "{:?}", d.plan);
    }
}
