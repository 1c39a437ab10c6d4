//! `ingest` reads every corpus format through `sketchdb::io`: the same documents as JSONL
//! (plain, gzip, zstd), Parquet, CSV, TSV and a folder of text files give identical stored
//! signatures (compared through `export`); extra fields are ignored; a nested text field and
//! pre-tokenized input work; one thread and several store identical records.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use serde_json::{Value, json};

use common::cli::ok;

/// Deterministic documents: (id, text). Texts share words so that some are near-duplicates,
/// and hold commas, quotes, a tab-free CRLF and an embedded newline (CSV quoting).
fn docs(n: usize) -> Vec<(String, String)> {
    let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            let mut t = String::new();
            for j in 0..(12 + i % 9) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if j > 0 {
                    t.push_str(if j % 5 == 0 { ", " } else { " " });
                }
                t.push_str(words[(x >> 33) as usize % words.len()]);
            }
            if i % 4 == 0 {
                t.push_str(" \"quoted\"\nsecond line");
            }
            if i % 6 == 0 {
                t.push_str("\r\nÉtude naïve");
            }
            (format!("d{i:02}"), t)
        })
        .collect()
}

fn jsonl(docs: &[(String, String)]) -> String {
    docs.iter()
        .map(|(id, text)| {
            let v = json!({"id": id, "url": format!("https://example.org/{id}"), "text": text,
                           "meta": {"body": text, "lang": "en"}, "n": 3});
            format!("{v}\n")
        })
        .collect()
}

fn write_parquet(path: &Path, docs: &[(String, String)]) {
    let ids = StringArray::from(docs.iter().map(|d| d.0.as_str()).collect::<Vec<_>>());
    let texts = StringArray::from(docs.iter().map(|d| d.1.as_str()).collect::<Vec<_>>());
    let urls = StringArray::from(docs.iter().map(|d| format!("u/{}", d.0)).collect::<Vec<_>>());
    let batch = RecordBatch::try_from_iter([
        ("url", Arc::new(urls) as ArrayRef),
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(texts) as ArrayRef),
    ])
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn write_delimited(path: &Path, docs: &[(String, String)], delimiter: u8) {
    let mut w = csv::WriterBuilder::new().delimiter(delimiter).from_path(path).unwrap();
    w.write_record(["id", "source", "text"]).unwrap();
    for (id, text) in docs {
        w.write_record([id.as_str(), "web", text.as_str()]).unwrap();
    }
    w.flush().unwrap();
}

/// `export`'s records of `collection` in `db`: key -> the record without its key.
fn exported(dir: &Path, db: &str, collection: &str) -> BTreeMap<String, Value> {
    let out = ok(dir, &["--db", db, "export", collection]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let key = v.as_object_mut().unwrap().remove("key").unwrap().as_str().unwrap().to_string();
            (key, v)
        })
        .collect()
}

