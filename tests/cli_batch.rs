//! Batch forms: `estimate --pairs FILE` (JSONL or TSV, or stdin) streams one line per pair,
//! equal to the one-pair command; `query --queries FILE` prints one line per query, queries
//! without hits included, with the query's plan and time under `--json`.
#![cfg(feature = "cli")]

mod common;

use common::cli::{lines, ok, run};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// 40 records: k{i} holds tokens [100 * (i / 4), +30 + i % 4): groups of four overlapping
/// sets, disjoint across groups.
fn setup(d: &Path) {
    let mut s = String::new();
    for i in 0..40u64 {
        let base = 100 * (i / 4);
        let tokens: Vec<String> = (base..base + 30 + i % 4).map(|t| t.to_string()).collect();
        s.push_str(&format!("{{\"key\":\"k{i}\",\"tokens\":[{}]}}\n", tokens.join(",")));
    }
    std::fs::write(d.join("c.jsonl"), s).unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "c.jsonl"]);
}

fn one_estimate(d: &Path, a: &str, b: &str) -> Value {
    lines(&ok(d, &["--db", "x.db", "estimate", "c", a, b, "--json"]).stdout).remove(0)
}

#[test]
fn estimate_pairs_from_jsonl_tsv_and_stdin_equal_the_one_pair_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let pairs: Vec<(String, String)> = (0..39).map(|i| (format!("k{i}"), format!("k{}", (i * 7 + 3) % 40))).collect();
    let jsonl: String = pairs.iter().map(|(a, b)| format!("{{\"a\":\"{a}\",\"b\":\"{b}\"}}\n")).collect();
    let tsv: String = pairs.iter().map(|(a, b)| format!("{a}\t{b}\r\n")).collect();
    std::fs::write(d.join("p.jsonl"), &jsonl).unwrap();
    std::fs::write(d.join("p.tsv"), format!("\n{tsv}")).unwrap();
    let from_jsonl = lines(&ok(d, &["--db", "x.db", "estimate", "c", "--pairs", "p.jsonl", "--json"]).stdout);
    let from_tsv = lines(&ok(d, &["--db", "x.db", "estimate", "c", "--pairs", "p.tsv", "--json"]).stdout);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["--db", "x.db", "estimate", "c", "--pairs", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(jsonl.as_bytes()).unwrap();
    let from_stdin = lines(&child.wait_with_output().unwrap().stdout);
    assert_eq!(from_jsonl.len(), pairs.len());
    assert_eq!(from_jsonl, from_tsv);
    assert_eq!(from_jsonl, from_stdin);
    for ((a, b), line) in pairs.iter().zip(&from_jsonl) {
        assert_eq!(*line, one_estimate(d, a, b), "the batch line equals the one-pair output");
        for f in ["a", "b", "measure", "estimate", "lower", "upper", "level"] {
            assert!(!line[f].is_null(), "{f} in {line}");
        }
    }
    // Human output: one line per pair too.
    let text = String::from_utf8(ok(d, &["--db", "x.db", "estimate", "c", "--pairs", "p.tsv"]).stdout).unwrap();
    assert_eq!(text.lines().count(), pairs.len());
    assert!(text.lines().all(|l| l.starts_with("jaccard(k")), "{text}");
}

