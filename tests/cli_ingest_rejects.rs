//! Bad records never abort an ingest: each is skipped, counted and reported with `file:line`
//! and its reason (the first few on stderr, all with `--rejects FILE`); `--strict` stops at
//! the first with exit code 2 and leaves only whole committed batches; a folder with a
//! symlink loop, a binary file, a hidden directory (and, when not root, an unreadable file)
//! ingests the rest and says what it skipped.

mod common;

use std::path::Path;

use serde_json::Value;

use common::cli::{ok, run};

fn stored_keys(dir: &Path, db: &str, collection: &str) -> Vec<String> {
    let db = sketchdb::Database::open_read_only(dir.join(db)).unwrap();
    let mut keys: Vec<String> =
        db.collection(collection).unwrap().scan().unwrap().map(|r| r.unwrap().key_str().unwrap().to_string()).collect();
    keys.sort();
    keys
}

/// A JSONL file whose bad records sit at known lines, with the reason each must get.
fn mixed(dir: &Path) -> Vec<(u64, &'static str)> {
    let mut content: Vec<u8> = Vec::new();
    let lines: [&[u8]; 13] = [
        br#"{"id": "g1", "text": "the first good record"}"#,
        br#"{"id": "bad", "text": "#,
        br#"{"id": "g3", "text": "the third good record", "extra": [1, 2]}"#,
        br#"{"id": "m", "body": "no text field here"}"#,
        br#"{"id": "n", "text": 42}"#,
        br#"{"id": "g6", "text": "the sixth good record"}"#,
        br#"{"id": "e", "text": ""}"#,
        br#"{"id": "p", "text": "!!! ... ???"}"#,
        br#"{"id": "g1", "text": "a second record with the first id"}"#,
        b"{\"id\": \"u\", \"text\": \"caf\xe9 latin-1\"}",
        br#"[1, 2, 3]"#,
        br#"{"id": "g12", "text": "the twelfth good record"}"#,
        br#"{"key": "g13", "text": "keyed by the old field name"}"#,
    ];
    for l in lines {
        content.extend_from_slice(l);
        content.push(b'\n');
    }
    std::fs::write(dir.join("mixed.jsonl"), content).unwrap();
    vec![
        (2, "invalid_json"),
        (4, "missing_field"),
        (5, "not_a_string"),
        (7, "empty_text"),
        (8, "no_tokens"),
        (9, "duplicate_key"),
        (10, "invalid_utf8"),
        (11, "not_an_object"),
    ]
}

