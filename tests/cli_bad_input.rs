//! Bad input to the binary: one clear line naming what and where, the exit code of its class
//! (2 for bad input or usage, 1 for a runtime error such as a missing file or name), never a
//! panic.

use std::path::Path;
use std::process::{Command, Output};

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(dir).args(args).output().unwrap()
}

/// Bad input or usage.
const BAD: i32 = 2;
/// A runtime error (a missing file or name, a damaged file).
const RUNTIME: i32 = 1;

fn fails_with(dir: &Path, code: i32, args: &[&str], needle: &str) {
    fails_with_all(dir, code, args, &[needle]);
}

/// Exit code `code` and one error line holding every needle.
fn fails_with_all(dir: &Path, code: i32, args: &[&str], needles: &[&str]) {
    let out = run(dir, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: expected `{needle}` in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.lines().filter(|l| l.starts_with("sketchdb: error")).count() == 1, "{err}");
}

#[test]
fn bad_inputs_are_one_clear_line_and_their_class_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fails_with(d, RUNTIME, &["ingest", "c", "missing.jsonl"], "missing.jsonl");
    std::fs::write(d.join("bad.jsonl"), "{\"key\":\"a\",\"text\":\"fine\"}\n\n{\"key\": \"b\", \"text\": \n").unwrap();
    fails_with(d, BAD, &["ingest", "c", "bad.jsonl", "--strict"], "bad.jsonl:3: invalid JSON");
    std::fs::write(d.join("both.jsonl"), "{\"key\":\"a\",\"text\":\"x\",\"tokens\":[1]}\n").unwrap();
    fails_with(d, BAD, &["ingest", "c", "both.jsonl", "--strict"], "both.jsonl:1: a record needs exactly one of");
    std::fs::write(d.join("neg.jsonl"), "{\"key\":\"a\",\"tokens\":[-1]}\n").unwrap();
    fails_with(d, BAD, &["ingest", "c", "neg.jsonl", "--strict"], "neg.jsonl:1:");
    std::fs::write(d.join("utf.jsonl"), b"{\"key\":\"a\",\"text\":\"\xff\xfe\"}\n").unwrap();
    fails_with(d, BAD, &["ingest", "c", "utf.jsonl", "--strict"], "utf.jsonl:1: invalid UTF-8");
    std::fs::create_dir(d.join("texts")).unwrap();
    std::fs::write(d.join("texts/bad.txt"), b"ok \xc3\x28 broken").unwrap();
    // A file of a folder that is not UTF-8 is skipped as binary and reported, never an error.
    let out = run(d, &["ingest", "t", "texts", "--strict"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.txt (binary)"));
    std::fs::write(d.join("short.u64"), [1u8, 2, 3]).unwrap();
    fails_with(d, BAD, &["ingest", "f", "short.u64"], "not a whole number of little-endian u64");
    std::fs::write(d.join("fp.jsonl"), "{\"key\":\"a\",\"simhash\":\"xyz\"}\n").unwrap();
    fails_with(d, BAD, &["ingest", "f", "fp.jsonl", "--strict"], "fp.jsonl:1: field `simhash`");

    let mut huge = String::from("{\"key\":\"a\",\"text\":\"");
    huge.push_str(&"x".repeat(17 << 20));
    huge.push_str("\"}\n");
    std::fs::write(d.join("huge.jsonl"), huge).unwrap();
    fails_with(d, BAD, &["ingest", "c", "huge.jsonl", "--strict"], "huge.jsonl:1: record larger than 16777216 bytes");

    // A database now exists (the failed ingests created it); unknown names and bad params.
    fails_with(d, RUNTIME, &["query", "nope", "k", "--threshold", "0.5"], "unknown collection `nope`");
    fails_with(d, BAD, &["create", "x", "--kind", "bogus"], "unknown sketch kind `bogus`");
    fails_with(d, BAD, &["create", "x", "--kind", "bbit", "--bits", "3"], "`b` = 3");
    fails_with(d, BAD, &["create", "x", "--kind", "minhash", "--k", "0"], "`k` = 0");
    std::fs::write(d.join("ok.jsonl"), "{\"key\":\"a\",\"text\":\"some words here to sketch\"}\n").unwrap();
    assert!(run(d, &["ingest", "c", "ok.jsonl"]).status.success());
    fails_with(d, BAD, &["query", "c", "a", "--threshold", "1.5"], "threshold");
    fails_with(d, BAD, &["query", "c", "a", "--radius", "3"], "SimHash");
    fails_with(d, RUNTIME, &["query", "c", "missing-key", "--top-k", "3"], "no key `missing-key`");
    fails_with(d, BAD, &["query", "c", "a", "--plan", "nonsense"], "unknown plan `nonsense`");
    fails_with(d, RUNTIME, &["--db", "absent.db", "stats"], "absent.db does not exist");
    std::fs::write(d.join("notdb.db"), b"this is not a database file at all").unwrap();
    fails_with(d, RUNTIME, &["--db", "notdb.db", "stats"], "notdb.db");
    fails_with(d, BAD, &["import", "bad.jsonl"], "bad.jsonl:1: not a sketchdb export");

    // Usage errors are clap's: exit code 2.
    assert_eq!(run(d, &["query"]).status.code(), Some(2));
}

/// Empty workload files are an error naming the file (they used to index out of bounds).
#[test]
fn bench_workloads_refuse_empty_inputs_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("sets.jsonl"), "{\"key\":\"s\",\"tokens\":[1,2,3,4]}\n").unwrap();
    std::fs::write(d.join("queries.jsonl"), "{\"qid\":\"q\",\"tokens\":[1,2,3,4],\"truth\":{\"0.8\":[\"s\"]}}\n")
        .unwrap();
    std::fs::write(d.join("empty.jsonl"), "\n").unwrap();
    std::fs::write(d.join("one.u64"), 7u64.to_le_bytes()).unwrap();
    std::fs::write(d.join("empty.u64"), b"").unwrap();
    std::fs::write(d.join("truth.jsonl"), "").unwrap();
    fails_with(
        d,
        BAD,
        &["bench", "lsh", "--sets", "empty.jsonl", "--queries", "queries.jsonl", "--thresholds", "0.8"],
        "no sets in empty.jsonl",
    );
    fails_with(
        d,
        BAD,
        &["bench", "lsh", "--sets", "sets.jsonl", "--queries", "empty.jsonl", "--thresholds", "0.8"],
        "no queries in empty.jsonl",
    );
    fails_with(
        d,
        BAD,
        &["bench", "hamming-query", "--fps", "one.u64", "--queries", "empty.u64", "--truth", "truth.jsonl"],
        "no query fingerprints in empty.u64",
    );
    fails_with(
        d,
        BAD,
        &["bench", "hamming-query", "--fps", "empty.u64", "--queries", "one.u64", "--truth", "truth.jsonl"],
        "no fingerprints in empty.u64",
    );
    fails_with(d, BAD, &["bench", "dedup", "--sets", "empty.jsonl"], "no sets in empty.jsonl");
    fails_with(d, BAD, &["bench", "minhash-create", "--sets", "empty.jsonl"], "no sets in empty.jsonl");
    // `--limit 0` loads no set at all (it used to load one before looking at the limit).
    fails_with_all(
        d,
        BAD,
        &["bench", "minhash-create", "--sets", "sets.jsonl", "--limit", "0"],
        &["sets.jsonl", "--limit 0"],
    );
}

