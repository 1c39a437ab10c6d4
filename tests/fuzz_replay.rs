//! Replays every fuzz target's committed inputs as ordinary tests: `fuzz/seeds/<target>/`
//! (the starting corpus) and `fuzz/regressions/<target>/` (inputs that once failed; add a
//! crash file there when the fuzzer finds one, then fix). The targets' logic lives in
//! `sketchdb::testing::fuzz_*`, shared with the `fuzz/` crate.
//!
//! `SKETCHDB_WRITE_SEEDS=1 cargo test --test fuzz_replay` rewrites `fuzz/seeds/` from
//! `sketchdb::testing::seed_inputs`.

mod common;

use std::path::Path;

use common::fuzz_inputs as inputs;

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 4] = [
    ("page_decode", sketchdb::testing::fuzz_page_decode),
    ("meta_decode", sketchdb::testing::fuzz_meta_decode),
    ("sketch_ops", sketchdb::testing::fuzz_sketch_ops),
    ("db_ops", sketchdb::testing::fuzz_db_ops),
];

#[test]
fn every_seed_and_regression_input_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    if std::env::var_os("SKETCHDB_WRITE_SEEDS").is_some() {
        for (name, _) in TARGETS {
            let dir = root.join("seeds").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            for (i, input) in sketchdb::testing::seed_inputs(name).iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i:03}")), input).unwrap();
            }
        }
    }
    for (name, target) in TARGETS {
        let seeds = inputs(&root.join("seeds").join(name));
        assert!(!seeds.is_empty(), "no seeds for {name}");
        let regressions = inputs(&root.join("regressions").join(name));
        for (path, input) in seeds.iter().chain(&regressions) {
            eprintln!("{name}: {path}");
            target(input);
        }
        eprintln!("{name}: {} seeds, {} regressions replayed", seeds.len(), regressions.len());
    }
    // The generated seeds pass too (in case the committed ones drift from the generator).
    for (name, target) in TARGETS {
        for input in sketchdb::testing::seed_inputs(name) {
            target(&input);
        }
    }
}
