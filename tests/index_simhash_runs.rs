//! SimHash tables stored as runs: a write adds one run of its rows, removals rewrite only
//! the run holding the row, and runs merge in size tiers. Through all of it every probe,
//! batch and self-join equals brute force over the stored records and verify is clean;
//! runs stay few; compaction merges them into one; a file written before runs (one set of
//! tables, index wire variant 0) reads as run 0 and takes new runs; verify names a bucket
//! in a run the definition does not list.

mod common;

use common::Rng;
use common::simhash::{check, flip, params, sk};
use sketchdb::testing::simhash::{
    SimhashRunInfo, move_first_simhash_bucket, simhash_runs, store_simhash_def_before_runs,
};
use sketchdb::{Batch, Collection, CollectionConfig, Database, IndexConfig, admin};

const K: u32 = 3;

/// The runs' row ranges ascend and their counts add up to the live rows.
fn check_runs(runs: &[SimhashRunInfo], live: u64, stage: &str) {
    assert!(runs.windows(2).all(|w| w[0].first_row < w[1].first_row), "{stage}: {runs:?}");
    assert!(runs.iter().all(|r| r.rows > 0), "{stage}: {runs:?}");
    assert_eq!(runs.iter().map(|r| r.rows).sum::<u64>(), live, "{stage}: {runs:?}");
    assert!(runs.len() <= 10, "{stage}: {} runs", runs.len());
}

/// Writes, under keys `{tag}{i}`, `batches` batches of planted neighbours (`per` base fingerprints each, each with
/// neighbours at exactly K, K - 1 and K + 1 and an identical copy), deleting and upserting
/// some earlier rows in every third batch. Returns the queries (every base fingerprint).
fn grow(c: &Collection, db: &Database, rng: &mut Rng, tag: &str, batches: usize, per: usize) -> Vec<u128> {
    let mut queries = Vec::new();
    let mut next = 0usize;
    for b in 0..batches {
        let mut batch = Batch::new();
        for _ in 0..per {
            let base = u128::from(rng.next_u64());
            queries.push(base);
            for v in [base, flip(rng, base, K, 64), flip(rng, base, K - 1, 64), flip(rng, base, K + 1, 64), base] {
                batch.insert(format!("{tag}{next}"), sk(64, v));
                next += 1;
            }
        }
        if b % 3 == 2 {
            // Removals spread over every earlier batch, and upserts that add their rows anew.
            for i in (0..next - 5 * per).step_by(11) {
                batch.delete(format!("{tag}{i}"));
            }
            for i in (3..next - 5 * per).step_by(13) {
                batch.upsert(format!("{tag}{i}"), sk(64, flip(rng, queries[i / 5], K, 64)));
            }
        }
        c.apply(&batch).expect("batch");
        if b % 4 == 3 {
            // A row added and removed by one transaction is never written.
            let mut batch = Batch::new();
            batch.insert("transient", sk(64, queries[0]));
            batch.delete("transient");
            c.apply(&batch).expect("transient");
        }
        check_runs(&simhash_runs(c, db).expect("runs"), c.stats().expect("stats").live, &format!("batch {b}"));
    }
    queries
}

fn create(db: &Database) -> Collection {
    let cfg = CollectionConfig::new(params(64)).with_index(IndexConfig::SimhashTables { radius: K });
    db.create_collection("fp", cfg).expect("collection")
}

#[test]
fn runs_merge_in_tiers_and_answer_as_brute_force() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db");
    let db = Database::create(&path).expect("create");
    let c = create(&db);
    let mut rng = Rng(41);
    let queries = grow(&c, &db, &mut rng, "k", 40, 6);
    let runs = simhash_runs(&c, &db).expect("runs");
    // 40 batches (and 10 transient writes that add nothing) in tiers of 4: merged, not 40.
    assert!((2..=7).contains(&runs.len()), "{runs:?}");
    assert!(runs.iter().all(|r| r.id >= 4), "every early run was merged away: {runs:?}");
    let probe: Vec<u128> = queries.iter().step_by(7).copied().chain([0, u128::from(u64::MAX)]).collect();
    check(&c, &db, &probe, K, "grown");

    // Removing every row of the newest run drops the run.
    let newest = *runs.last().expect("a run");
    let live: Vec<(Vec<u8>, u64)> = c
        .scan()
        .expect("scan")
        .map(|r| r.expect("record"))
        .filter(|r| r.row_id >= newest.first_row)
        .map(|r| (r.key, r.row_id))
        .collect();
    assert_eq!(live.len() as u64, newest.rows);
    let mut batch = Batch::new();
    for (key, _) in &live {
        batch.delete(key.clone());
    }
    c.apply(&batch).expect("delete run");
    let after = simhash_runs(&c, &db).expect("runs");
    assert_eq!(&after[..], &runs[..runs.len() - 1], "the emptied run is dropped, the others untouched");
    check(&c, &db, &probe, K, "a run emptied");

    // Reopen: the runs are read as stored.
    drop(c);
    drop(db);
    let db = Database::open(&path).expect("open");
    let c = db.collection("fp").expect("collection");
    assert_eq!(simhash_runs(&c, &db).expect("runs"), after);
    check(&c, &db, &probe, K, "reopened");

    // Compaction merges every run into one.
    db.compact().expect("compact");
    let runs = simhash_runs(&c, &db).expect("runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    check_runs(&runs, c.stats().expect("stats").live, "compacted");
    check(&c, &db, &probe, K, "compacted");
}

#[test]
fn tables_written_before_runs_read_as_run_0_and_take_new_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db");
    let db = Database::create(&path).expect("create");
    let c = create(&db);
    let mut rng = Rng(7);
    let mut queries = grow(&c, &db, &mut rng, "k", 1, 40);
    let runs = simhash_runs(&c, &db).expect("runs");
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [0]);
    assert!(store_simhash_def_before_runs(&c, &db).expect("variant 0"));
    drop(c);
    drop(db);
    let db = Database::open(&path).expect("open");
    let c = db.collection("fp").expect("collection");
    assert_eq!(simhash_runs(&c, &db).expect("runs"), runs, "variant 0 is one run, number 0");
    check(&c, &db, &queries, K, "as an earlier build left it");
    // Writes remove from run 0 and add runs after it.
    let more = grow(&c, &db, &mut rng, "m", 3, 10);
    queries.extend(more.iter().step_by(3));
    let mut batch = Batch::new();
    for i in (0..200).step_by(9) {
        batch.delete(format!("k{i}"));
    }
    c.apply(&batch).expect("delete");
    let runs = simhash_runs(&c, &db).expect("runs");
    assert!(runs.len() >= 2 && runs[0].id == 0, "{runs:?}");
    check(&c, &db, &queries, K, "written after");
}

#[test]
fn verify_names_a_bucket_in_an_unlisted_run() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let c = create(&db);
    let mut rng = Rng(5);
    grow(&c, &db, &mut rng, "k", 3, 8);
    assert!(admin::verify(&db).expect("verify").is_ok());
    assert!(move_first_simhash_bucket(&c, &db, 999).expect("plant"));
    let report = admin::verify(&db).expect("verify");
    let text: Vec<String> = report.problems.iter().map(|p| p.detail.clone()).collect();
    assert!(
        text.iter().any(|p| p.contains("run 999, table 0") && p.contains("a run the index definition does not list")),
        "{text:?}"
    );
    // The run that lost the bucket holds fewer entries than it counts.
    assert!(text.iter().any(|p| p.contains("counts") && p.contains("its table 0 holds")), "{text:?}");
}
