//! `sketchdb recipes` and `create --recipe` through the binary: the listing names every preset
//! with its steps, and text ingested into a collection created with a compatibility recipe has
//! exactly the reference library's signatures (the golden digests of tests/fixtures/compat).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use sketchdb::{Database, HashFamily, Sketch};
use xxhash_rust::xxh3::xxh3_64;

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

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/compat/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn recipes_lists_every_preset_with_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines = json_lines(&ok(d, &["recipes", "--json"]));
    assert_eq!(lines.len(), 10);
    assert_eq!(lines[0]["recipe"], "sketchdb");
    assert_eq!(lines[0]["default"], true);
    assert!(lines[1..].iter().all(|l| l["default"] == false));
    let words = lines.iter().find(|l| l["recipe"] == "words-5").unwrap();
    assert_eq!(words["steps"]["normalize"], "NFC");
    let ds = lines.iter().find(|l| l["recipe"] == "datasketch").unwrap();
    assert_eq!(ds["family"], "datasketch-legacy");
    assert!(ds["compatibility"].as_str().unwrap().starts_with("exact: datasketch"));
    let table = ok(d, &["recipes", "nemo-curator"]);
    assert!(table.contains("24-character grams"), "{table}");
    let bad = run(d, &["recipes", "no-such-recipe"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no-such-recipe"));
}

#[test]
fn create_with_a_compat_recipe_ingests_the_references_signatures() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = fixture("docs");
    let docs = docs["docs"].as_array().unwrap();
    for preset in ["datasketch", "text-dedup-spark"] {
        let golden = fixture(preset);
        let digests = golden["digests"].as_array().unwrap();
        let mut jsonl = String::new();
        let mut want = Vec::new();
        for (i, (text, digest)) in docs.iter().zip(digests).enumerate().take(300) {
            // The readers skip a text without any alphanumeric character as token-less
            // (sketchdb::io's check, made before the collection's recipe is known).
            let readable = text.as_str().is_some_and(|t| t.chars().any(char::is_alphanumeric));
            if let (Some(digest), true) = (digest.as_str(), readable) {
                jsonl.push_str(&format!("{}\n", serde_json::json!({"key": format!("d{i}"), "text": text})));
                want.push((format!("d{i}"), digest.to_owned()));
            }
        }
        std::fs::write(d.join(format!("{preset}.jsonl")), jsonl).unwrap();
        ok(d, &["--db", "c.sketchdb", "create", preset, "--recipe", preset]);
        ok(d, &["--db", "c.sketchdb", "ingest", preset, &format!("{preset}.jsonl")]);
        let list = json_lines(&ok(d, &["--db", "c.sketchdb", "list", "--json"]));
        let row = list.iter().find(|l| l["name"] == preset).unwrap();
        assert_eq!(row["tokenizer"], format!("recipe {preset}"));
        let db = Database::open_read_only(d.join("c.sketchdb")).unwrap();
        let c = db.collection(preset).unwrap();
        assert_eq!(u64::from(c.params().size()), golden["k"].as_u64().unwrap());
        for (key, digest) in &want {
            let Sketch::MinHash(m) = c.sketch_of(key).unwrap() else { panic!("MinHash") };
            let bytes: Vec<u8> = m.values().iter().flat_map(|&v| u32::try_from(v).unwrap().to_le_bytes()).collect();
            assert_eq!(&format!("{:016x}", xxh3_64(&bytes)), digest, "{preset} {key}");
        }
        assert!(want.len() > 200, "{preset}: {} documents", want.len());
    }
}

