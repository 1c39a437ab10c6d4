//! The dedup load stage reads runs of pages on several threads: what it loads equals a
//! serial scan of the pages, record for record, whatever the number of threads.

use super::database::Database;
use crate::db::batch::Batch;
use crate::db::config::CollectionConfig;
use crate::planner::dedup_load::load;
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::Sketch;
use crate::sketch::tokens::TokenSet;
use crate::storage::reader::decode;

#[test]
fn runs_read_on_any_number_of_threads_load_what_a_serial_scan_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::create(dir.path().join("l.sketchdb")).expect("create");
    let coll =
        db.create_collection("c", CollectionConfig::new(SketchParams::oph(64, 8, 5).expect("params"))).expect("c");
    let sketch = |i: u64| {
        let tokens = (0..1 + i % 50).map(|t| t * 7_919 + i * 104_729).collect();
        coll.sketcher().sketch(&TokenSet::from_unsorted(tokens)).expect("sketch")
    };
    // Keys of many lengths; three batches of inserts, then a batch deleting every fifth key
    // (older pages: removed-rows entries) and replacing every thirteenth (appended rows); then
    // one appending to the tail page and deleting replaced rows (its own tombstones).
    let key = |i: u64| format!("{}{i}", "k".repeat(1 + (i % 37) as usize));
    for part in 0..3u64 {
        let mut b = Batch::new();
        for i in part * 1500..(part + 1) * 1500 {
            b.insert(key(i), sketch(i));
        }
        coll.apply(&b).expect("insert");
    }
    let mut b = Batch::new();
    for i in 0..4500u64 {
        if i % 5 == 2 {
            b.delete(key(i));
        } else if i % 13 == 4 {
            b.upsert(key(i), sketch(i + 1));
        }
    }
    coll.apply(&b).expect("delete and replace");
    let mut b = Batch::new();
    for i in 4500..4510u64 {
        b.insert(key(i), sketch(i));
    }
    for i in (0..4500u64).filter(|i| i % 13 == 4 && i % 5 != 2 && i % 2 == 0) {
        b.delete(key(i));
    }
    coll.apply(&b).expect("append and delete");

    let snap = db.store.current_snapshot().expect("snapshot");
    let info = coll.info();
    let mut want: Vec<(u64, Vec<u8>, Sketch)> = Vec::new();
    let mut pages = 0;
    snap.for_each_page(info, |first, view| {
        pages += 1;
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            want.push((view.first_row() + i as u64, view.key(i).to_vec(), decode(info, view, first, i)?));
        }
        Ok(true)
    })
    .expect("serial scan");
    assert!(pages >= 8, "{pages} pages: too few to split");
    assert_eq!(want.len() as u64, coll.len().expect("len"), "live records");
    // The runs cover every first row a page may have, each once, in order.
    let next_row = snap.state(info).expect("state").next_row;
    for n in [1, 2, 7, 64, 100_000] {
        let runs = snap.page_runs(info, n).expect("runs");
        assert!(!runs.is_empty() && runs.len() as u64 <= n, "{n} runs: {}", runs.len());
        assert_eq!((*runs[0].start(), runs.last().map(|r| *r.end())), (0, Some(next_row - 1)), "{n} runs");
        for w in runs.windows(2) {
            assert_eq!(*w[1].start(), *w[0].end() + 1, "{n} runs");
        }
    }
    for threads in [1, 2, 3, 7] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        let got = pool.install(|| load(&snap, info)).expect("load");
        assert_eq!(got.len(), want.len(), "{threads} threads");
        for (i, (row, key, sketch)) in want.iter().enumerate() {
            assert_eq!(
                (got.rows[i], got.key(i), &*got.sketches.get(i).expect("sketch")),
                (*row, key.as_slice(), sketch),
                "{threads} threads"
            );
            assert_eq!(got.index_of(*row), Some(i));
        }
    }
}