#[test]
fn bad_records_are_skipped_counted_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = mixed(d);
    let out = ok(d, &["--db", "x.db", "ingest", "c", "mixed.jsonl", "--text-field", "text", "--rejects", "rej.jsonl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    // The first five on stderr, with file:line and the reason.
    assert!(err.contains("skipped mixed.jsonl:2: invalid JSON"), "{err}");
    assert!(err.contains("skipped mixed.jsonl:4: missing field `text`"), "{err}");
    assert!(err.contains("skipped mixed.jsonl:5: field `text` is not a string"), "{err}");
    assert!(!err.contains("mixed.jsonl:10"), "only the first few are shown: {err}");
    assert!(err.contains("5 added, 0 updated, 0 unchanged, 0 deleted, 8 rejected"), "{err}");
    assert!(err.contains("all listed in rej.jsonl"), "{err}");
    // Every reject in the file, in input order.
    let listed: Vec<(String, String)> = std::fs::read_to_string(d.join("rej.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["origin"].as_str().unwrap().to_string(), v["reason"].as_str().unwrap().to_string())
        })
        .collect();
    let want: Vec<(String, String)> = bad.iter().map(|(l, r)| (format!("mixed.jsonl:{l}"), r.to_string())).collect();
    assert_eq!(listed, want);
    assert_eq!(stored_keys(d, "x.db", "c"), ["g1", "g12", "g13", "g3", "g6"]);

    // --json: the summary counts rejects by reason.
    let out = ok(d, &["--db", "y.db", "ingest", "c", "mixed.jsonl", "--text-field", "text", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let summary: Value = serde_json::from_str(err.lines().find(|l| l.contains("\"command\"")).unwrap()).unwrap();
    assert_eq!(summary["rejected"], 8);
    assert_eq!(summary["added"], 5);
    assert_eq!(summary["rejects"]["duplicate_key"], 1);
    assert_eq!(err.lines().filter(|l| l.starts_with("{\"reject\"")).count(), 5, "{err}");

    // --lossy-utf8 keeps the Latin-1 record, with U+FFFD for the bad byte.
    ok(d, &["--db", "z.db", "ingest", "c", "mixed.jsonl", "--text-field", "text", "--lossy-utf8"]);
    assert!(stored_keys(d, "z.db", "c").contains(&"u".to_string()));
}

#[test]
fn strict_stops_at_the_first_bad_record_and_keeps_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("before.jsonl"), "{\"id\": \"kept\", \"text\": \"committed before the strict run\"}\n")
        .unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "before.jsonl"]);
    let mut s = String::new();
    for i in 1..=5 {
        s.push_str(&format!("{{\"id\": \"r{i}\", \"text\": \"record number {i} of the strict file\"}}\n"));
    }
    s.push_str("{\"id\": \"r6\", \"text\": \n");
    s.push_str("{\"id\": \"r7\", \"text\": \"after the bad one\"}\n");
    std::fs::write(d.join("strict.jsonl"), s).unwrap();
    let out = run(d, &["--db", "x.db", "ingest", "c", "strict.jsonl", "--strict", "--batch", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("strict.jsonl:6: invalid JSON"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("sketchdb: error")).count(), 1, "{err}");
    // Batches (r1, r2) and (r3, r4) committed; r5 was pending and is not; nothing before lost.
    assert_eq!(stored_keys(d, "x.db", "c"), ["kept", "r1", "r2", "r3", "r4"]);
    // A record the collection cannot sketch is a reject too: a fingerprint for MinHash.
    std::fs::write(d.join("fp.jsonl"), "{\"id\": \"f\", \"simhash\": \"ff\"}\n").unwrap();
    let out = run(d, &["--db", "x.db", "ingest", "c", "fp.jsonl", "--strict"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fp.jsonl:1: record `f`"));
    let out = ok(d, &["--db", "x.db", "ingest", "c", "fp.jsonl"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 rejected (1 sketch)"));
}

/// With several threads, chunks are sketched ahead of the one being batched: a strict-mode
/// reject deep in a long input still keeps exactly the whole batches before it, and the
/// process closes the database cleanly (a read-only open needs no recovery).
#[test]
fn strict_deep_in_a_long_input_keeps_exactly_the_batches_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut s = String::new();
    for i in 1..=9000 {
        if i == 5001 {
            s.push_str("{\"id\": \"bad\", \"text\": 7}\n");
        } else {
            s.push_str(&format!("{{\"id\": \"r{i:05}\", \"text\": \"record {i} word{} other{}\"}}\n", i % 97, i % 89));
        }
    }
    std::fs::write(d.join("long.jsonl"), s).unwrap();
    for (round, threads) in ["2", "3", "2"].iter().enumerate() {
        let db = format!("deep{round}.db");
        let out =
            run(d, &["--db", &db, "ingest", "c", "long.jsonl", "--strict", "--batch", "1000", "--threads", threads]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("long.jsonl:5001"), "{err}");
        let want: Vec<String> = (1..=5000).map(|i| format!("r{i:05}")).collect();
        assert_eq!(stored_keys(d, &db, "c"), want, "threads {threads}");
    }
}

#[test]
fn a_hostile_folder_ingests_the_rest_and_reports_skips() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = d.join("corpus");
    std::fs::create_dir_all(f.join("sub")).unwrap();
    std::fs::create_dir_all(f.join(".git")).unwrap();
    std::fs::write(f.join("a.txt"), "the first plain text file").unwrap();
    std::fs::write(f.join("sub/b.txt"), "a second plain text file below").unwrap();
    std::fs::write(f.join(".git/config"), "hidden and never read").unwrap();
    std::fs::write(f.join("blob.bin"), b"PK\x03\x04\x00\x00binary\x00data").unwrap();
    std::fs::write(f.join("empty.txt"), "").unwrap();
    std::os::unix::fs::symlink(&f, f.join("sub/loop")).unwrap();
    std::fs::write(f.join("locked.txt"), "cannot be read").unwrap();
    let locked = f.join("locked.txt");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    // Root reads anything: then the file is read like the others.
    let unreadable = std::fs::File::open(&locked).is_err();

    let out = ok(d, &["--db", "x.db", "ingest", "c", "corpus", "--follow-symlinks", "--rejects", "rej.jsonl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("blob.bin (binary)"), "{err}");
    assert!(err.contains(".git (hidden)"), "{err}");
    assert!(err.contains("loop (loop)"), "{err}");
    let mut want = vec!["a.txt", "sub/b.txt"];
    let rejects = std::fs::read_to_string(d.join("rej.jsonl")).unwrap();
    assert!(rejects.contains("empty.txt") && rejects.contains("\"empty_text\""), "{rejects}");
    if unreadable {
        assert!(rejects.contains("locked.txt") && rejects.contains("\"unreadable\""), "{rejects}");
    } else {
        want.insert(1, "locked.txt");
    }
    assert_eq!(stored_keys(d, "x.db", "c"), want);
    // Without --follow-symlinks the link is skipped as a link.
    let out = ok(d, &["--db", "y.db", "ingest", "c", "corpus"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("loop (symlink)"));
}