#[test]
fn every_format_stores_the_same_signatures() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = docs(40);
    let lines = jsonl(&docs);
    std::fs::write(d.join("docs.jsonl"), &lines).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(lines.as_bytes()).unwrap();
    std::fs::write(d.join("docs.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(d.join("docs.jsonl.zst"), zstd::encode_all(lines.as_bytes(), 3).unwrap()).unwrap();
    write_parquet(&d.join("docs.parquet"), &docs);
    write_delimited(&d.join("docs.csv"), &docs, b',');
    write_delimited(&d.join("docs.tsv"), &docs, b'\t');
    std::fs::create_dir(d.join("folder")).unwrap();
    for (id, text) in &docs {
        std::fs::write(d.join("folder").join(id), text).unwrap();
    }

    // The reference: JSONL with its extra fields (url, meta, n) ignored.
    ok(d, &["--db", "x.db", "ingest", "plain", "docs.jsonl"]);
    let want = exported(d, "x.db", "plain");
    assert_eq!(want.len(), docs.len());
    let cases: [(&str, &[&str]); 7] = [
        ("gz", &["docs.jsonl.gz"]),
        ("zst", &["docs.jsonl.zst"]),
        ("parquet", &["docs.parquet"]),
        ("csv", &["docs.csv", "--text-field", "text"]),
        ("tsv", &["docs.tsv"]),
        ("folder", &["folder"]),
        ("nested", &["docs.jsonl", "--text-field", "meta.body"]),
    ];
    for (name, args) in cases {
        let mut argv = vec!["--db", "x.db", "ingest", name];
        argv.extend_from_slice(args);
        let out = ok(d, &argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("ingested {} records", docs.len())), "{name}: {err}");
        assert!(err.contains("0 rejected"), "{name}: {err}");
        assert_eq!(exported(d, "x.db", name), want, "{name}");
    }
    // Standard input, detected from its first bytes (a zstd stream here).
    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .args(["--db", "x.db", "ingest", "stdin", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&std::fs::read(d.join("docs.jsonl.zst")).unwrap()).unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(exported(d, "x.db", "stdin"), want);
}

#[test]
fn without_an_id_the_key_is_file_and_line_or_row() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.jsonl"), "{\"text\": \"one two three\"}\n\n{\"text\": \"four five six\"}\n").unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "a.jsonl", "--id-field", "nope"]);
    let keys: Vec<String> = exported(d, "x.db", "c").into_keys().collect();
    assert_eq!(keys, ["a.jsonl:1", "a.jsonl:3"]);
    write_parquet(&d.join("p.parquet"), &[("x".into(), "seven eight".into()), ("y".into(), "nine ten".into())]);
    ok(d, &["--db", "x.db", "ingest", "p", "p.parquet", "--id-field", "url"]);
    let keys: Vec<String> = exported(d, "x.db", "p").into_keys().collect();
    assert_eq!(keys, ["u/x", "u/y"]);
    ok(d, &["--db", "x.db", "ingest", "q", "p.parquet", "--id-field", "missing"]);
    let keys: Vec<String> = exported(d, "x.db", "q").into_keys().collect();
    assert_eq!(keys, ["p.parquet:0", "p.parquet:1"]);
}

/// Pre-tokenized input: terms (strings) are set elements hashed as the collection's
/// tokenizer hashes a shingle, so terms equal to the words of a text sketch as that text
/// does under one-word shingles; u64 tokens sketch as the library sketches them.
#[test]
fn pre_tokenized_input_sketches_as_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "The quick brown fox, the lazy dog; and the quick cat";
    let terms: Vec<String> =
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let tokens: Vec<u64> = (0..50u64).map(|t| t * 7919).collect();
    std::fs::write(d.join("text.jsonl"), format!("{}\n", json!({"id": "a", "text": text}))).unwrap();
    std::fs::write(d.join("terms.jsonl"), format!("{}\n", json!({"id": "a", "words": terms, "text": "ignored"})))
        .unwrap();
    std::fs::write(d.join("tokens.jsonl"), format!("{}\n", json!({"id": "t", "hashes": tokens}))).unwrap();
    for c in ["words", "terms", "hashes"] {
        ok(d, &["--db", "x.db", "create", c, "--shingle", "1"]);
    }
    ok(d, &["--db", "x.db", "ingest", "words", "text.jsonl"]);
    ok(d, &["--db", "x.db", "ingest", "terms", "terms.jsonl", "--tokens-field", "words"]);
    assert_eq!(exported(d, "x.db", "terms"), exported(d, "x.db", "words"));
    ok(d, &["--db", "x.db", "ingest", "hashes", "tokens.jsonl", "--tokens-field", "hashes"]);
    let db = sketchdb::Database::open_read_only(d.join("x.db")).unwrap();
    let c = db.collection("hashes").unwrap();
    assert_eq!(c.get("t").unwrap().unwrap().sketch, c.sketcher().sketch_multiset(&tokens).unwrap());
}

/// Every record of `collection` in `db` in row order: (row id, key, sketch); the only
/// collection when `collection` is empty.
fn rows(db: &Path, collection: &str) -> Vec<(u64, Vec<u8>, sketchdb::Sketch)> {
    let db = sketchdb::Database::open_read_only(db).unwrap();
    let coll = if collection.is_empty() {
        let mut all = db.collections().unwrap();
        assert_eq!(all.len(), 1);
        all.remove(0)
    } else {
        db.collection(collection).unwrap()
    };
    coll.snapshot().unwrap().into_scan().map(|r| r.unwrap()).map(|r| (r.row_id, r.key, r.sketch)).collect()
}

