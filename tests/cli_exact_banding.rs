//! The CLI names the rule of an LSH index's banding: `create --exact-shingles --lsh T` builds
//! the recall banding (`BandingPurpose::ExactRecall`, weights 0.005 / 0.995) and says so, as do
//! `stats` and `explain` (text and JSON); a collection without exact shingles gets the
//! default banding, and `reindex --bands --rows` a given one.
#![cfg(feature = "cli")]

mod common;

use std::path::Path;

use common::cli::ok;
use serde_json::Value;
use sketchdb::SketchParams;
use sketchdb::lsh::{BandingPurpose, index_band_scheme_for};

const SKETCH: [&str; 6] = ["--kind", "oph", "--k", "512", "--bits", "8"];

/// The JSON lines of an output (stderr also carries notices).
fn lines(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    text.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn summary(out: &std::process::Output, command: &str) -> Value {
    lines(&out.stderr).into_iter().find(|v| v["command"] == command).unwrap_or_else(|| panic!("no {command} summary"))
}

fn stats_index(d: &Path, collection: &str) -> Value {
    let rows = lines(&ok(d, &["--db", "x.db", "--json", "stats"]).stdout);
    rows.into_iter().find(|v| v["collection"] == collection).expect("listed")["index"].clone()
}

#[test]
fn create_stats_and_explain_name_the_recall_banding_of_an_exact_collection() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let params = SketchParams::oph(512, 8, sketchdb::recipes::DEFAULT_SEED).unwrap();
    let rule = |p| index_band_scheme_for(&params, 0.8, None, None, p).unwrap().params;
    let (e, p) = (rule(BandingPurpose::ExactRecall), rule(BandingPurpose::Estimated));
    assert_ne!(e, p);

    let mut args = vec!["--db", "x.db", "--json", "create", "e", "--exact-shingles", "--lsh", "0.8"];
    args.extend(SKETCH);
    let v = summary(&ok(d, &args), "create");
    assert_eq!(
        (v["index"]["bands"].as_u64(), v["index"]["rows"].as_u64()),
        (Some(e.bands.into()), Some(e.rows.into()))
    );
    assert_eq!(v["index"]["banding"], "recall (exact)", "{v}");
    assert_eq!(v["weights"]["false_negative"], 0.995, "{v}");
    let mut args = vec!["--db", "x.db", "--json", "create", "p", "--lsh", "0.8"];
    args.extend(SKETCH);
    let v = summary(&ok(d, &args), "create");
    assert_eq!(
        (v["index"]["bands"].as_u64(), v["index"]["rows"].as_u64()),
        (Some(p.bands.into()), Some(p.rows.into()))
    );
    assert_eq!(v["index"]["banding"], "default", "{v}");
    assert_eq!(v["weights"]["false_negative"], 0.9, "{v}");
    let mut args = vec!["--db", "y.db", "create", "e", "--exact-shingles", "--lsh", "0.8"];
    args.extend(SKETCH);
    let text = String::from_utf8(ok(d, &args).stderr).unwrap();
    assert!(text.contains(&format!("lsh: {} x {} (recall (exact))", e.bands, e.rows)), "{text}");
    assert!(text.contains("weights false positives 0.005, false negatives 0.995"), "{text}");

    assert_eq!(stats_index(d, "e")["banding"], "recall (exact)");
    assert_eq!(stats_index(d, "p")["banding"], "default");
    let text = String::from_utf8(ok(d, &["--db", "x.db", "stats"]).stdout).unwrap();
    assert!(text.contains("(recall (exact))") && text.contains("(default)"), "{text}");

    let docs: String = (0..30)
        .map(|i| {
            let words: Vec<String> = (0..60).map(|w| format!("w{}x{w}", i / 3)).collect();
            format!("{}\n", serde_json::json!({"id": format!("d{i}"), "text": words.join(" ")}))
        })
        .collect();
    std::fs::write(d.join("docs.jsonl"), docs).unwrap();
    ok(d, &["--db", "x.db", "ingest", "e", "docs.jsonl"]);
    let explain = ["--db", "x.db", "explain", "e", "d0", "--threshold", "0.8", "--plan", "lsh-probe"];
    let text = String::from_utf8(ok(d, &explain).stdout).unwrap();
    let line =
        format!("banding: {} bands x {} rows for t = 0.8, recall (exact) (0.005 FP + 0.995 FN)", e.bands, e.rows);
    assert!(text.contains(&line), "{text}");
    let mut json_args = explain.to_vec();
    json_args.push("--json");
    let v = lines(&ok(d, &json_args).stdout).remove(0);
    assert_eq!(v["banding"]["rule"], "recall (exact)", "{v}");
    assert_eq!(v["banding"]["bands"].as_u64(), Some(e.bands.into()), "{v}");
    assert_eq!(v["scores"], "exact", "{v}");
    // A full scan bands nothing.
    let v = lines(&ok(d, &["--db", "x.db", "--json", "explain", "e", "d0", "--threshold", "0.8", "--exact"]).stdout)
        .remove(0);
    assert!(v.get("banding").is_none(), "{v}");

    // Bands and rows given: the banding is reported as given.
    let v = summary(
        &ok(d, &["--db", "x.db", "--json", "reindex", "e", "--lsh", "0.8", "--bands", "20", "--rows", "9"]),
        "reindex",
    );
    assert_eq!((v["index"]["bands"].as_u64(), v["index"]["banding"].as_str()), (Some(20), Some("given")), "{v}");
}
