//! `sketchdb bench` reads the shared workload formats as they are and prints result lines in
//! the shared schema; `sketchdb calibrate` stores measured costs. Tiny generated workloads.

mod common;

use std::path::Path;
use std::process::Command;

use common::Rng;
use serde_json::{Value, json};

fn run(dir: &Path, args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(dir).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `sketchdb bench lsh` over the 300 sets and their queries at t = 0.8, with `extra` options.
fn bench_lsh(dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args =
        vec!["bench", "lsh", "--sets", "sets-300.jsonl", "--queries", "queries-300.jsonl", "--thresholds", "0.8"];
    args.extend_from_slice(extra);
    run(dir, &args)
}

fn check_schema(v: &Value, workload: &str) {
    for field in ["ts", "run_id", "system", "version", "workload", "dataset", "config", "metrics", "machine", "notes"] {
        assert!(v.get(field).is_some(), "missing `{field}` in {v}");
    }
    assert_eq!(v["system"], "sketchdb");
    assert_eq!(v["workload"], workload);
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(v["ts"].as_str().unwrap().ends_with("+00:00"));
}

/// 300 sets in families (a set and its near copies), 20 queries with exact truth.
fn write_sets(dir: &Path) {
    let mut rng = Rng(11);
    let mut sets: Vec<Vec<u64>> = Vec::new();
    for _ in 0..60 {
        let base: Vec<u64> = (0..150).map(|_| rng.next_u64()).collect();
        for v in 0..5 {
            let mut s: Vec<u64> = base.iter().copied().filter(|_| rng.range(0, 99) >= v * 4).collect();
            s.extend((0..v * 3).map(|_| rng.next_u64()));
            s.sort_unstable();
            s.dedup();
            sets.push(s);
        }
    }
    let lines: String =
        sets.iter().enumerate().map(|(i, s)| format!("{}\n", json!({"key": format!("doc{i}"), "tokens": s}))).collect();
    std::fs::write(dir.join("sets-300.jsonl"), lines).unwrap();
    let jac = |a: &[u64], b: &[u64]| {
        let inter = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
        inter as f64 / (a.len() + b.len() - inter) as f64
    };
    let mut out = String::new();
    for q in 0..20 {
        let tokens = &sets[q * 15];
        let mut truth = serde_json::Map::new();
        for t in [0.5, 0.7, 0.8, 0.9] {
            let keys: Vec<String> =
                (0..sets.len()).filter(|&i| jac(tokens, &sets[i]) >= t).map(|i| format!("doc{i}")).collect();
            truth.insert(format!("{t}"), json!(keys));
        }
        out.push_str(&format!(
            "{}\n",
            json!({"qid": format!("q{q}"), "tokens": tokens, "kind": "exact", "source": null, "target_jaccard": 1.0,
                   "truth": truth, "truth_jaccard": []})
        ));
    }
    std::fs::write(dir.join("queries-300.jsonl"), out).unwrap();
}

#[test]
fn bench_workloads_print_schema_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sets(d);
    let lines = run(d, &["bench", "minhash-create", "--sets", "sets-300.jsonl"]);
    assert!(!lines.is_empty());
    for l in &lines {
        check_schema(l, "minhash-create");
        assert!(l["metrics"]["tokens_per_s"].as_f64().unwrap() > 0.0);
    }
    let lines = bench_lsh(d, &["--dir", "kept"]);
    let workloads: Vec<&str> = lines.iter().map(|l| l["workload"].as_str().unwrap()).collect();
    assert_eq!(
        workloads,
        [
            "lsh-build",
            "lsh-query",
            "lsh-query-e2e",
            "persist",
            "sketch-size",
            "lsh-query",
            "lsh-query-stages",
            "lsh-query-batch",
            "lsh-query-batch",
            "lsh-maintain"
        ]
    );
    for l in &lines {
        check_schema(l, l["workload"].as_str().unwrap());
    }
    // Upserts, then deletes, of half the 300 sets at most: what is left verifies clean, one
    // row per set not deleted.
    let maintain = &lines[9];
    assert_eq!(maintain["config"]["rows"], 150, "{maintain}");
    assert!(maintain["metrics"]["upsert_per_s"].as_f64().unwrap() > 0.0, "{maintain}");
    assert!(maintain["metrics"]["delete_per_s"].as_f64().unwrap() > 0.0, "{maintain}");
    let kept = d.join("kept").join("lsh-minhash-0.8.sketchdb");
    let verify = run(d, &["--db", kept.to_str().unwrap(), "verify", "--json"]);
    assert_eq!(verify.last().unwrap()["ok"], true, "{verify:?}");
    let stats = run(d, &["--db", kept.to_str().unwrap(), "stats", "--json"]);
    assert_eq!((&stats[0]["live"], &stats[0]["deleted"]), (&json!(150), &json!(300)), "{stats:?}");
    // Every query is a stored set, so recall counts at least the query itself.
    let recall = lines[1]["metrics"]["recall"].as_f64().unwrap();
    let precision = lines[1]["metrics"]["precision"].as_f64().unwrap();
    assert!(recall > 0.5 && precision > 0.5, "{}", lines[1]);
    assert_eq!(lines[0]["config"]["batch"], 10_000);
    // The queries again after compaction (one run): the same entries, the same answers.
    // Where the compacted index's query time goes: execution and the rest, per query, and
    // the candidates each query verified (at least the query's own set).
    let stages = &lines[6]["metrics"];
    for field in ["p50_us", "execute_p50_us", "txn_stats_plan_p50_us", "rows_touched_per_query"] {
        assert!(stages[field].as_f64().unwrap() > 0.0, "{field}: {stages}");
    }
    assert!(stages["candidates_per_query"].as_f64().unwrap() >= 1.0, "{stages}");
    let compacted = &lines[5];
    // The same queries one by one and batched (query_many) on 1 and 2 threads: equal result
    // sets (checked inside the bench), so the recall and precision of the compacted queries.
    for (l, threads) in lines[7..9].iter().zip([1, 2]) {
        let m = &l["metrics"];
        assert_eq!((&l["config"]["threads"], &l["config"]["compacted"]), (&json!(threads), &json!(true)), "{l}");
        assert_eq!(m["equal_result_sets"], true, "{l}");
        for field in ["qps_single_probe", "qps_batched", "qps_batched_band_sorted"] {
            assert!(m[field].as_f64().unwrap() > 0.0, "{field}: {l}");
        }
        for field in ["recall_single_probe", "recall_batched"] {
            assert_eq!(m[field], compacted["metrics"]["recall"], "{field}: {l}");
        }
        for field in ["precision_single_probe", "precision_batched"] {
            assert_eq!(m[field], compacted["metrics"]["precision"], "{field}: {l}");
        }
    }
    assert_eq!(compacted["config"]["compacted"], true);
    assert!(compacted["notes"].as_str().unwrap().ends_with("after compaction (index of 1 run(s))"), "{compacted}");
    assert_eq!(compacted["metrics"]["recall"], lines[1]["metrics"]["recall"]);
    assert_eq!(compacted["metrics"]["precision"], lines[1]["metrics"]["precision"]);
    // Loaded in batches of 64 (an index of several runs, merged as it grows), the index
    // holds the same entries: the same verified answers.
    let small = bench_lsh(d, &["--batch", "64"]);
    assert_eq!(small[0]["config"]["batch"], 64);
    assert!(small[0]["notes"].as_str().unwrap().starts_with("batches of 64,"), "{}", small[0]);
    let runs_of = |l: &Value| -> u32 {
        let notes = l["notes"].as_str().unwrap();
        let at = notes.find("as loaded (index of ").expect("run count in the notes") + "as loaded (index of ".len();
        notes[at..].split(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(runs_of(&lines[1]), 1, "{}", lines[1]);
    assert!(runs_of(&small[1]) > 1, "{}", small[1]);
    assert_eq!(small[1]["metrics"]["recall"], lines[1]["metrics"]["recall"]);
    assert_eq!(small[1]["metrics"]["precision"], lines[1]["metrics"]["precision"]);
    let zero = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["bench", "lsh", "--sets", "sets-300.jsonl", "--queries", "queries-300.jsonl", "--batch", "0"])
        .output()
        .unwrap();
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--batch"), "{}", String::from_utf8_lossy(&zero.stderr));
    let lines = run(d, &["bench", "dedup", "--sets", "sets-300.jsonl", "--threshold", "0.8"]);
    check_schema(&lines[0], "dedup");
    assert!(lines[0]["metrics"]["clusters"].as_u64().unwrap() >= 30, "{}", lines[0]);

    // Fingerprints: planted neighbours at distance 0..3, truth computed by brute force.
    let mut rng = Rng(3);
    let mut fps: Vec<u64> = (0..5000).map(|_| rng.next_u64()).collect();
    let qs: Vec<u64> = (0..10).map(|_| rng.next_u64()).collect();
    for (i, q) in qs.iter().enumerate() {
        fps[i * 7] = q ^ ((1u64 << (i % 4)) - 1);
    }
    let bytes = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(d.join("fp-5000.u64"), bytes(&fps)).unwrap();
    std::fs::write(d.join("fp-queries.u64"), bytes(&qs)).unwrap();
    let truth: String = qs
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let m: Vec<(usize, u32)> =
                fps.iter().enumerate().map(|(r, f)| (r, (f ^ q).count_ones())).filter(|x| x.1 <= 3).collect();
            format!("{}\n", json!({"q": i, "fp": format!("0x{q:016x}"), "matches": m}))
        })
        .collect();
    std::fs::write(d.join("fp-5000.truth.jsonl"), truth).unwrap();
    let lines = run(
        d,
        &[
            "bench",
            "hamming-query",
            "--fps",
            "fp-5000.u64",
            "--queries",
            "fp-queries.u64",
            "--truth",
            "fp-5000.truth.jsonl",
        ],
    );
    check_schema(&lines[0], "hamming-query");
    assert_eq!(lines[0]["metrics"]["recall"], 1.0, "{}", lines[0]);
    assert_eq!(lines[0]["metrics"]["precision"], 1.0, "{}", lines[0]);
    assert_eq!(lines[0]["config"]["batch"], 100_000);
    // Loaded in small batches (tables maintained batch by batch) or in bulk (tables built
    // once at the end): the same exact answers.
    let base = ["bench", "hamming-query", "--fps", "fp-5000.u64", "--queries", "fp-queries.u64"];
    for (extra, note) in
        [(&["--batch", "700"][..], "batches of 700,"), (&["--bulk", "--batch", "2000"][..], "then the tables built")]
    {
        let args: Vec<&str> =
            base.iter().chain(["--truth", "fp-5000.truth.jsonl"].iter()).chain(extra).copied().collect();
        let l = &run(d, &args)[0];
        check_schema(l, "hamming-query");
        assert_eq!(
            (l["metrics"]["recall"].as_f64(), l["metrics"]["precision"].as_f64()),
            (Some(1.0), Some(1.0)),
            "{l}"
        );
        assert!(l["notes"].as_str().unwrap().contains(note), "{l}");
    }
}