/// One thread runs every stage in turn; several read and commit on threads of their own
/// beside the sketching pool. Either way the same records get the same row ids (commits in
/// input order), in every format, with rejects reported at the same places, in small
/// batches that span read chunks and inputs.
#[test]
fn one_thread_and_several_store_identical_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = docs(2500);
    let mut lines = jsonl(&docs);
    // Bad records at known lines: invalid JSON, a missing text, a duplicate id.
    for (at, bad) in [
        (700, "{\"id\": \"bad\", \"text\": \n"),
        (1500, "{\"id\": \"nt\"}\n"),
        (2100, "{\"id\": \"d05\", \"text\": \"again\"}\n"),
    ] {
        let pos = lines.match_indices('\n').nth(at - 2).unwrap().0 + 1;
        lines.insert_str(pos, bad);
    }
    std::fs::write(d.join("docs.jsonl"), &lines).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(lines.as_bytes()).unwrap();
    std::fs::write(d.join("docs.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(d.join("docs.jsonl.zst"), zstd::encode_all(lines.as_bytes(), 1).unwrap()).unwrap();
    write_parquet(&d.join("docs.parquet"), &docs);
    write_delimited(&d.join("docs.csv"), &docs, b',');
    std::fs::create_dir(d.join("folder")).unwrap();
    for (id, text) in docs.iter().take(300) {
        std::fs::write(d.join("folder").join(id), text).unwrap();
    }
    let inputs: [&[&str]; 6] = [
        &["docs.jsonl"],
        &["docs.jsonl.gz", "--rejects", "REJECTS"],
        &["docs.jsonl.zst"],
        &["docs.parquet"],
        &["docs.csv", "--text-field", "text"],
        &["folder", "docs.parquet", "--id-field", "url"],
    ];
    for (i, input) in inputs.iter().enumerate() {
        let mut got = Vec::new();
        for threads in ["1", "2", "5"] {
            let db = format!("t{i}-{threads}.db");
            let rejects = format!("t{i}-{threads}.rejects");
            let mut argv = vec!["--db", &db, "ingest", "c", "--threads", threads, "--batch", "97"];
            argv.extend(input.iter().map(|a| if *a == "REJECTS" { rejects.as_str() } else { a }));
            let err = String::from_utf8(ok(d, &argv).stderr).unwrap();
            let summary = err.lines().last().unwrap().split("; ").next().unwrap().to_string();
            let listed = std::fs::read_to_string(d.join(&rejects)).unwrap_or_default();
            got.push((rows(&d.join(&db), "c"), summary, listed));
        }
        let (rows1, summary1, listed1) = &got[0];
        assert!(rows1.len() >= 300, "{input:?}: {summary1}");
        if input[0].starts_with("docs.jsonl") {
            assert!(summary1.contains("3 rejected"), "{input:?}: {summary1}");
        }
        if input.contains(&"REJECTS") {
            let lines: Vec<&str> = listed1.lines().collect();
            assert_eq!(lines.len(), 3, "{listed1}");
            assert!(lines[0].contains("docs.jsonl.gz:700"), "{listed1}");
        }
        for (rows, summary, listed) in &got[1..] {
            assert_eq!(rows, rows1, "{input:?}");
            assert_eq!(summary, summary1, "{input:?}");
            assert_eq!(listed, listed1, "{input:?}");
        }
    }
}

/// `dedup DIR` ingests through the same pipeline with every core unless told otherwise:
/// its clusters do not depend on the thread count (RAYON_NUM_THREADS sets the default).
#[test]
fn dedup_of_a_folder_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("corpus")).unwrap();
    for (i, (id, text)) in docs(400).into_iter().enumerate() {
        if i % 10 == 0 {
            std::fs::write(d.join("corpus").join(format!("copy-{id}")), format!("{text} and one more")).unwrap();
        }
        std::fs::write(d.join("corpus").join(id), text).unwrap();
    }
    let mut outs = Vec::new();
    for threads in ["1", "3"] {
        let db = format!("x{threads}.db");
        let out = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
            .current_dir(d)
            .env("RAYON_NUM_THREADS", threads)
            .args(["--db", &db, "dedup", "corpus", "--format", "jsonl"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        outs.push((out.stdout, rows(&d.join(&db), "")));
    }
    // At least the 40 copies cluster with their originals.
    assert!(String::from_utf8_lossy(&outs[0].0).lines().count() >= 40);
    assert_eq!(outs[0].1.len(), 440);
    assert_eq!(outs[0], outs[1]);
}
