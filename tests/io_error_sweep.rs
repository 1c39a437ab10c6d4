//! I/O-error sweep: every I/O call of a representative workload (create, every sketch kind,
//! batches of inserts, upserts and deletes, single writes, compaction, drop, close) fails
//! once, then fails forever; every write is also cut short half way, once and forever. The
//! database must return errors (never panic), and after reopening, both the file as written
//! and its durable image must hold the last acknowledged state (or the failed step, whole);
//! the workload then finishes on the reopened database and must end at the model's state.
//!
//! More workloads: `SKETCHDB_IO_SEEDS=<n> cargo test --release --test io_error_sweep -- --nocapture`.

use std::time::Instant;

use sketchdb::testing::crash::{IoSweepReport, io_sweep};

#[test]
fn every_io_point_fails_cleanly() {
    let seeds: u64 = std::env::var("SKETCHDB_IO_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let t = Instant::now();
    let mut total = IoSweepReport::default();
    for seed in 0..seeds {
        match io_sweep(seed + 7, 14) {
            Ok(r) => total.add(&r),
            Err(e) => panic!("{e}"),
        }
    }
    eprintln!(
        "I/O sweep: {seeds} workloads, {} call points and {} short-write points, each once and forever: \
         {} cases in {:.1} s; {} returned errors, {} absorbed (the failed call was not needed); \
         {} reopens checked, {} holding the failed step whole ({} of them durable images), {} workloads finished after recovery; \
         0 lost, 0 partial, 0 panics",
        total.call_points,
        total.byte_points,
        total.cases,
        t.elapsed().as_secs_f64(),
        total.errors_returned,
        total.absorbed,
        total.reopens,
        total.with_in_flight,
        total.in_flight_durable,
        total.finished_after
    );
    assert_eq!(total.cases, 2 * (total.call_points + total.byte_points));
}
