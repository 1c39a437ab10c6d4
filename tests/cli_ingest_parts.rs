//! With more than one thread, a batch is handed to the commit stage in parts as its records
//! are sketched and written into its open transaction (`Collection::apply_parts`), so the
//! last commit has little left to do. What is stored does not depend on it: ingest and
//! upsert at 1, 2 and 3 threads store the same rows, row ids, sketches and content hashes
//! (and the summary's `stage_seconds.tail`, the serial end, lies within the run);
//! and `--strict` stopping in the middle of a batch whose first parts were already written
//! keeps exactly the whole batches before, at every thread count, in a file that verifies.

mod common;

use std::path::Path;

use common::cli::{ok, run};

/// Document `i`'s text in version `v` (a changed document differs in a few words).
fn text(i: usize, v: usize) -> String {
    let words = ["north", "south", "east", "west", "river", "hill", "stone", "field", "wood", "lake"];
    let mut t: Vec<String> =
        (0..24).map(|j| format!("{}{}", words[(i * 3 + j * 7) % words.len()], (i * 13 + j * 29) % 503)).collect();
    if v > 0 {
        t[i % 24] = format!("changed{v}x{i}");
        t[(i + 5) % 24] = format!("edited{v}y{i}");
    }
    t.join(" ")
}

fn line(id: &str, text: &str) -> String {
    format!("{{\"id\": \"{id}\", \"text\": \"{text}\"}}\n")
}

/// Every record in row order with its stored content hash.
type Row = (u64, Vec<u8>, sketchdb::Sketch, Option<(u64, Option<u128>)>);

fn rows(db: &Path) -> Vec<Row> {
    let db = sketchdb::Database::open_read_only(db).unwrap();
    let coll = db.collection("c").unwrap();
    let records: Vec<_> = coll.snapshot().unwrap().into_scan().map(|r| r.unwrap()).collect();
    let snap = coll.snapshot().unwrap();
    records
        .into_iter()
        .map(|r| {
            let hash = snap.stored_hash(&r.key).unwrap();
            (r.row_id, r.key, r.sketch, hash)
        })
        .collect()
}

fn verified(db: &Path) {
    let db = sketchdb::Database::open(db).unwrap();
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn ingest_and_upsert_store_the_same_rows_at_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first: String = (0..3000).map(|i| line(&format!("d{i}"), &text(i, 0))).collect();
    // Every third document changed, every seventh unchanged, 500 new ones.
    let second: String = (0..3500)
        .filter(|i| i % 3 == 0 || i % 7 == 0 || *i >= 3000)
        .map(|i| line(&format!("d{i}"), &text(i, usize::from(i % 3 == 0))))
        .collect();
    std::fs::write(d.join("first.jsonl"), first).unwrap();
    std::fs::write(d.join("second.jsonl"), second).unwrap();
    let mut want: Option<Vec<Row>> = None;
    for threads in ["1", "2", "3"] {
        let db = format!("t{threads}.db");
        let out =
            ok(d, &["--json", "--db", &db, "ingest", "c", "first.jsonl", "--batch", "1000", "--threads", threads]);
        // The serial end (last sketching job's end to the last commit's end) is part of the run.
        let err = String::from_utf8(out.stderr).unwrap();
        let summary: serde_json::Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
        let (tail, secs) = (summary["stage_seconds"]["tail"].as_f64().unwrap(), summary["seconds"].as_f64().unwrap());
        assert!((0.0..=secs).contains(&tail), "threads {threads}: tail {tail} s of {secs} s");
        ok(d, &["--db", &db, "upsert", "c", "second.jsonl", "--batch", "700", "--threads", threads]);
        let got = rows(&d.join(&db));
        // 3000 first rows, then one new row per document of the second file.
        assert_eq!(got.len(), 3500, "threads {threads}");
        verified(&d.join(&db));
        match &want {
            None => want = Some(got),
            Some(w) => assert!(&got == w, "threads {threads}: rows differ from one thread's"),
        }
    }
}

#[test]
fn strict_in_the_middle_of_a_batch_written_in_parts_keeps_the_whole_batches_before() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Chunks of 64, 128, 256, 512, then 1024 lines (ending at lines 1984, 3008, 4032, ...):
    // the third batch of 1500 (from line 3001) is handed over in two parts (lines 3001 to
    // 3008, 3009 to 4032) before the chunk with the bad line 4200 is parsed.
    let mut input = String::new();
    for i in 1..=5000 {
        if i == 4200 {
            input.push_str("{\"id\": \"bad\", \"text\": \n");
        } else {
            input.push_str(&line(&format!("g{i:05}"), &text(i, 0)));
        }
    }
    std::fs::write(d.join("in.jsonl"), input).unwrap();
    let want: Vec<String> = (1..=3000).map(|i| format!("g{i:05}")).collect();
    for threads in ["1", "2", "3"] {
        let db = format!("s{threads}.db");
        let out =
            run(d, &["--db", &db, "ingest", "c", "in.jsonl", "--strict", "--batch", "1500", "--threads", threads]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "threads {threads}: {err}");
        assert!(err.contains("in.jsonl:4200"), "threads {threads}: {err}");
        let mut keys: Vec<String> =
            rows(&d.join(&db)).into_iter().map(|r| String::from_utf8(r.1).unwrap()).collect::<Vec<_>>();
        keys.sort();
        assert!(keys == want, "threads {threads}: {} keys kept, want g00001..g03000", keys.len());
        verified(&d.join(&db));
        // The next run goes on from the whole batches: the rest is added, nothing twice.
        let fixed: String = (1..=5000).map(|i| line(&format!("g{i:05}"), &text(i, 0))).collect();
        std::fs::write(d.join("fixed.jsonl"), fixed).unwrap();
        ok(d, &["--db", &db, "ingest", "c", "fixed.jsonl", "--batch", "1000", "--threads", threads]);
        assert_eq!(rows(&d.join(&db)).len(), 5000, "threads {threads}");
    }
}
