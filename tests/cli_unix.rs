//! The CLI as a Unix tool: a closed stdout ends a command quietly with exit 0, summaries of
//! changes go to stderr (as JSON under `--json`), `sketchdb DB COMMAND` works like `--db`,
//! `bounds` and `create --lsh` agree on the banding, `--help` offers only working options,
//! SimHash output names its measure and prints every hex digit, tables shorten long lists.
#![cfg(feature = "cli")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use common::cli::{ok, run};

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// `n` records in pairs of identical token sets (`n / 2` clusters of two).
fn pairs_file(d: &Path, n: usize) {
    let mut s = String::new();
    for i in 0..n {
        let base = (i / 2) * 1000;
        let tokens: Vec<String> = (base..base + 40).map(|t| t.to_string()).collect();
        s.push_str(&format!("{{\"key\":\"k{i}\",\"tokens\":[{}]}}\n", tokens.join(",")));
    }
    std::fs::write(d.join("pairs.jsonl"), s).unwrap();
}

/// Runs the binary, reads one line of its stdout, closes the pipe (as `| head -1` does) and
/// waits: exit 0, nothing on stderr but summaries, no panic.
fn head_1(dir: &Path, args: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "{args:?}: no output");
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    assert!(!err.contains("panicked") && !err.contains("error"), "{args:?}: {err}");
}

#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs_file(d, 20_000);
    ok(d, &["--db", "x.db", "ingest", "c", "pairs.jsonl"]);
    for i in 0..40 {
        ok(d, &["--db", "x.db", "create", &format!("c{i:02}")]);
    }
    head_1(d, &["--db", "x.db", "export", "c"]);
    head_1(d, &["--db", "x.db", "query", "c", "k0", "--top-k", "20000", "--json"]);
    head_1(d, &["--db", "x.db", "query", "c", "k0", "--top-k", "20000"]);
    head_1(d, &["--db", "x.db", "dedup", "c", "--threshold", "0.9", "--json"]);
    head_1(d, &["--db", "x.db", "dedup", "c", "--threshold", "0.9", "--format", "csv"]);
    head_1(d, &["--db", "x.db", "dedup", "c", "--threshold", "0.9"]);
    // An input ingested first (its summary on stderr), then the clusters cut short.
    head_1(d, &["--db", "y.db", "dedup", "pairs.jsonl", "--threshold", "0.9", "--json"]);
    head_1(d, &["--db", "x.db", "stats"]);
    head_1(d, &["--db", "x.db", "stats", "--json"]);
    head_1(d, &["--db", "x.db", "list"]);
    head_1(d, &["bounds"]);
    head_1(d, &["--help"]);
}