#[test]
fn estimate_pairs_reports_unknown_keys_per_line_and_bad_lines_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    std::fs::write(
        d.join("p.jsonl"),
        "{\"a\":\"k0\",\"b\":\"k1\"}\n{\"a\":\"k0\",\"b\":\"nope\"}\n{\"a\":\"k2\",\"b\":\"k3\"}\n",
    )
    .unwrap();
    let out = run(d, &["--db", "x.db", "estimate", "c", "--pairs", "p.jsonl", "--json"]);
    assert_eq!(out.status.code(), Some(1), "unknown keys are a runtime error (not found)");
    let l = lines(&out.stdout);
    assert_eq!(l.len(), 3, "every pair gets its line");
    assert_eq!(l[1]["error"]["kind"], "not_found");
    assert!(l[1]["error"]["message"].as_str().unwrap().contains("nope"));
    assert!(l[2]["estimate"].is_number());
    let err = lines(&out.stderr);
    assert_eq!(err[0]["error"]["kind"], "not_found");
    assert!(err[0]["error"]["message"].as_str().unwrap().contains("1 of 3 pairs"), "{err:?}");

    std::fs::write(d.join("bad.tsv"), "k0\tk1\nk0 k1\n").unwrap();
    let out = run(d, &["--db", "x.db", "estimate", "c", "--pairs", "bad.tsv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.tsv:2"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(run(d, &["--db", "x.db", "estimate", "c", "k0"]).status.code(), Some(2), "one key alone");
    assert_eq!(run(d, &["--db", "x.db", "estimate", "c", "k0", "k1", "--pairs", "p.jsonl"]).status.code(), Some(2));
}

#[test]
fn query_file_prints_one_line_per_query_with_its_plan_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    // Stored keys, token probes, and a probe like nothing stored (no hits).
    let q = "{\"qid\":\"q1\",\"key\":\"k0\"}\n\n{\"key\":\"k5\"}\n{\"qid\":\"none\",\"tokens\":[999999,999998,999997]}\n{\"tokens\":[100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129]}\n";
    std::fs::write(d.join("q.jsonl"), q).unwrap();
    let out =
        lines(&ok(d, &["--db", "x.db", "query", "c", "--queries", "q.jsonl", "--threshold", "0.5", "--json"]).stdout);
    let labels: Vec<&str> = out.iter().map(|v| v["query"].as_str().unwrap()).collect();
    assert_eq!(labels, ["q1", "k5", "none", "line 5"]);
    for v in &out {
        assert!(v["plan"].is_string() && v["elapsed_us"].as_f64().unwrap() >= 0.0, "{v}");
        assert_eq!(v["results"].as_u64().unwrap() as usize, v["hits"].as_array().unwrap().len());
    }
    assert_eq!(out[2]["results"], 0, "a query without hits still has its line");
    // Each query's hits equal the one-probe command's.
    for (v, args) in out.iter().zip([
        vec!["k0"],
        vec!["k5"],
        vec!["--tokens", "999999,999998,999997"],
        vec!["--tokens", &(100..130).map(|t: u32| t.to_string()).collect::<Vec<_>>().join(",")],
    ]) {
        let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
        let one = lines(
            &ok(d, &[&["--db", "x.db", "query", "c"][..], &args, &["--threshold", "0.5", "--json"]].concat()).stdout,
        );
        let keys = |hits: &[Value]| hits.iter().map(|h| h["key"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(keys(v["hits"].as_array().unwrap()), keys(&one), "{v}");
        if let Some(first) = one.first() {
            assert_eq!(v["plan"], first["plan"]);
            assert_eq!(v["hits"][0]["estimate"], first["estimate"]);
        }
    }
    // k0..k3 overlap (30-33 tokens of 100..133): k0's query finds its group.
    assert!(out[0]["results"].as_u64().unwrap() >= 2);
}

/// `| head -1` of the batch outputs ends quietly with exit 0.
#[test]
fn a_closed_stdout_ends_the_batch_commands_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let pairs: String = (0..200_000).map(|i| format!("k{}\tk{}\n", i % 40, (i + 1) % 40)).collect();
    std::fs::write(d.join("p.tsv"), pairs).unwrap();
    let queries: String = (0..50_000).map(|i| format!("{{\"key\":\"k{}\"}}\n", i % 40)).collect();
    std::fs::write(d.join("q.jsonl"), queries).unwrap();
    for args in [
        &["--db", "x.db", "estimate", "c", "--pairs", "p.tsv", "--json"][..],
        &["--db", "x.db", "estimate", "c", "--pairs", "p.tsv"],
        &["--db", "x.db", "query", "c", "--queries", "q.jsonl", "--json"],
        &["--db", "x.db", "dedup", "c", "--threshold", "0.5", "--format", "csv", "--pairs", "pairs.jsonl"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
            .current_dir(d)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(!first.is_empty(), "{args:?}");
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("error"), "{args:?}: {err}");
    }
}

/// `query --queries`: a file longer than one batch (4096 probes) keeps the file's order and
/// equals the per-key answers; an unknown key fails the command naming its line, after the
/// answers of the lines before it.
#[test]
fn query_file_batches_keep_order_and_name_a_failing_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let queries: String = (0..9000).map(|i| format!("{{\"qid\":\"q{i}\",\"key\":\"k{}\"}}\n", (i * 7) % 40)).collect();
    std::fs::write(d.join("q.jsonl"), queries).unwrap();
    let out =
        lines(&ok(d, &["--db", "x.db", "query", "c", "--queries", "q.jsonl", "--threshold", "0.5", "--json"]).stdout);
    assert_eq!(out.len(), 9000);
    // On one thread, the same answers.
    let args = ["--db", "x.db", "query", "c", "--queries", "q.jsonl", "--threshold", "0.5", "--json", "--threads", "1"];
    let one = lines(&ok(d, &args).stdout);
    let no_time = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("elapsed_us");
        v
    };
    assert_eq!(one.len(), out.len());
    assert!(out.iter().zip(&one).all(|(a, b)| no_time(a) == no_time(b)));
    let keys = |v: &Value| v["hits"].as_array().unwrap().iter().map(|h| h["key"].to_string()).collect::<Vec<_>>();
    let per_key: Vec<Value> = (0..40)
        .map(|k| {
            let q = format!("{{\"key\":\"k{k}\"}}\n");
            std::fs::write(d.join("one.jsonl"), q).unwrap();
            lines(
                &ok(d, &["--db", "x.db", "query", "c", "--queries", "one.jsonl", "--threshold", "0.5", "--json"])
                    .stdout,
            )
            .remove(0)
        })
        .collect();
    for (i, v) in out.iter().enumerate() {
        assert_eq!(v["query"], format!("q{i}"));
        assert_eq!(keys(v), keys(&per_key[(i * 7) % 40]), "{v}");
    }

    let bad = "{\"key\":\"k1\"}\n{\"key\":\"k2\"}\n{\"key\":\"nope\"}\n{\"key\":\"k3\"}\n";
    std::fs::write(d.join("bad.jsonl"), bad).unwrap();
    let o = run(d, &["--db", "x.db", "query", "c", "--queries", "bad.jsonl", "--json"]);
    assert!(!o.status.success());
    let printed: Vec<String> = lines(&o.stdout).iter().map(|v| v["query"].as_str().unwrap().to_string()).collect();
    assert_eq!(printed, ["k1", "k2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.jsonl:3") && err.contains("nope"), "{err}");
}

/// A producer that writes one query line to standard input and waits for its answer before
/// writing the next gets each answer (a batch is asked when the lines read are used up).
#[test]
fn query_file_from_stdin_answers_each_line_as_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["--db", "x.db", "query", "c", "--queries", "-", "--threshold", "0.5", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for k in [0, 5, 9] {
        writeln!(stdin, "{{\"key\":\"k{k}\"}}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(v["query"], format!("k{k}"));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
