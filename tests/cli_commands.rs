//! Every subcommand's normal path, run through the binary; `--json` output parses.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(dir).args(args).output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json_lines(s: &str) -> Vec<Value> {
    s.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect()
}

#[test]
fn a_session_through_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("docs.jsonl"),
        r#"{"key":"a","text":"the quick brown fox jumps over the lazy dog near the river bank today"}
{"key":"b","text":"the quick brown fox jumps over the lazy dog near the river bank tonight"}
{"key":"c","text":"completely different words about databases and sketches and hashing"}
"#,
    )
    .unwrap();
    ok(d, &["create", "docs", "--kind", "oph", "--k", "128", "--bits", "8", "--shingle", "3"]);
    let err = String::from_utf8(run(d, &["ingest", "docs", "docs.jsonl"]).stderr).unwrap();
    assert!(err.contains("ingested 3 records"), "{err}");
    let list = json_lines(&ok(d, &["list", "--json"]));
    assert_eq!(list[0]["name"], "docs");
    assert_eq!(list[0]["records"], 3);

    let hits = json_lines(&ok(d, &["query", "docs", "a", "--threshold", "0.5", "--json"]));
    let keys: Vec<&str> = hits.iter().map(|h| h["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["a", "b"]);
    assert!(hits[0]["lower"].as_f64().unwrap() <= hits[0]["estimate"].as_f64().unwrap());
    assert!(hits[0]["plan"].as_str().unwrap().contains("OphBinScan"));
    let by_text = json_lines(&ok(
        d,
        &["query", "docs", "--text", "databases and sketches and hashing", "--top-k", "1", "--json"],
    ));
    assert_eq!(by_text[0]["key"], "c");

    let est = json_lines(&ok(d, &["estimate", "docs", "a", "b", "--json"]));
    assert_eq!(est[0]["measure"], "jaccard");
    let explain = json_lines(&ok(d, &["explain", "docs", "a", "--threshold", "0.8", "--analyze", "--json"]));
    assert!(explain[0]["alternatives"].as_array().unwrap().len() >= 4);
    assert!(explain[0]["analyze"]["rows_touched"].as_u64().unwrap() >= 3);
    let forced = json_lines(&ok(d, &["query", "docs", "a", "--threshold", "0.5", "--plan", "full-scan", "--json"]));
    assert_eq!(forced.len(), 2);
    assert!(forced[0]["plan"].as_str().unwrap().starts_with("FullScan"));

    let stats = json_lines(&ok(d, &["stats", "--json"]));
    assert_eq!(stats[0]["live"], 3);
    assert!(stats[0]["index"].is_null());
    // A collection created with an LSH index shows it with its runs: writes of 3, 1, 1 and 1
    // rows leave 2 runs after the second and merge into one at the fourth (4 runs of one
    // size tier: each holds at most the entries of all newer ones).
    ok(d, &["create", "indexed", "--kind", "minhash", "--k", "32", "--lsh", "0.5", "--bands", "8", "--rows", "4"]);
    ok(d, &["ingest", "indexed", "docs.jsonl"]);
    let runs_now = |d: &Path| {
        let stats = json_lines(&ok(d, &["stats", "--json"]));
        let indexed = stats.iter().find(|s| s["collection"] == "indexed").unwrap().clone();
        indexed["index"].clone()
    };
    for (i, word) in ["one", "two", "three"].into_iter().enumerate() {
        let doc = format!(r#"{{"key":"{word}","text":"{word} more document to index"}}"#);
        std::fs::write(d.join("one.jsonl"), format!("{doc}\n")).unwrap();
        ok(d, &["ingest", "indexed", "one.jsonl"]);
        if i == 0 {
            assert_eq!(
                runs_now(d),
                serde_json::json!({"kind": "lsh", "bands": 8, "rows": 4, "runs": 2, "band_hash": 3, "removed_rows": 0,
                                   "banding": "given"})
            );
        }
    }
    assert_eq!(
        runs_now(d),
        serde_json::json!({"kind": "lsh", "bands": 8, "rows": 4, "runs": 1, "band_hash": 3, "removed_rows": 0,
                                   "banding": "given"})
    );
    ok(d, &["drop", "indexed"]);
    assert!(run(d, &["create", "bad", "--lsh", "0.5", "--simhash-tables", "3"]).status.code() != Some(0));
    let verify = json_lines(&ok(d, &["verify", "--json"]));
    assert_eq!(verify.last().unwrap()["ok"], true);
    ok(d, &["compact"]);

    // Export / import round trip is exact.
    ok(d, &["export", "docs", "--out", "docs.export"]);
    ok(d, &["--db", "copy.db", "import", "docs.export"]);
    let again = ok(d, &["--db", "copy.db", "export", "docs"]);
    assert_eq!(again, std::fs::read_to_string(d.join("docs.export")).unwrap());

    // Tokens and SimHash inputs.
    std::fs::write(
        d.join("sets.jsonl"),
        "{\"key\":\"s1\",\"tokens\":[1,2,3,18446744073709551615]}\n{\"key\":\"s2\",\"tokens\":[1,2,3,4]}\n",
    )
    .unwrap();
    ok(d, &["ingest", "sets", "sets.jsonl"]);
    let e = json_lines(&ok(d, &["estimate", "sets", "s1", "s2", "--json"]));
    assert!(e[0]["estimate"].as_f64().unwrap() > 0.0);
    std::fs::write(
        d.join("fp.jsonl"),
        "{\"key\":\"f1\",\"simhash\":\"00000000000000ff\"}\n{\"key\":\"f2\",\"simhash\":\"00000000000000fe\"}\n",
    )
    .unwrap();
    ok(d, &["create", "fps", "--kind", "simhash"]);
    ok(d, &["ingest", "fps", "fp.jsonl"]);
    let near = json_lines(&ok(d, &["query", "fps", "--simhash", "ff", "--radius", "1", "--json"]));
    assert_eq!(near.iter().map(|h| h["distance"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1]);
    let raw: Vec<u8> = [0xffu64, 0xfe, 0x1].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(d.join("fp.u64"), raw).unwrap();
    ok(d, &["ingest", "raw", "fp.u64"]);
    let near = json_lines(&ok(d, &["query", "raw", "0", "--radius", "2", "--json"]));
    assert_eq!(near.len(), 2);

    ok(d, &["drop", "raw"]);
    let bounds = json_lines(&ok(d, &["bounds", "--k", "128", "--threshold", "0.8", "--json"]));
    assert!(bounds.iter().all(|b| b["candidate_probability"].as_f64().unwrap() <= 1.0));
}

/// `query`, `explain` and `dedup` resolve their arguments the same way: without
/// `--threshold`, 0.9 (cosine) on a SimHash collection and 0.5 (Jaccard) otherwise.
#[test]
fn query_explain_and_dedup_agree_on_the_default_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("fp.jsonl"),
        "{\"key\":\"f1\",\"simhash\":\"00000000000000ff\"}\n{\"key\":\"f2\",\"simhash\":\"00000000000000fe\"}\n",
    )
    .unwrap();
    ok(d, &["create", "fps", "--kind", "simhash"]);
    ok(d, &["ingest", "fps", "fp.jsonl"]);
    std::fs::write(
        d.join("sets.jsonl"),
        "{\"key\":\"s1\",\"tokens\":[1,2,3,4]}\n{\"key\":\"s2\",\"tokens\":[1,2,3,5]}\n",
    )
    .unwrap();
    ok(d, &["ingest", "sets", "sets.jsonl"]);
    for (coll, key, want) in [("fps", "f1", "Verify(estimate >= 0.9)"), ("sets", "s1", "Verify(estimate >= 0.5)")] {
        let hits = json_lines(&ok(d, &["query", coll, key, "--json"]));
        assert!(!hits.is_empty());
        assert!(hits.iter().all(|h| h["plan"].as_str().unwrap().ends_with(want)), "query {coll}: {hits:?}");
        let explain = json_lines(&ok(d, &["explain", coll, key, "--json"]));
        assert!(explain[0]["plan"].as_str().unwrap().ends_with(want), "explain {coll}: {explain:?}");
        let explained = ok(d, &["dedup", coll, "--explain"]);
        assert!(explained.lines().next().is_some_and(|l| l.starts_with("plan: ") && l.ends_with(want)), "{explained}");
        assert!(explained.contains("alternatives:"), "{explained}");
        let out = run(d, &["dedup", coll]);
        assert!(out.status.success());
        let threshold = want.trim_start_matches("Verify(estimate ").trim_end_matches(')');
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("similarity {threshold}")), "dedup {coll}: {err}");
    }
}

