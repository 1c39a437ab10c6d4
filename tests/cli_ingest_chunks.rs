//! JSONL lines are read in chunks (small ones first, growing to full size) and parsed in the
//! sketching jobs: every kind of bad record, placed on both sides of each chunk boundary, is
//! reported at its `file:line`, in input order, the same at every thread count (and from
//! standard input), and `--strict` keeps exactly the whole batches before the first one.

mod common;

use std::path::Path;

use common::cli::{ok, piped, run};

fn stored_keys(db: &Path) -> Vec<String> {
    let db = sketchdb::Database::open_read_only(db).unwrap();
    let mut keys: Vec<String> =
        db.collection("c").unwrap().scan().unwrap().map(|r| r.unwrap().key_str().unwrap().to_string()).collect();
    keys.sort();
    keys
}

/// The line numbers on both sides of the chunk boundaries (chunks of 64, 128, 256, 512, then
/// 1024 lines; blank lines count as lines but not as chunk entries, so these are near them).
const NEAR_BOUNDARIES: [usize; 10] = [64, 65, 192, 193, 448, 449, 960, 961, 1984, 1985];

/// A bad line of kind `i` (cycling through the kinds) and the reason it must get. Lines 65
/// and 192 share a chunk: a reader's reject there comes before a sketch's.
fn bad(i: usize, line: usize) -> (String, &'static str) {
    match i % 6 {
        0 => (format!("{{\"id\": \"p{line}\", \"text\": \"!!! ... ???\"}}"), "no_tokens"),
        1 => ("{\"id\": \"x\", \"text\": ".into(), "invalid_json"),
        2 => (format!("{{\"id\": \"f{line}\", \"simhash\": \"ff\"}}"), "sketch"),
        // An id of a good record earlier in the input.
        3 => ("{\"id\": \"g00003\", \"text\": \"a second record with an id seen before\"}".into(), "duplicate_key"),
        4 => (format!("{{\"id\": \"e{line}\", \"text\": \"\"}}"), "empty_text"),
        _ => (format!("{{\"id\": \"m{line}\", \"body\": \"no text\"}}"), "missing_field"),
    }
}

fn good(line: usize) -> String {
    format!("{{\"id\": \"g{line:05}\", \"text\": \"record {line} word{} other{} more words\"}}", line % 97, line % 89)
}

/// `n` lines, the bad ones at `bad_at` (kind by their index there), a blank line every 300.
fn corpus(n: usize, bad_at: &[usize]) -> (String, Vec<(usize, &'static str)>) {
    let mut s = String::new();
    let mut want = Vec::new();
    for line in 1..=n {
        if let Some(i) = bad_at.iter().position(|&b| b == line) {
            let (text, reason) = bad(i, line);
            s.push_str(&text);
            want.push((line, reason));
        } else if line % 300 == 0 {
            s.push_str("   ");
        } else {
            s.push_str(&good(line));
        }
        s.push('\n');
    }
    (s, want)
}

#[test]
fn rejects_near_chunk_boundaries_are_listed_in_input_order_at_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (text, want) = corpus(2600, &NEAR_BOUNDARIES);
    std::fs::write(d.join("in.jsonl"), &text).unwrap();
    let mut first: Option<(String, Vec<String>)> = None;
    for threads in ["1", "2", "3"] {
        let (db, rejects) = (format!("t{threads}.db"), format!("t{threads}.rejects"));
        let err = ok(d, &["--db", &db, "ingest", "c", "in.jsonl", "--threads", threads, "--rejects", &rejects]).stderr;
        let listed = std::fs::read_to_string(d.join(&rejects)).unwrap();
        let got: Vec<(usize, String)> = common::cli::lines(listed.as_bytes())
            .iter()
            .map(|v| {
                let origin = v["origin"].as_str().unwrap();
                let line = origin.rsplit(':').next().unwrap().parse().unwrap();
                (line, v["reason"].as_str().unwrap().to_string())
            })
            .collect();
        let want: Vec<(usize, String)> = want.iter().map(|(l, r)| (*l, r.to_string())).collect();
        assert_eq!(got, want, "threads {threads}");
        let summary = String::from_utf8_lossy(&err).lines().last().unwrap().split("; ").next().unwrap().to_string();
        // 2600 lines, 8 blank, 10 bad.
        assert!(summary.starts_with("ingested 2582 records"), "{summary}");
        let keys = stored_keys(&d.join(&db));
        match &first {
            None => first = Some((listed, keys)),
            Some((listed1, keys1)) => {
                assert_eq!(&listed, listed1, "threads {threads}");
                assert_eq!(&keys, keys1, "threads {threads}");
            }
        }
    }
    // Standard input is read the same way.
    let out = piped(d, &["--db", "stdin.db", "ingest", "c", "-", "--threads", "2"], &text);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stored_keys(&d.join("stdin.db")), first.unwrap().1);
}

#[test]
fn strict_near_chunk_boundaries_keeps_exactly_the_whole_batches_before() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (i, &at) in NEAR_BOUNDARIES.iter().enumerate() {
        let mut bad_at = vec![0; i];
        bad_at.push(at);
        let (text, want) = corpus(at + 700, &bad_at);
        let (_, reason) = *want.last().unwrap();
        let file = format!("s{at}.jsonl");
        std::fs::write(d.join(&file), &text).unwrap();
        // Good records before the bad line: every line but the blank ones.
        let before: Vec<usize> = (1..at).filter(|l| l % 300 != 0).collect();
        let whole = before.len() / 50 * 50;
        let mut want_keys: Vec<String> = before[..whole].iter().map(|l| format!("g{l:05}")).collect();
        want_keys.sort();
        for threads in ["1", "2", "3"] {
            let db = format!("s{at}-{threads}.db");
            let out = run(d, &["--db", &db, "ingest", "c", &file, "--strict", "--batch", "50", "--threads", threads]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{reason} at {at}, threads {threads}: {err}");
            assert!(err.contains(&format!("{file}:{at}")), "{reason} at {at}, threads {threads}: {err}");
            assert_eq!(stored_keys(&d.join(&db)), want_keys, "{reason} at {at}, threads {threads}");
        }
    }
}