#[test]
fn create_refuses_a_compat_recipe_with_another_kind_and_takes_charikar() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = run(d, &["--db", "x.sketchdb", "create", "a", "--recipe", "datasketch", "--kind", "oph"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    let bad = run(d, &["--db", "x.sketchdb", "create", "b", "--family", "charikar"]);
    assert_eq!(bad.status.code(), Some(2));
    ok(d, &["--db", "x.sketchdb", "create", "s", "--kind", "simhash", "--family", "charikar", "--recipe", "words-5"]);
    ok(d, &["--db", "x.sketchdb", "create", "w", "--recipe", "words-5", "--k", "64"]);
    let db = Database::open_read_only(d.join("x.sketchdb")).unwrap();
    assert_eq!(db.collection("s").unwrap().params().family(), HashFamily::Charikar);
    assert_eq!(db.collection("s").unwrap().config().recipe().name(), "words-5");
    assert_eq!(db.collection("w").unwrap().params().size(), 64);
}

#[test]
fn ingest_and_dedup_create_with_a_recipe_and_refuse_another() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = fixture("docs");
    let mut jsonl = String::new();
    for (i, text) in docs["docs"].as_array().unwrap().iter().enumerate().take(50) {
        if text.as_str().is_some_and(|t| t.chars().any(char::is_alphanumeric)) {
            jsonl.push_str(&format!("{}\n", serde_json::json!({"id": format!("d{i}"), "text": text})));
        }
    }
    std::fs::write(d.join("docs.jsonl"), &jsonl).unwrap();
    ok(d, &["--db", "i.sketchdb", "ingest", "ds", "docs.jsonl", "--recipe", "datasketch"]);
    ok(d, &["--db", "i.sketchdb", "ingest", "w5", "docs.jsonl", "--recipe", "words-5"]);
    // Ingesting again with the same recipe (or none) keeps the collection.
    ok(d, &["--db", "i.sketchdb", "ingest", "ds", "docs.jsonl", "--recipe", "datasketch"]);
    ok(d, &["--db", "i.sketchdb", "ingest", "ds", "docs.jsonl"]);
    let bad = run(d, &["--db", "i.sketchdb", "ingest", "ds", "docs.jsonl", "--recipe", "words-5"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("`ds`") && err.contains("datasketch") && err.contains("words-5"), "{err}");
    let bad = run(d, &["--db", "i.sketchdb", "ingest", "new", "docs.jsonl", "--recipe", "no-such-recipe"]);
    assert_eq!(bad.status.code(), Some(2));

    // dedup FILE creates the collection named after the file with the recipe.
    ok(d, &["--db", "d.sketchdb", "dedup", "docs.jsonl", "--recipe", "nemo-curator", "--threshold", "0.8"]);
    let bad = run(d, &["--db", "d.sketchdb", "dedup", "docs.jsonl", "--recipe", "sketchdb", "--threshold", "0.8"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    let bad = run(d, &["--db", "i.sketchdb", "dedup", "w5", "--recipe", "datasketch", "--threshold", "0.8"]);
    assert_eq!(bad.status.code(), Some(2));
    ok(d, &["--db", "i.sketchdb", "dedup", "w5", "--recipe", "words-5", "--threshold", "0.8"]);

    let idb = Database::open_read_only(d.join("i.sketchdb")).unwrap();
    let ds = idb.collection("ds").unwrap();
    assert_eq!(ds.config().recipe().name(), "datasketch");
    assert_eq!(ds.params().family().name(), "datasketch-legacy");
    assert_eq!(ds.len().unwrap(), jsonl.lines().count() as u64);
    assert_eq!(idb.collection("w5").unwrap().config().recipe().name(), "words-5");
    let ddb = Database::open_read_only(d.join("d.sketchdb")).unwrap();
    let names: Vec<String> = ddb.collections().unwrap().iter().map(|c| c.name().to_string()).collect();
    assert_eq!(names.len(), 1);
    assert_eq!(ddb.collection(&names[0]).unwrap().config().recipe().name(), "nemo-curator");
}

/// Whether a text has tokens is the collection's recipe's decision, not the reader's: a
/// punctuation or emoji text is sketched under nemo-curator's character grams and rejected
/// (no_tokens, in input order, exit 2 with --strict) under sketchdb's words.
#[test]
fn a_punctuation_text_has_tokens_under_a_gram_recipe_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines = [
        r#"{"id": "w", "text": "plain words of a text"}"#,
        r#"{"id": "p", "text": "!!! ... ??? --- *** ((( ))) !!! ... ???"}"#,
        r#"{"id": "e", "text": "🙂🙂🙂 🎉🎉🎉 🙂🙂🙂 🎉🎉🎉 🙂🙂🙂 🎉🎉🎉 🙂"}"#,
        r#"{"id": "x", "text": ""}"#,
    ];
    std::fs::write(d.join("p.jsonl"), lines.join("\n") + "\n").unwrap();
    ok(d, &["--db", "p.sketchdb", "ingest", "nemo", "p.jsonl", "--recipe", "nemo-curator", "--rejects", "n.jsonl"]);
    ok(d, &["--db", "p.sketchdb", "ingest", "words", "p.jsonl", "--rejects", "w.jsonl"]);
    let reasons = |f: &str| -> Vec<(String, String)> {
        json_lines(&std::fs::read_to_string(d.join(f)).unwrap())
            .iter()
            .map(|v| (v["origin"].as_str().unwrap().to_owned(), v["reason"].as_str().unwrap().to_owned()))
            .collect()
    };
    let r = |l: usize, why: &str| (format!("p.jsonl:{l}"), why.to_owned());
    assert_eq!(reasons("n.jsonl"), [r(4, "empty_text")]);
    assert_eq!(reasons("w.jsonl"), [r(2, "no_tokens"), r(3, "no_tokens"), r(4, "empty_text")]);
    let db = Database::open_read_only(d.join("p.sketchdb")).unwrap();
    let keys = |c: &str| {
        let mut k: Vec<String> = db
            .collection(c)
            .unwrap()
            .snapshot()
            .unwrap()
            .into_scan()
            .map(|r| String::from_utf8(r.unwrap().key.to_vec()).unwrap())
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys("nemo"), ["e", "p", "w"]);
    assert_eq!(keys("words"), ["w"]);
    let bad = run(d, &["--db", "p.sketchdb", "ingest", "strict", "p.jsonl", "--strict"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("p.jsonl:2") && err.contains("no tokens"), "{err}");
}