#[test]
fn calibrate_stores_costs_that_explain_reports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["create", "c", "--kind", "oph", "--bits", "8"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let costs = run(d, &["calibrate", "--json"]);
    assert!(costs[0]["bin_compare_ns"].as_f64().unwrap() > 0.0);
    std::fs::write(d.join("x.jsonl"), "{\"key\":\"a\",\"tokens\":[1,2,3,4,5]}\n").unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(d).args(["ingest", "c", "x.jsonl"]).output().unwrap();
    assert!(out.status.success());
    let e = run(d, &["explain", "c", "a", "--threshold", "0.5", "--json"]);
    assert!(e[0]["reason"].as_str().unwrap().contains("calibrated"), "{}", e[0]);
}

#[test]
fn bench_warm_times_single_queries_over_a_kept_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sets(d);
    bench_lsh(d, &["--dir", "kept"]);
    let db = d.join("kept").join("lsh-minhash-0.8.sketchdb");
    let args =
        ["bench", "warm", "--db", db.to_str().unwrap(), "--collection", "sets", "--queries", "queries-300.jsonl"];
    let lines = run(d, &[&args[..], &["--threshold", "0.8", "--passes", "3"]].concat());
    let workloads: Vec<&str> = lines.iter().map(|l| l["workload"].as_str().unwrap()).collect();
    assert_eq!(workloads, ["warm-open", "warm-query", "warm-query-key", "warm-query-e2e", "warm-memory"]);
    for l in &lines {
        check_schema(l, l["workload"].as_str().unwrap());
    }
    assert!(lines[0]["metrics"]["first_query_s"].as_f64().unwrap() > 0.0, "{}", lines[0]);
    for l in &lines[1..4] {
        let m = &l["metrics"];
        // 20 queries (20 stored keys), the passes after the first timed.
        assert_eq!(m["queries"], 40, "{l}");
        for field in ["p50_us", "p99_us", "execute_p50_us", "txn_stats_plan_p50_us"] {
            assert!(m[field].as_f64().unwrap() > 0.0, "{field}: {l}");
        }
    }
    // The same questions from signatures and from tokens find the same rows.
    assert_eq!(lines[1]["metrics"]["hits_per_query"], lines[3]["metrics"]["hits_per_query"]);
    // A stored key finds at least itself.
    assert!(lines[2]["metrics"]["hits_per_query"].as_f64().unwrap() >= 1.0, "{}", lines[2]);
    // A missing queries file is an error naming it.
    let out = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["bench", "warm", "--db", db.to_str().unwrap(), "--collection", "sets", "--queries", "none.jsonl"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("none.jsonl"), "{}", String::from_utf8_lossy(&out.stderr));
}