/// `reindex` builds an index over rows loaded without one (the same answers as before, now
/// through the index), replaces it, drops it with `--none`, and refuses bad requests with a
/// usage error naming what to give.
#[test]
fn reindex_builds_replaces_and_drops_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fps: Vec<u64> = (0..2_000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let mut lines: String =
        fps.iter().enumerate().map(|(i, f)| format!("{{\"key\":\"f{i}\",\"simhash\":\"{f:016x}\"}}\n")).collect();
    // A planted neighbour of f7 at distance 2.
    lines.push_str(&format!("{{\"key\":\"near\",\"simhash\":\"{:016x}\"}}\n", fps[7] ^ 0b101));
    std::fs::write(d.join("fp.jsonl"), lines).unwrap();
    ok(d, &["create", "fps", "--kind", "simhash"]);
    ok(d, &["ingest", "fps", "fp.jsonl"]);
    let keys = |hits: &[Value]| {
        let mut k: Vec<String> = hits.iter().map(|h| h["key"].as_str().unwrap().to_string()).collect();
        k.sort();
        k
    };
    let before = json_lines(&ok(d, &["query", "fps", "f7", "--radius", "3", "--json"]));
    assert_eq!(keys(&before), ["f7", "near"]);

    // The summary of a command that changes the file is on stderr.
    let out = run(d, &["reindex", "fps", "--simhash-tables", "3"]);
    assert!(out.status.success());
    let out = String::from_utf8_lossy(&out.stderr);
    assert!(out.contains("2001 rows") && out.contains("simhash: 4 tables, radius 3"), "{out}");
    let stats = json_lines(&ok(d, &["stats", "--json"]));
    assert_eq!(stats[0]["index"]["kind"], "simhash");
    let probe = ["query", "fps", "f7", "--radius", "3", "--plan", "simhash-probe", "--json"];
    let after = json_lines(&ok(d, &probe));
    assert_eq!(keys(&after), keys(&before));
    assert!(after[0]["plan"].as_str().unwrap().starts_with("Simhash"), "{after:?}");

    ok(d, &["reindex", "fps", "--simhash-tables", "2"]);
    let stats = json_lines(&ok(d, &["stats", "--json"]));
    assert_eq!(stats[0]["index"]["radius"], 2);
    ok(d, &["reindex", "fps", "--none"]);
    assert!(json_lines(&ok(d, &["stats", "--json"]))[0]["index"].is_null());
    assert!(!run(d, &probe).status.success(), "a forced table probe without tables");
    assert_eq!(keys(&json_lines(&ok(d, &["query", "fps", "f7", "--radius", "3", "--json"]))), keys(&before));

    let usage = run(d, &["reindex", "fps"]);
    assert_eq!(usage.status.code(), Some(2));
    let err = String::from_utf8_lossy(&usage.stderr);
    assert!(err.contains("--lsh") && err.contains("--simhash-tables") && err.contains("--none"), "{err}");
    let wrong = run(d, &["reindex", "fps", "--lsh", "0.8"]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("simhash"));
    assert!(!run(d, &["reindex", "nope", "--none"]).status.success());
}
