//! The exit-code table of `sketchdb --help` and README.md, one test per code: 0 success,
//! 1 runtime error, 2 usage or bad input (every out-of-range parameter of every command),
//! 3 database busy in another process. With `--json` the error is one JSON line on stderr.
#![cfg(feature = "cli")]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(dir).args(args).output().unwrap()
}

/// A database `x.db` with a MinHash collection `c` (keys a, b) and a SimHash one `f`.
fn setup(d: &Path) {
    std::fs::write(
        d.join("docs.jsonl"),
        "{\"key\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog\"}\n\
         {\"key\":\"b\",\"text\":\"the quick brown fox jumps over the lazy cat\"}\n",
    )
    .unwrap();
    std::fs::write(d.join("fps.jsonl"), "{\"key\":\"f1\",\"simhash\":\"ff\"}\n").unwrap();
    for args in [
        &["--db", "x.db", "ingest", "c", "docs.jsonl"][..],
        &["--db", "x.db", "create", "f", "--kind", "simhash"],
        &["--db", "x.db", "ingest", "f", "fps.jsonl"],
    ] {
        let out = run(d, args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The one JSON error line of a failure under `--json`: `code` equal to the exit code.
fn json_error(out: &Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("\"error\"")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["error"]["code"].as_i64(), out.status.code().map(i64::from), "{err}");
    assert!(v["error"]["kind"].is_string() && v["error"]["message"].is_string(), "{err}");
    v
}

#[test]
fn exit_0_on_success() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(dir.path(), &["--db", "x.db", "stats"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn exit_1_on_runtime_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    for args in [
        &["--db", "absent.db", "stats"][..],
        &["--db", "x.db", "query", "nope", "a"],
        &["--db", "x.db", "query", "c", "missing-key"],
        &["--db", "x.db", "estimate", "c", "a", "missing-key"],
        &["--db", "x.db", "ingest", "c", "missing.jsonl"],
        &["--db", "x.db", "create", "c"],
        &["--db", "x.db", "dedup", "no-such-collection"],
    ] {
        let out = run(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let mut json = args.to_vec();
        json.push("--json");
        let out = run(d, &json);
        assert_eq!(out.status.code(), Some(1));
        json_error(&out);
    }
}

#[test]
fn exit_2_on_usage_and_every_out_of_range_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let cases: &[&[&str]] = &[
        // Usage: clap's own errors and ours.
        &["query"],
        &["--frobnicate"],
        &["--db", "x.db", "dedup", "c", "--top-k", "3"],
        &["nonexistent-name", "stats"],
        &["--db", "x.db", "reindex", "c"],
        // k, bits, bands, rows, radius, threshold, level, NaN, per command.
        &["bounds", "--k", "4294967295"],
        &["bounds", "--k", "0"],
        &["bounds", "--bits", "0"],
        &["bounds", "--bits", "65"],
        &["bounds", "--threshold", "NaN"],
        &["bounds", "--threshold", "1.5"],
        &["bounds", "--level", "NaN"],
        &["bounds", "--level", "1"],
        &["bounds", "--bands", "100", "--rows", "100"],
        &["bounds", "--bands", "0", "--rows", "4"],
        &["--db", "x.db", "create", "n", "--k", "0"],
        &["--db", "x.db", "create", "n", "--k", "4294967295"],
        &["--db", "x.db", "create", "n", "--kind", "bbit", "--bits", "3"],
        &["--db", "x.db", "create", "n", "--kind", "simhash", "--bits", "7"],
        &["--db", "x.db", "create", "n", "--kind", "bogus"],
        &["--db", "x.db", "create", "n", "--lsh", "1.5"],
        &["--db", "x.db", "create", "n", "--lsh", "NaN"],
        &["--db", "x.db", "create", "n", "--lsh", "0.8", "--bands", "100", "--rows", "100"],
        &["--db", "x.db", "create", "n", "--lsh", "0.8", "--bands", "0"],
        &["--db", "x.db", "create", "n", "--kind", "simhash", "--simhash-tables", "1000"],
        &["--db", "x.db", "create", "n", "--shingle", "0"],
        &["--db", "x.db", "query", "c", "a", "--threshold", "NaN"],
        &["--db", "x.db", "query", "c", "a", "--threshold", "1.5"],
        &["--db", "x.db", "query", "c", "a", "--threshold", "-0.1"],
        &["--db", "x.db", "query", "c", "a", "--level", "NaN"],
        &["--db", "x.db", "query", "c", "a", "--level", "2"],
        &["--db", "x.db", "query", "c", "a", "--radius", "3"],
        &["--db", "x.db", "query", "f", "f1", "--radius", "1000"],
        &["--db", "x.db", "query", "c", "a", "--top-k", "0"],
        &["--db", "x.db", "query", "c", "a", "--plan", "nonsense"],
        &["--db", "x.db", "explain", "c", "a", "--threshold", "NaN"],
        &["--db", "x.db", "estimate", "c", "a", "b", "--level", "NaN"],
        &["--db", "x.db", "estimate", "c", "a", "b", "--level", "0"],
        &["--db", "x.db", "dedup", "c", "--threshold", "NaN"],
        &["--db", "x.db", "dedup", "c", "--threshold", "1.5"],
        &["--db", "x.db", "dedup", "c", "--radius", "2"],
        &["--db", "x.db", "reindex", "c", "--lsh", "NaN"],
        &["--db", "x.db", "reindex", "c", "--lsh", "0.8", "--rows", "1000"],
        &["--db", "x.db", "ingest", "c", "docs.jsonl", "--batch", "0"],
        // dedup of an input: the reader's options, its format, its records.
        &["--db", "y.db", "dedup", "docs.jsonl", "--input-format", "parquet"],
        &["--db", "y.db", "dedup", "docs.jsonl", "--text-field", "body", "--strict"],
        &["--db", "y.db", "dedup", "docs.jsonl", "--format", "parquet"],
        &["--db", "y.db", "dedup", "docs.jsonl", "--write-deduplicated", "out.csv"],
        &["--db", "x.db", "dedup", "c", "--text-field", "body"],
    ];
    for args in cases {
        let start = Instant::now();
        let out = run(d, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(start.elapsed() < Duration::from_secs(10), "{args:?} took {:?}", start.elapsed());
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        let mut json = args.to_vec();
        json.push("--json");
        let out = run(d, &json);
        assert_eq!(out.status.code(), Some(2), "{json:?}");
        json_error(&out);
    }
}

#[test]
fn exit_3_when_another_process_holds_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    // This test process holds the file open for writing (and so its writer lock). Commands
    // that only read open read-only and share the file; writers are refused.
    let held = sketchdb::Database::open(d.join("x.db")).unwrap();
    for args in [&["--db", "x.db", "stats"][..], &["x.db", "query", "c", "a"]] {
        let out = run(d, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    for args in [
        &["--busy-timeout", "0", "--db", "x.db", "ingest", "c", "docs.jsonl"][..],
        &["--busy-timeout", "0", "--db", "x.db", "drop", "f"],
        &["--busy-timeout", "0", "--db", "x.db", "dedup", "docs.jsonl"],
    ] {
        let out = run(d, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let mut json = args.to_vec();
        json.push("--json");
        let v = json_error(&run(d, &json));
        assert_eq!(v["error"]["kind"], "busy");
        assert!(v["error"]["message"].as_str().unwrap_or("").contains("x.db"), "{v}");
    }
    drop(held);
    assert_eq!(run(d, &["--db", "x.db", "stats"]).status.code(), Some(0));
}

#[test]
fn help_documents_the_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_sketchdb")).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for line in ["Exit codes:", "0  success", "1  runtime error", "2  usage or bad input", "3  the database is busy"] {
        assert!(help.contains(line), "{line} missing from: {help}");
    }
}
