#![no_main]
//! `io_csv`: the logic is `sketchdb::io::fuzz::fuzz_csv`, which `tests/io_fuzz_replay.rs` also runs
//! over every committed seed and regression input.

libfuzzer_sys::fuzz_target!(|data: &[u8]| sketchdb::io::fuzz::fuzz_csv(data));
