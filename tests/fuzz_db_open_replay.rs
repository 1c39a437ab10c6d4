//! Replays the `db_open` fuzz target's committed inputs (`fuzz/seeds/db_open/`, the starting
//! corpus, and `fuzz/regressions/db_open/`, inputs that once failed) and its generated seeds:
//! a real database file with each input's edits opens, or is refused, with typed errors only,
//! and stats, verify and queries on what opens never panic.
//!
//! `SKETCHDB_WRITE_SEEDS=1 cargo test --test fuzz_db_open_replay` rewrites the seed folder.

mod common;

use std::path::Path;

#[test]
fn every_db_open_seed_and_regression_input_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let seeds_dir = root.join("seeds").join("db_open");
    if std::env::var_os("SKETCHDB_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(&seeds_dir).unwrap();
        for (i, input) in sketchdb::testing::db_open_seeds().iter().enumerate() {
            std::fs::write(seeds_dir.join(format!("seed-{i:03}")), input).unwrap();
        }
    }
    let seeds = common::fuzz_inputs(&seeds_dir);
    assert!(!seeds.is_empty(), "no seeds for db_open");
    let regressions = common::fuzz_inputs(&root.join("regressions").join("db_open"));
    for (path, input) in seeds.iter().chain(&regressions) {
        eprintln!("db_open: {path}");
        sketchdb::testing::fuzz_db_open(input);
    }
    for input in sketchdb::testing::db_open_seeds() {
        sketchdb::testing::fuzz_db_open(&input);
    }
    eprintln!("db_open: {} seeds, {} regressions replayed", seeds.len(), regressions.len());
}
