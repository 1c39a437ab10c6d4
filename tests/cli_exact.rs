//! The CLI on a collection that keeps exact shingle sets: `create --exact-shingles`, `ingest`
//! stores each record's set (and its content hash: a rerun changes nothing), `query --json`
//! hits carry `exact_jaccard`, equal to a brute-force Jaccard over the collection tokenizer's
//! shingles, and `verify` passes; `dedup --clustering` names its clustering and the
//! representative clustering's members all pair with their representative.
#![cfg(feature = "cli")]

mod common;

use common::cli::{ok, run};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use sketchdb::Database;

fn lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn jaccard(a: &BTreeSet<u64>, b: &BTreeSet<u64>) -> f64 {
    let both = a.intersection(b).count();
    both as f64 / (a.len() + b.len() - both) as f64
}

/// Documents in families: a base of 40 words with a few words replaced, so pairs within a
/// family span a range of Jaccard values and families share nothing.
fn docs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in 0..4 {
        let base: Vec<String> = (0..40).map(|w| format!("w{f}x{w}")).collect();
        for v in 0..4 {
            let words: Vec<String> = base
                .iter()
                .enumerate()
                .map(|(i, w)| if i % 10 < v { format!("r{f}v{v}i{i}") } else { w.clone() })
                .collect();
            out.push((format!("d{f}{v}"), words.join(" ")));
        }
    }
    out
}

#[test]
fn ingest_into_an_exact_collection_reports_exact_jaccard_equal_to_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let created = lines(
        &ok(
            d,
            &[
                "--db",
                "x.db",
                "--json",
                "create",
                "c",
                "--kind",
                "bbit",
                "--k",
                "256",
                "--bits",
                "8",
                "--exact-shingles",
            ],
        )
        .stderr,
    );
    assert_eq!(created[0]["exact_shingles"], true, "{created:?}");
    let docs = docs();
    let jsonl: String = docs.iter().map(|(k, t)| format!("{}\n", serde_json::json!({"id": k, "text": t}))).collect();
    std::fs::write(d.join("docs.jsonl"), jsonl).unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "docs.jsonl"]);
    // The content hash is stored with the set: a second run finds every record unchanged.
    let again = lines(&ok(d, &["--db", "x.db", "--json", "ingest", "c", "docs.jsonl"]).stderr);
    assert_eq!(again.last().unwrap()["unchanged"], docs.len(), "{again:?}");

    let tokenizer = Database::open(d.join("x.db")).unwrap().collection("c").unwrap().config().tokenizer;
    let sets: BTreeMap<&str, BTreeSet<u64>> =
        docs.iter().map(|(k, t)| (k.as_str(), tokenizer.tokens(t).into_iter().collect())).collect();
    let mut checked = 0;
    for (key, text) in &docs {
        for probe in [vec!["query", "c", key.as_str()], vec!["query", "c", "--text", text.as_str()]] {
            let mut args = vec!["--db", "x.db", "--json"];
            args.extend(probe);
            args.extend(["--threshold", "0.3"]);
            for hit in lines(&ok(d, &args).stdout) {
                let other = hit["key"].as_str().unwrap();
                let want = jaccard(&sets[key.as_str()], &sets[other]);
                let got = hit["exact_jaccard"].as_f64().unwrap_or_else(|| panic!("no exact_jaccard: {hit}"));
                assert!((got - want).abs() < 1e-12, "{key} ~ {other}: {got} != {want}");
                assert!(got >= 0.3, "{key} ~ {other}: kept at {got} below the threshold");
                checked += 1;
            }
        }
    }
    assert!(checked > 2 * docs.len(), "only {checked} hits");
    // EXPLAIN of a key or text question says the scores are exact; of a bare signature, estimated.
    let (key, text) = (&docs[0].0, &docs[0].1);
    for probe in [vec![key.as_str()], vec!["--text", text.as_str()]] {
        let mut args = vec!["--db", "x.db", "explain", "c"];
        args.extend(probe);
        args.extend(["--threshold", "0.3"]);
        let shown = String::from_utf8(ok(d, &args).stdout).unwrap();
        assert!(shown.contains("scores: exact"), "{shown}");
    }
    ok(d, &["--db", "x.db", "verify"]);
}