/// Every command that prints has `--json`; every line parses and has the documented fields
/// (docs/cli-json.md); summaries and errors are JSON on stderr.
#[test]
fn json_on_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs_file(d, 10);
    let summary = |out: &Output, command: &str| -> Value {
        let err = stderr(out);
        let line = err.lines().find(|l| l.contains("\"command\"")).unwrap_or_else(|| panic!("{command}: {err}"));
        let v = json(line);
        assert_eq!(v["command"], command, "{v}");
        v
    };
    let out = ok(d, &["--db", "x.db", "create", "c", "--lsh", "0.8", "--json"]);
    let v = summary(&out, "create");
    assert_eq!(v["collection"], "c");
    assert_eq!(v["index"]["kind"], "lsh");
    assert_eq!(v["weights"]["false_negative"], 0.9);
    let v = summary(&ok(d, &["--db", "x.db", "ingest", "c", "pairs.jsonl", "--json"]), "ingest");
    assert_eq!(v["records"], 10);
    assert!(v["seconds"].is_number() && v["skipped"] == 0, "{v}");
    let v = summary(&ok(d, &["--db", "x.db", "reindex", "c", "--lsh", "0.7", "--json"]), "reindex");
    assert_eq!(v["records"], 10);
    let v = summary(&ok(d, &["--db", "x.db", "export", "c", "--out", "c.export", "--json"]), "export");
    assert_eq!(v["records"], 10);
    let v = summary(&ok(d, &["--db", "y.db", "import", "c.export", "--json"]), "import");
    assert_eq!((v["records"].as_u64(), v["collection"].as_str()), (Some(10), Some("c")));
    let out = ok(d, &["--db", "x.db", "dedup", "c", "--threshold", "0.9", "--json"]);
    let v = summary(&out, "dedup");
    assert_eq!((v["records"].as_u64(), v["clusters"].as_u64(), v["duplicates"].as_u64()), (Some(10), Some(5), Some(5)));
    for line in stdout(&out).lines() {
        let c = json(line);
        assert_eq!(c["size"], 2);
        assert!(c["cluster"].is_u64() && c["keys"].is_array());
    }
    summary(&ok(d, &["--db", "x.db", "compact", "--json"]), "compact");

    let lines = |args: &[&str]| -> Vec<Value> { stdout(&ok(d, args)).lines().map(json).collect() };
    let stats = lines(&["--db", "x.db", "stats", "--json"]);
    assert_eq!((stats[0]["collection"].as_str(), stats[0]["records"].as_u64()), (Some("c"), Some(10)));
    let list = lines(&["--db", "x.db", "list", "--json"]);
    assert_eq!(list[0]["collection"], "c");
    let hits = lines(&["--db", "x.db", "query", "c", "k0", "--json"]);
    for f in ["query", "key", "measure", "estimate", "lower", "upper", "level", "row_id", "plan"] {
        assert!(!hits[0][f].is_null(), "{f} missing: {}", hits[0]);
    }
    assert_eq!(hits[0]["measure"], "jaccard");
    let e = lines(&["--db", "x.db", "estimate", "c", "k0", "k1", "--json"]);
    assert_eq!((e[0]["measure"].as_str(), e[0]["estimate"].as_f64()), (Some("jaccard"), Some(1.0)));
    let x = lines(&["--db", "x.db", "explain", "c", "k0", "--json"]);
    assert!(x[0]["plan"].is_string() && x[0]["alternatives"].is_array());
    let x = lines(&["--db", "x.db", "dedup", "c", "--explain", "--json"]);
    assert!(x[0]["plan"].is_string() && x[0]["reason"].is_string());
    let v = lines(&["--db", "x.db", "verify", "--json"]);
    assert_eq!(v.last().unwrap()["ok"], true);
    let b = lines(&["bounds", "--json"]);
    assert!(b.iter().all(|l| l["bands"].is_u64() && l["lower"].is_f64() && l["weights"].is_object()));
    let v = summary(&ok(d, &["--db", "x.db", "drop", "c", "--json"]), "drop");
    assert_eq!(v["collection"], "c");
}

/// Text summaries of changes are on stderr, never on stdout.
#[test]
fn summaries_of_changes_go_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs_file(d, 10);
    std::fs::create_dir(d.join("texts")).unwrap();
    std::fs::write(d.join("texts/a.txt"), "one two three four five six seven").unwrap();
    std::fs::write(d.join("texts/b.txt"), "one two three four five six seven").unwrap();
    for (args, needle) in [
        (&["--db", "x.db", "create", "c"][..], "created collection `c`"),
        (&["--db", "x.db", "ingest", "c", "pairs.jsonl"], "ingested 10 records"),
        (&["--db", "x.db", "reindex", "c", "--lsh", "0.8"], "reindexed `c`"),
        (&["--db", "x.db", "export", "c", "--out", "e.jsonl"], "exported 10 records"),
        (&["--db", "y.db", "import", "e.jsonl"], "imported 10 of 10 records"),
        (&["--db", "x.db", "compact"], "compacted"),
        (&["--db", "x.db", "dedup", "texts"], "1 of 2 records are duplicates"),
        (&["--db", "x.db", "drop", "c"], "dropped collection `c`"),
    ] {
        let out = ok(d, args);
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(!stdout(&out).contains(needle), "{args:?}");
    }
}

/// `sketchdb DB COMMAND` is `sketchdb --db DB COMMAND` for an existing file or a name ending
/// in .db or .sketchdb.
#[test]
fn database_first_like_sqlite3() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs_file(d, 4);
    ok(d, &["x.db", "ingest", "c", "pairs.jsonl"]);
    ok(d, &["y.sketchdb", "create", "c"]);
    std::fs::copy(d.join("x.db"), d.join("plainname")).unwrap();
    for db in ["x.db", "plainname"] {
        let a = stdout(&ok(d, &[db, "stats", "--json"]));
        let b = stdout(&ok(d, &["--db", db, "stats", "--json"]));
        assert_eq!(json(a.lines().next().unwrap())["records"], json(b.lines().next().unwrap())["records"]);
    }
    assert_eq!(run(d, &["not-a-file", "stats"]).status.code(), Some(2));
}

