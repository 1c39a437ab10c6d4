#![no_main]
//! `sketch_ops`: the logic is `sketchdb::testing::fuzz_sketch_ops`, which `tests/fuzz_replay.rs` also
//! runs over every committed seed and regression input.

libfuzzer_sys::fuzz_target!(|data: &[u8]| sketchdb::testing::fuzz_sketch_ops(data));
