//! Real kills: `examples/crash_child.rs` ingests batches in a child process and prints
//! `ACK <batch>` after each durable commit; this test SIGKILLs it at random moments (at least
//! 100 times, `SKETCHDB_KILLS` to change), reopens the file after each kill and checks that
//! every acknowledged batch is there, whole, that no batch is partly visible, and that
//! `admin::verify` is clean.
//!
//! Ignored by default (it takes about a minute of real fsyncs). Run it with
//! `cargo test --test crash_kill9 -- --ignored --nocapture`
//! (`cargo test` builds the example at `target/debug/examples/crash_child`).

mod common;

use std::time::{Duration, Instant};

use sketchdb::testing::crash::kill9::{BATCH, COLLECTION, params, sketch};
use sketchdb::{Database, Error, Sketcher, StorageError};

use common::child::{XorShift, run_and_kill};

/// Checks the database after a kill; returns the number of whole batches it holds.
fn check(path: &std::path::Path, acked: Option<u64>) -> u64 {
    if !path.exists() {
        // Killed during the atomic create: no file (at most a temporary one) is right.
        assert!(acked.is_none(), "database file lost after ACK");
        return 0;
    }
    // A read-only open cannot recover the file a killed writer left: it is refused with the
    // typed error naming the file (or opens, when the kill came before the writer opened it).
    match Database::open_read_only(path) {
        Ok(_) => {}
        Err(Error::Storage(StorageError::NeedsRecovery { path: p, .. })) => assert_eq!(p, path),
        Err(e) => panic!("read-only open after kill -9: {e:?}"),
    }
    let db = Database::open(path).unwrap();
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let Ok(c) = db.collection(COLLECTION) else {
        assert!(acked.is_none(), "collection lost after ACK");
        return 0;
    };
    let s = Sketcher::new(params().unwrap()).unwrap();
    let len = c.len().unwrap();
    assert_eq!(len % BATCH, 0, "a partial batch is visible: {len} records");
    let n = len / BATCH;
    if let Some(a) = acked {
        assert!(n > a, "acknowledged batch {a} lost: only {n} batches");
        assert!(n <= a + 2, "{n} batches after ACK {a}: more than the one in flight");
    }
    let mut seen = 0;
    for r in c.scan().unwrap() {
        let r = r.unwrap();
        let key = r.key_str().unwrap().to_string();
        let (b, i) = key[1..].split_once('-').unwrap();
        let (b, i): (u64, u64) = (b.parse().unwrap(), i.parse().unwrap());
        assert!(b < n && i < BATCH, "unexpected key {key}");
        let version = if i == 0 && b + 1 < n { 2 } else { 1 };
        assert_eq!(r.sketch, sketch(&s, b, i, version).unwrap(), "wrong sketch for {key}");
        seen += 1;
    }
    assert_eq!(seen, len);
    n
}

#[test]
#[ignore = "slow: real processes and fsyncs; run with --ignored"]
fn kill_9_loses_no_acknowledged_batch() {
    let kills: u64 = std::env::var("SKETCHDB_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.sketchdb");
    let mut rng = XorShift(0x1234_5678);
    let t = Instant::now();
    let (mut acked_total, mut in_flight_landed, mut max_acked) = (0u64, 0u64, None::<u64>);
    for k in 0..kills {
        // Kill at a random moment: sometimes during open and recovery, mostly mid-ingest.
        let delay = Duration::from_millis(rng.next() % 400);
        let run = run_and_kill(&[path.as_os_str()], delay);
        assert!(run.exited_on_its_own.is_none(), "child exited on its own: {:?}", run.exited_on_its_own);
        let acked_now = run.acked.len() as u64;
        if let Some(&last) = run.acked.iter().max() {
            max_acked = Some(max_acked.map_or(last, |m: u64| m.max(last)));
        }
        acked_total += acked_now;
        let n = check(&path, max_acked);
        if max_acked.is_some_and(|a| n == a + 2) {
            in_flight_landed += 1;
        }
        // What a writer found after recovery is durable: later kills must keep it all (and
        // the next child, killed before its first ACK, may add one unacknowledged batch).
        if n > 0 {
            max_acked = Some(n - 1);
        }
        if k % 20 == 0 {
            eprintln!("kill {k}: {acked_now} batches acknowledged in {delay:?}; {n} batches on disk");
        }
    }
    eprintln!(
        "kill -9: {kills} kills in {:.1} s, {acked_total} acknowledged batches ({} records), {} batches on disk; \
         {in_flight_landed} reopens also held the unacknowledged in-flight batch (whole); 0 acknowledged batches lost, \
         0 partial batches, 0 verify problems",
        t.elapsed().as_secs_f64(),
        acked_total * BATCH,
        max_acked.map_or(0, |a| a + 1)
    );
}
