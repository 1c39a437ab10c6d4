#![no_main]
//! `page_decode`: the logic is `sketchdb::testing::fuzz_page_decode`, which `tests/fuzz_replay.rs` also
//! runs over every committed seed and regression input.

libfuzzer_sys::fuzz_target!(|data: &[u8]| sketchdb::testing::fuzz_page_decode(data));
