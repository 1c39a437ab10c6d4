//! I/O-error sweep: every I/O call of a representative workload (create, every sketch kind,
//! batches of inserts, upserts and deletes, single writes, compaction, drop, close) fails
//! once, then fails forever; every write is also cut short half way, once and forever. The
//! database must return errors (never panic), and after reopening, both the file as written
//! and its durable image must hold the last acknowledged state (or the failed step, whole);
//! the workload then finishes on the reopened database and must end at the model's state.
//!
//! More workloads: `SKETCHDB_IO_SEEDS=<n> cargo test --release --test io_error_sweep -- --nocapture`.

use std::panic::catch_unwind;
use std::time::Instant;

use sketchdb::testing::crash::{IoSweepReport, io_sweep};

#[test]
fn every_io_point_fails_cleanly() {
    let seeds: u64 = std::env::var("SKETCHDB_IO_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let t = Instant::now();
    let mut total = IoSweepReport::default();
    let (mut failed, mut panicked) = (vec![], vec![]);
    for seed in 0..seeds {
        match catch_unwind(move || io_sweep(seed + 7, 14)) {
            Ok(Ok(r)) => total.add(&r),
            Ok(Err(e)) => failed.push(e),
            Err(p) => {
                let msg = p.downcast_ref::<String>().cloned().or(p.downcast_ref::<&str>().map(|s| s.to_string()));
                panicked.push(format!("seed {}: panic {msg:?}", seed + 7));
            }
        }
    }
    eprintln!(
        "I/O sweep: {seeds} workloads, {} call points and {} short-write points, each once and forever: \
         {} cases in {:.1} s; {} returned errors, {} absorbed (the failed call was not needed); \
         {} reopens checked, {} holding the failed step whole ({} of them durable images), {} workloads finished after recovery; \
         {} workloads failed (a state not allowed, or a wrong result), {} workloads panicked",
        total.call_points,
        total.byte_points,
        total.cases,
        t.elapsed().as_secs_f64(),
        total.errors_returned,
        total.absorbed,
        total.reopens,
        total.with_in_flight,
        total.in_flight_durable,
        total.finished_after,
        failed.len(),
        panicked.len()
    );
    assert!(failed.is_empty(), "{}", failed[0]);
    assert!(panicked.is_empty(), "{}", panicked[0]);
    assert_eq!(total.cases, 2 * (total.call_points + total.byte_points));
    // Non-vacuity: faults were injected, surfaced as errors, and the files were reopened.
    assert!(total.call_points > 0, "the workloads made no I/O call to fail");
    assert!(total.errors_returned > 0, "no injected fault surfaced as an error");
    assert!(total.reopens > 0, "no file was reopened after a fault");
}
