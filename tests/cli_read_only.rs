//! Commands that only read open the database read-only: they leave the file byte-identical
//! (and its mtime unchanged), also on a 0444 file, and run beside a writer process, which a
//! second writer process finds busy (exit code 3, the file named).
#![cfg(feature = "cli")]

mod common;

use std::path::Path;
use std::time::SystemTime;

use common::cli::{ok, run};

/// `x.db` with a MinHash collection `c` (keys a, b).
fn setup(d: &Path) {
    std::fs::write(
        d.join("docs.jsonl"),
        "{\"key\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog\"}\n\
         {\"key\":\"b\",\"text\":\"the quick brown fox jumps over the lazy cat\"}\n",
    )
    .unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "docs.jsonl"]);
}

const READS: &[&[&str]] = &[
    &["--db", "x.db", "stats"],
    &["--db", "x.db", "list"],
    &["--db", "x.db", "verify"],
    &["--db", "x.db", "--json", "verify"],
    &["--db", "x.db", "query", "c", "a"],
    &["--db", "x.db", "explain", "c", "a"],
    &["--db", "x.db", "estimate", "c", "a", "b"],
    &["--db", "x.db", "export", "c", "--out", "out.jsonl"],
    &["--db", "x.db", "dedup", "c"],
];

fn fingerprint(path: &Path) -> (Vec<u8>, SystemTime) {
    (std::fs::read(path).unwrap(), std::fs::metadata(path).unwrap().modified().unwrap())
}

fn assert_reads_leave_file_unchanged(d: &Path) {
    let db = d.join("x.db");
    let before = fingerprint(&db);
    std::thread::sleep(std::time::Duration::from_millis(20));
    for args in READS {
        ok(d, args);
        assert!(fingerprint(&db) == before, "{args:?} changed the file");
    }
}

#[test]
fn read_commands_leave_the_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    assert_reads_leave_file_unchanged(dir.path());
    let out = ok(dir.path(), &["--db", "x.db", "verify"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("verify: ok"));
}

#[test]
fn read_commands_work_on_a_read_only_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    std::fs::set_permissions(dir.path().join("x.db"), std::fs::Permissions::from_mode(0o444)).unwrap();
    // As root the mode does not stop writes: the byte comparison is what proves none happened.
    assert_reads_leave_file_unchanged(dir.path());
}

#[test]
fn readers_run_beside_a_writer_process_and_a_second_writer_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    // This test process holds the file for writing.
    let writer = sketchdb::Database::open(d.join("x.db")).unwrap();
    for args in READS {
        ok(d, args);
    }
    let out = run(d, &["--busy-timeout", "0", "--db", "x.db", "ingest", "c", "docs.jsonl"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("x.db") && err.contains("locked"), "{err}");
    assert!(!err.contains("Cannot acquire lock"), "{err}");
    drop(writer);
    // A reader in this process sees the commits of a writer process without reopening.
    let reader = sketchdb::Database::open_read_only(d.join("x.db")).unwrap();
    std::fs::write(d.join("more.jsonl"), "{\"key\":\"y\",\"text\":\"one more line of text here\"}\n").unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "more.jsonl"]);
    assert_eq!(reader.collection("c").unwrap().len().unwrap(), 3);
    drop(reader);
    let writer = sketchdb::Database::open(d.join("x.db")).unwrap();
    // A commit of the writer is seen by the next reader process.
    writer.collection("c").unwrap().insert_text("z", "an entirely different sentence").unwrap();
    let out = ok(d, &["--db", "x.db", "--json", "stats"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"live\":4"), "{}", String::from_utf8_lossy(&out.stdout));
}

/// `verify` alone leaves the engine's own check out (it needs the file to itself);
/// `verify --engine` opens read-write and runs it.
#[test]
fn verify_engine_runs_the_storage_engines_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let field = |args: &[&str]| {
        let out = ok(d, args);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["engine_integrity_checked"].as_bool(), v["engine_integrity_ok"].as_bool(), v["ok"].as_bool())
    };
    assert_eq!(field(&["--db", "x.db", "--json", "verify"]).0, Some(false));
    assert_eq!(field(&["--db", "x.db", "--json", "verify", "--engine"]), (Some(true), Some(true), Some(true)));
}