/// `--batch` sizes the batch allocated up front: 0 or a huge value is a usage error.
#[test]
fn batch_sizes_outside_1_to_a_million_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ok.jsonl"), "{\"key\":\"a\",\"text\":\"some words here to sketch\"}\n").unwrap();
    assert!(run(d, &["ingest", "c", "ok.jsonl"]).status.success());
    assert!(run(d, &["export", "c", "--out", "c.export"]).status.success());
    for args in [
        &["ingest", "c", "ok.jsonl", "--batch", "0"][..],
        &["ingest", "c", "ok.jsonl", "--batch", "100000000000"],
        &["--db", "copy.db", "import", "c.export", "--batch", "0"],
        &["--db", "copy.db", "import", "c.export", "--batch", "1000001"],
    ] {
        let out = run(d, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--batch") && err.contains("1..=1000000"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!d.join("copy.db").exists(), "a refused import creates nothing");
}

/// `explain` shows the plan of one query; a file of queries is refused by name.
#[test]
fn explain_takes_one_probe() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ok.jsonl"), "{\"key\":\"a\",\"text\":\"some words here to sketch\"}\n").unwrap();
    assert!(run(d, &["ingest", "c", "ok.jsonl"]).status.success());
    std::fs::write(d.join("q.jsonl"), "{\"key\":\"a\"}\n").unwrap();
    fails_with_all(d, BAD, &["explain", "c", "--queries", "q.jsonl"], &["q.jsonl", "explain takes one probe"]);
}

/// With `--strict`, an error about one record names the file and line it came from (the file
/// for a text file).
#[test]
fn per_record_ingest_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = "{\"key\":\"a\",\"tokens\":[1,2,3]}\n{\"key\":\"b\",\"tokens\":[4,5,6]}\n";
    std::fs::write(d.join("keys.jsonl"), format!("{good}{{\"key\":\"\",\"tokens\":[7]}}\n")).unwrap();
    fails_with_all(d, BAD, &["ingest", "c", "keys.jsonl", "--strict"], &["keys.jsonl:3:", "empty key"]);
    std::fs::write(d.join("tokens.jsonl"), format!("{good}{{\"key\":\"z\",\"tokens\":[]}}\n")).unwrap();
    fails_with_all(d, BAD, &["ingest", "c", "tokens.jsonl", "--strict"], &["tokens.jsonl:3:", "no tokens"]);
    // A text file is named by its path.
    std::fs::create_dir(d.join("texts")).unwrap();
    std::fs::write(d.join("texts/fine.txt"), "words enough to make a sketch of").unwrap();
    std::fs::write(d.join("texts/blank.txt"), "  \n").unwrap();
    fails_with_all(d, BAD, &["ingest", "t", "texts", "--strict"], &["texts/blank.txt:", "no tokens"]);
}