/// A chain of five records: k{i} holds tokens [20i, 20i + 60), so neighbours have Jaccard
/// 0.5, records two apart 0.2 and further ones nothing.
fn chain(d: &Path) -> BTreeSet<(String, String)> {
    let mut s = String::new();
    for i in 0..5u64 {
        let tokens: Vec<String> = (20 * i..20 * i + 60).map(|t| t.to_string()).collect();
        s.push_str(&format!("{{\"id\":\"k{i}\",\"tokens\":[{}]}}\n", tokens.join(",")));
    }
    std::fs::write(d.join("chain.jsonl"), s).unwrap();
    ok(d, &["--db", "x.db", "create", "c", "--kind", "bbit", "--k", "256", "--bits", "8", "--exact-shingles"]);
    ok(d, &["--db", "x.db", "ingest", "c", "chain.jsonl"]);
    (0..4).map(|i| (format!("k{i}"), format!("k{}", i + 1))).collect()
}

fn dedup(d: &Path, clustering: Option<&str>) -> (Vec<Value>, Value, BTreeSet<(String, String)>) {
    let mut args = vec!["--db", "x.db", "--json", "dedup", "c", "--threshold", "0.4", "--pairs", "pairs.jsonl"];
    if let Some(c) = clustering {
        args.extend(["--clustering", c]);
    }
    let out = ok(d, &args);
    let summary = lines(&out.stderr).into_iter().find(|v| v["command"] == "dedup").unwrap();
    let pairs = lines(&std::fs::read(d.join("pairs.jsonl")).unwrap())
        .iter()
        .map(|p| {
            let (a, b) = (p["a"].as_str().unwrap().to_string(), p["b"].as_str().unwrap().to_string());
            if a < b { (a, b) } else { (b, a) }
        })
        .collect();
    (lines(&out.stdout), summary, pairs)
}

#[test]
fn dedup_clustering_components_chains_and_representative_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let truth = chain(d);

    let (clusters, summary, pairs) = dedup(d, None);
    assert_eq!(summary["clustering"], "components", "{summary}");
    assert_eq!(pairs, truth, "verified pairs are the chain's links");
    assert_eq!(clusters.len(), 1, "{clusters:?}");
    assert_eq!(clusters[0]["keys"], serde_json::json!(["k0", "k1", "k2", "k3", "k4"]));
    assert!(clusters[0].get("representative").is_none());

    let (clusters, summary, pairs) = dedup(d, Some("representative"));
    assert_eq!(summary["clustering"], "representative", "{summary}");
    assert_eq!(pairs, truth);
    let mut seen = BTreeSet::new();
    for c in &clusters {
        let rep = c["representative"].as_str().unwrap_or_else(|| panic!("no representative: {c}"));
        for k in c["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()) {
            assert!(seen.insert(k.to_string()), "{k} in two clusters");
            if k != rep {
                let pair = if k < rep { (k.to_string(), rep.to_string()) } else { (rep.to_string(), k.to_string()) };
                assert!(pairs.contains(&pair), "{k} is not a verified pair with its representative {rep}");
            }
        }
    }
    // The chain is cut: k1 (first of the most-linked) takes k0 and k2, then k3 takes k4.
    let keys: Vec<&Value> = clusters.iter().map(|c| &c["keys"]).collect();
    assert_eq!(keys, [&serde_json::json!(["k0", "k1", "k2"]), &serde_json::json!(["k3", "k4"])]);

    let bad = run(d, &["--db", "x.db", "dedup", "c", "--clustering", "chains"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown clustering `chains`"));
}
