//! Real kills of a writer into a collection that keeps exact shingle sets: `examples/crash_child.rs`
//! in its `shingles` mode commits batches of records with their token sets and prints
//! `ACK <batch>` after each durable commit; this test SIGKILLs it at random moments, opens the
//! file with a writer (which recovers it) after each kill and checks that
//! * `admin::verify` is clean: every live row has exactly one shingle set, of the
//!   cardinality its signature states, and no set belongs to a row that is not live;
//! * every acknowledged batch is there, whole, and no batch is partly visible;
//! * every record's sketch is the sketch of its token set, and exact Jaccard read from the
//!   stored sets equals a brute-force Jaccard of the token sets, for every hit of a
//!   threshold query from a few records (the newest batch's and the first batch's).
//!
//! A few kills in CI; `kill_9_exact_shingles_many` runs 100 (`SKETCHDB_KILLS`), ignored by
//! default: `cargo test --test crash_shingles -- --ignored --nocapture`.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use sketchdb::testing::crash::kill9::{BATCH, SHINGLE_COLLECTION, params, tokens};
use sketchdb::{Database, QueryKind, QueryOptions, Sketcher};

use common::child::{XorShift, run_and_kill};

/// Batch and record of a key `b<batch>-<record>`.
fn parse_key(key: &[u8]) -> (u64, u64) {
    let key = std::str::from_utf8(key).unwrap();
    let (b, i) = key[1..].split_once('-').unwrap();
    (b.parse().unwrap(), i.parse().unwrap())
}

/// The token set key (b, i) holds in a collection of `n` whole batches: record 0 of every
/// batch but the last was upserted to version 2 by the next batch.
fn brute_set(b: u64, i: u64, n: u64) -> BTreeSet<u64> {
    let version = if i == 0 && b + 1 < n { 2 } else { 1 };
    tokens(b, i, version).as_slice().iter().copied().collect()
}

fn jaccard(a: &BTreeSet<u64>, b: &BTreeSet<u64>) -> f64 {
    let both = a.intersection(b).count();
    both as f64 / (a.len() + b.len() - both) as f64
}

/// Checks the database after a kill; returns the number of whole batches it holds.
fn check(path: &Path, acked: Option<u64>) -> u64 {
    if !path.exists() {
        assert!(acked.is_none(), "database file lost after ACK");
        return 0;
    }
    let db = Database::open(path).unwrap();
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let Ok(c) = db.collection(SHINGLE_COLLECTION) else {
        assert!(acked.is_none(), "collection lost after ACK");
        return 0;
    };
    assert!(c.config().exact_shingles);
    let len = c.len().unwrap();
    assert_eq!(len % BATCH, 0, "a partial batch is visible: {len} records");
    let n = len / BATCH;
    if let Some(a) = acked {
        assert!(n > a, "acknowledged batch {a} lost: only {n} batches");
        assert!(n <= a + 2, "{n} batches after ACK {a}: more than the one in flight");
    }
    let s = Sketcher::new(params().unwrap()).unwrap();
    let mut seen = 0;
    for r in c.scan().unwrap() {
        let r = r.unwrap();
        let (b, i) = parse_key(&r.key);
        assert!(b < n && i < BATCH, "unexpected key {:?}", r.key_str());
        let set = brute_set(b, i, n);
        let want = s.sketch(&sketchdb::TokenSet::from_unsorted(set.into_iter().collect())).unwrap();
        assert_eq!(r.sketch, want, "wrong sketch for {:?}", r.key_str());
        seen += 1;
    }
    assert_eq!(seen, len);
    // Exact Jaccard from the stored sets against brute force, from records of the newest and
    // the first batch (the upserted record 0 among them).
    let exact = QueryOptions { exact: true, ..QueryOptions::default() };
    let probes = [(n.saturating_sub(1), 0), (n.saturating_sub(1), BATCH - 1), (0, 0), (0, 3)];
    for (b, i) in probes.into_iter().filter(|_| n > 0) {
        let q = brute_set(b, i, n);
        let r = c.query_key(format!("b{b:06}-{i:03}"), QueryKind::Threshold(0.3), exact).unwrap();
        assert!(r.hits.iter().any(|h| parse_key(&h.key) == (b, i) && h.exact == Some(1.0)), "no self-hit for {b}-{i}");
        for h in &r.hits {
            let (hb, hi) = parse_key(&h.key);
            assert_eq!(h.exact, Some(jaccard(&q, &brute_set(hb, hi, n))), "exact Jaccard of {b}-{i} and {hb}-{hi}");
        }
    }
    n
}

/// `kills` kills at random moments; prints what happened.
fn kill_runs(kills: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shingles.sketchdb");
    let mut rng = XorShift(0x5eed_c0de);
    let t = Instant::now();
    let (mut acked_total, mut max_acked) = (0u64, None::<u64>);
    let mut on_disk = 0;
    for k in 0..kills {
        // The first run always gets far enough to acknowledge batches; later ones are killed
        // anywhere, also during open and recovery.
        let delay = Duration::from_millis(if k == 0 { 300 } else { 0 } + rng.next() % 400);
        let run = run_and_kill(&["shingles".as_ref(), path.as_os_str()], delay);
        assert!(run.exited_on_its_own.is_none(), "child exited on its own: {:?}", run.exited_on_its_own);
        let acked_now = run.acked.len() as u64;
        if let Some(&last) = run.acked.iter().max() {
            max_acked = Some(max_acked.map_or(last, |m: u64| m.max(last)));
        }
        acked_total += acked_now;
        on_disk = check(&path, max_acked);
        // What a writer found after recovery is durable: later kills must keep it all (and
        // the next child, killed before its first ACK, may add one unacknowledged batch).
        if on_disk > 0 {
            max_acked = Some(on_disk - 1);
        }
        if k % 20 == 0 {
            eprintln!("kill {k}: {acked_now} batches acknowledged in {delay:?}; {on_disk} batches on disk");
        }
    }
    eprintln!(
        "kill -9 of an exact-shingles writer: {kills} kills in {:.1} s, {acked_total} acknowledged batches, \
         {on_disk} batches on disk at the end; 0 acknowledged batches lost, 0 partial batches, 0 verify problems, \
         exact Jaccard equal to brute force",
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn kill_9_exact_shingles() {
    kill_runs(3);
}

#[test]
#[ignore = "slow: 100 kills of real processes with fsyncs; run with --ignored"]
fn kill_9_exact_shingles_many() {
    kill_runs(std::env::var("SKETCHDB_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(100));
}
