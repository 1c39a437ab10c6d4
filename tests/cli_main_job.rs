//! The README's main job, run as a user would: `sketchdb dedup samples/docs` builds a database
//! file and prints the near-duplicate clusters; a second run resumes (nothing re-ingested).

use std::path::Path;
use std::process::Command;

fn sketchdb(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sketchdb")).current_dir(dir).args(args).output().unwrap()
}

#[test]
fn dedup_of_the_sample_corpus_finds_the_planted_families() {
    let dir = tempfile::tempdir().unwrap();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/docs");
    let docs = docs.to_str().unwrap();
    let out = sketchdb(dir.path(), &["dedup", docs, "--format", "jsonl"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.path().join("sketchdb.db").exists(), "the default database file is created");
    let clusters: Vec<Vec<String>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect()
        })
        .collect();
    assert_eq!(
        clusters,
        vec![
            vec!["lighthouse.txt", "lighthouse_copy.txt", "lighthouse_edited.txt"],
            vec!["chess.txt", "chess_notes.txt"],
            vec!["sourdough.txt", "sourdough_variant.txt"],
        ]
    );
    // Run again: resumable ingest skips every unchanged record, same clusters.
    let again = sketchdb(dir.path(), &["dedup", docs, "--format", "csv"]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("12 unchanged"));
    let csv = String::from_utf8(again.stdout).unwrap();
    assert_eq!(csv.lines().next(), Some("cluster,key,row_id"));
    assert_eq!(csv.lines().count(), 1 + 7);
    // A lower threshold also joins the rewritten comet pair (exact J = 0.34).
    // The folder's collection is named after its canonical path.
    let canonical = Path::new(docs).canonicalize().unwrap();
    let collection = canonical.to_str().unwrap();
    let low = sketchdb(dir.path(), &["dedup", collection, "--threshold", "0.25", "--format", "jsonl"]);
    assert!(String::from_utf8_lossy(&low.stdout).contains("comet_rewrite.txt"));
}
