#![no_main]
//! `meta_decode`: the logic is `sketchdb::testing::fuzz_meta_decode`, which `tests/fuzz_replay.rs` also
//! runs over every committed seed and regression input.

libfuzzer_sys::fuzz_target!(|data: &[u8]| sketchdb::testing::fuzz_meta_decode(data));
