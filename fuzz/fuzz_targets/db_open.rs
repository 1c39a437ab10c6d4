#![no_main]
//! `db_open`: a real database file with the input's edits, opened read-only and read-write
//! through the public API, then stats, verify and queries. The logic is
//! `sketchdb::testing::fuzz_db_open`, which `tests/fuzz_db_open_replay.rs` also runs over every
//! committed seed and regression input.
//!
//! sketchdb contains the storage engine's own panics on damaged files (`catch_unwind` ->
//! `StorageError::EnginePanic`). libFuzzer's panic hook would abort on those contained panics,
//! so this target replaces it with a silent one; a panic that escapes the library still unwinds
//! out of the closure, and libfuzzer-sys aborts on it (a reported crash).

static QUIET_HOOK: std::sync::Once = std::sync::Once::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    QUIET_HOOK.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    sketchdb::testing::fuzz_db_open(data)
});
