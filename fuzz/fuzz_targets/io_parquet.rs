#![no_main]
//! `io_parquet`: the logic is `sketchdb::io::fuzz::fuzz_parquet`, which `tests/io_fuzz_replay.rs`
//! also runs over every committed seed and regression input.
//!
//! The parquet and arrow crates panic on some malformed pages; the reader catches those panics
//! (`catch_unwind`) and returns `ReadError::Parquet`. libfuzzer-sys's hook would abort at the
//! panic, before the reader can catch it, so this target puts the default hook back: a panic
//! the reader catches is printed and fuzzing goes on, one that escapes still aborts.

libfuzzer_sys::fuzz_target!(
    init: {
        drop(std::panic::take_hook());
    },
    |data: &[u8]| sketchdb::io::fuzz::fuzz_parquet(data)
);
