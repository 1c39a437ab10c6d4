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
        // A probe of every record fails on a pair of empty-set sketches (no estimate).
        fill(&probed, n, params.bits().into(), false);
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
