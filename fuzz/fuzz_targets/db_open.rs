#![no_main]
//! `db_open`: a real database file with the input's edits, opened read-only and read-write
//! through the public API, then stats, verify and queries. The logic is
//! `sketchdb::testing::fuzz_db_open`, which `tests/fuzz_db_open_replay.rs` also runs over every
//! committed seed and regression input.

libfuzzer_sys::fuzz_target!(|data: &[u8]| sketchdb::testing::fuzz_db_open(data));
