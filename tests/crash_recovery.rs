//! Crash loop: random workloads (every sketch kind; insert, upsert and delete batches; single
//! writes; creates, drops, compactions, flushes; bad keys and incompatible sketches mixed in)
//! run beside an in-memory model on a backend that loses power at every sync point and at
//! random writes. Each crash image (synced data plus a random subset of unsynced writes, some
//! torn) is reopened: every acknowledged commit must be there, the step in flight must be
//! whole or absent, `admin::verify` must be clean and reads must equal the model.
//!
//! CI mode checks >= 10,000 distinct crash images with `Durability::Immediate` and >= 2,000
//! with `Durability::Eventual`. Long mode: `SKETCHDB_CRASH_IMAGES=<n>` sets the
//! number of distinct Immediate images to reach (a fifth of that for Eventual), e.g.
//! `SKETCHDB_CRASH_IMAGES=1000000 cargo test --release --test crash_recovery -- --nocapture`.

use std::time::Instant;

use sketchdb::Durability;
use sketchdb::testing::crash::{CrashReport, crash_loop};

fn target(default: u64) -> u64 {
    std::env::var("SKETCHDB_CRASH_IMAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn loop_until(durability: Durability, images: u64, seed0: u64) -> CrashReport {
    let t = Instant::now();
    let mut total = CrashReport::default();
    let mut seed = seed0;
    while total.distinct_images < images {
        match crash_loop(seed, 40, 8, 24, durability) {
            Ok(r) => total.add(&r),
            Err(e) => panic!("{e}"),
        }
        seed += 1;
    }
    eprintln!(
        "crash loop ({durability:?}): {} seeds, {} runs, {} crash images ({} distinct) in {:.1} s: \
         {} at the last ack, {} with the in-flight step whole, {} of unacknowledged creates, \
         {} acknowledged steps checked, {} written after recovery; 0 lost, 0 partial, 0 panics",
        seed - seed0,
        total.runs,
        total.images,
        total.distinct_images,
        t.elapsed().as_secs_f64(),
        total.at_last_ack,
        total.with_in_flight,
        total.unacked_create,
        total.acked_steps_checked,
        total.written_after
    );
    total
}

#[test]
fn crash_images_hold_every_acknowledged_commit() {
    let r = loop_until(Durability::Immediate, target(10_000), 1);
    assert!(r.distinct_images >= 10_000.min(target(10_000)));
}

#[test]
fn eventual_durability_never_shows_a_partial_batch() {
    let r = loop_until(Durability::Eventual, target(10_000) / 5, 1_000);
    assert!(r.distinct_images >= 2_000.min(target(10_000) / 5));
}