/// `bounds` proposes the banding `create --lsh` builds, for the same threshold and weights,
/// and both print the weights.
#[test]
fn bounds_and_create_lsh_agree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for t in ["0.5", "0.7", "0.8", "0.9"] {
        let b = stdout(&ok(d, &["bounds", "--threshold", t, "--json"]));
        let b = json(b.lines().next().unwrap());
        let name = format!("c{t}");
        let created = ok(d, &["--db", "x.db", "create", &name, "--lsh", t, "--json"]);
        let c = json(stderr(&created).lines().find(|l| l.contains("\"create\"")).unwrap());
        assert_eq!((b["bands"].clone(), b["rows"].clone()), (c["index"]["bands"].clone(), c["index"]["rows"].clone()));
        assert_eq!(b["weights"], c["weights"], "t = {t}");
        let text = stdout(&ok(d, &["bounds", "--threshold", t]));
        assert!(text.contains("weights false positives 0.1, false negatives 0.9"), "{text}");
        let text = stderr(&ok(d, &["--db", "z.db", "create", &name, "--lsh", t]));
        assert!(text.contains("weights false positives 0.1, false negatives 0.9"), "{text}");
    }
}

#[test]
fn help_offers_only_working_options() {
    let dir = tempfile::tempdir().unwrap();
    let help = stdout(&ok(dir.path(), &["dedup", "--help"]));
    assert!(!help.contains("--top-k"), "{help}");
    assert!(help.contains("--threshold") && help.contains("--radius"), "{help}");
    let help = stdout(&ok(dir.path(), &["explain", "--help"]));
    assert!(!help.contains("--queries") && help.contains("--text"), "{help}");
}

/// SimHash output names the measure (`distance` under a radius, `cosine` under a threshold)
/// and prints every hex digit of a fingerprint.
#[test]
fn simhash_names_its_measure_and_pads_hex() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("fps.jsonl"), "{\"key\":\"a\",\"simhash\":\"ff\"}\n{\"key\":\"b\",\"simhash\":\"fe\"}\n")
        .unwrap();
    ok(d, &["--db", "x.db", "create", "f", "--kind", "simhash"]);
    ok(d, &["--db", "x.db", "ingest", "f", "fps.jsonl"]);
    let export = stdout(&ok(d, &["--db", "x.db", "export", "f"]));
    let rec = json(export.lines().nth(1).unwrap());
    assert_eq!(rec["simhash"], "00000000000000ff");
    let near = stdout(&ok(d, &["--db", "x.db", "query", "f", "a", "--radius", "1", "--json"]));
    for l in near.lines().map(json) {
        assert_eq!(l["measure"], "hamming_distance");
        assert!(l["distance"].is_u64() && l["cosine"].is_null(), "{l}");
    }
    let cos = stdout(&ok(d, &["--db", "x.db", "query", "f", "a", "--threshold", "0.5", "--json"]));
    for l in cos.lines().map(json) {
        assert_eq!(l["measure"], "cosine");
        assert_eq!(l["cosine"], l["estimate"]);
    }
    let table = stdout(&ok(d, &["--db", "x.db", "query", "f", "a", "--radius", "1"]));
    assert!(table.contains("distance") && !table.contains("interval"), "{table}");
}

/// A cluster's members are shortened to "... and N more" in the table, all with `--wide`.
#[test]
fn long_member_lists_are_shortened_unless_wide() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tokens: Vec<String> = (0..40).map(|t| t.to_string()).collect();
    let s: String = (0..30).map(|i| format!("{{\"key\":\"k{i}\",\"tokens\":[{}]}}\n", tokens.join(","))).collect();
    std::fs::write(d.join("same.jsonl"), s).unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "same.jsonl"]);
    let short = stdout(&ok(d, &["--db", "x.db", "dedup", "c"]));
    assert!(short.contains("... and 22 more"), "{short}");
    let wide = stdout(&ok(d, &["--db", "x.db", "dedup", "c", "--wide"]));
    assert!(!wide.contains("more") && wide.contains("k29"), "{wide}");
    let narrow = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["--db", "x.db", "stats"])
        .env("COLUMNS", "60")
        .output()
        .unwrap();
    let narrow = stdout(&narrow);
    assert!(narrow.lines().skip(1).all(|l| l.chars().count() <= 60), "{narrow}");
}

