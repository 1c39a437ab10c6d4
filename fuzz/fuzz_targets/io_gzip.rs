#![no_main]
//! `io_gzip`: the logic is `sketchdb::io::fuzz::fuzz_gzip`, which `tests/io_fuzz_replay.rs` also runs
//! over every committed seed and regression input.

libfuzzer_sys::fuzz_target!(|data: &[u8]| sketchdb::io::fuzz::fuzz_gzip(data));