/// `upsert` replaces stored keys' records (inserting new ones); `delete` removes keys given
/// as arguments or in a file; both print one summary line on stderr.
#[test]
fn upsert_and_delete_keys() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs_file(d, 4);
    ok(d, &["--db", "x.db", "ingest", "c", "pairs.jsonl"]);
    let est = |a: &str, b: &str| -> f64 {
        json(stdout(&ok(d, &["--db", "x.db", "estimate", "c", a, b, "--json"])).trim())["estimate"].as_f64().unwrap()
    };
    assert_eq!(est("k0", "k1"), 1.0);
    std::fs::write(d.join("up.jsonl"), "{\"key\":\"k0\",\"tokens\":[7,8,9]}\n{\"key\":\"k9\",\"tokens\":[1]}\n")
        .unwrap();
    let out = ok(d, &["--db", "x.db", "upsert", "c", "up.jsonl", "--json"]);
    let v = json(stderr(&out).lines().find(|l| l.contains("\"upsert\"")).unwrap());
    assert_eq!((v["inserted"].as_u64(), v["replaced"].as_u64(), v["records"].as_u64()), (Some(1), Some(1), Some(2)));
    assert!(est("k0", "k1") < 0.1);
    std::fs::write(d.join("keys.txt"), "k1\r\n\nk2\nabsent\n").unwrap();
    let out = ok(d, &["--db", "x.db", "delete", "c", "k9", "--keys-from", "keys.txt"]);
    assert!(stderr(&out).contains("deleted 3 records from `c` (1 keys not present)"), "{}", stderr(&out));
    let stats = json(stdout(&ok(d, &["--db", "x.db", "stats", "--json"])).lines().next().unwrap());
    assert_eq!(stats["records"], 2);
    assert_eq!(run(d, &["--db", "x.db", "delete", "c"]).status.code(), Some(2));
}

/// `export` writes the collection's whole configuration, so `import` recreates the same
/// collection (index included); a second import is a no-op, `--upsert` replaces, and a file
/// with a bad record imports nothing at all.
#[test]
fn import_recreates_the_collection_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pairs_file(d, 6);
    ok(d, &["--db", "x.db", "create", "c", "--kind", "bbit", "--bits", "8", "--shingle", "3", "--lsh", "0.7"]);
    ok(d, &["--db", "x.db", "ingest", "c", "pairs.jsonl"]);
    ok(d, &["--db", "x.db", "export", "c", "--out", "e.jsonl"]);
    let import = |args: &[&str]| -> Value {
        let out = ok(d, args);
        json(stderr(&out).lines().find(|l| l.contains("\"import\"")).unwrap())
    };
    let v = import(&["--db", "y.db", "import", "e.jsonl", "--json"]);
    assert_eq!((v["inserted"].as_u64(), v["skipped"].as_u64()), (Some(6), Some(0)));
    let list = |db: &str| json(stdout(&ok(d, &["--db", db, "list", "--json"])).trim());
    assert_eq!(list("x.db")["sketch"], list("y.db")["sketch"]);
    assert_eq!(list("x.db")["tokenizer"], list("y.db")["tokenizer"]);
    let stats = |db: &str| json(stdout(&ok(d, &["--db", db, "stats", "--json"])).trim());
    assert_eq!(stats("y.db")["index"]["bands"], stats("x.db")["index"]["bands"]);
    assert_eq!(stats("y.db")["index"]["kind"], "lsh");
    let v = import(&["--db", "y.db", "import", "e.jsonl", "--json"]);
    assert_eq!((v["records"].as_u64(), v["skipped"].as_u64()), (Some(0), Some(6)));
    let v = import(&["--db", "y.db", "import", "e.jsonl", "--upsert", "--json"]);
    assert_eq!(v["replaced"], 6);
    assert_eq!(stats("y.db")["records"], 6);

    let mut text = std::fs::read_to_string(d.join("e.jsonl")).unwrap();
    text.push_str("{\"key\":\"late\",\"words\":\"not an array\"}\n");
    std::fs::write(d.join("bad.jsonl"), text).unwrap();
    let out = run(d, &["--db", "z.db", "import", "bad.jsonl", "--into", "fresh"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.jsonl:8:"), "{}", stderr(&out));
    assert!(!d.join("z.db").exists(), "a refused import writes nothing");
}
