//! Compressed streams at the size where they matter: with more than one thread a gzip or zstd
//! input is decompressed on a thread of its own, ahead of the parser, in blocks. The records
//! stored do not depend on it (1 thread, without it, and 3, with it, store the same rows),
//! and a stream that breaks in the middle is reported with its file and the line it broke
//! at, after exactly the records read whole before it were committed; the database is left
//! closed cleanly.

mod common;

use std::io::{Read, Write};
use std::path::Path;

use common::cli::{ok, run};

/// `n` JSONL documents, ids `r1`..: varied words so that the streams compress to many
/// blocks' worth (about 1.4 MB decompressed for 6,000 documents).
fn corpus(n: usize) -> String {
    let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"];
    (1..=n)
        .map(|i| {
            let text: Vec<String> = (0..30)
                .map(|j| format!("{}{}", words[(i * 7 + j * 3) % words.len()], (i * 31 + j * 17) % 997))
                .collect();
            format!("{{\"id\": \"r{i}\", \"text\": \"{}\", \"url\": \"https://example.org/{i}\"}}\n", text.join(" "))
        })
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Every record in row order: (row id, key, sketch).
fn rows(db: &Path) -> Vec<(u64, Vec<u8>, sketchdb::Sketch)> {
    let db = sketchdb::Database::open_read_only(db).unwrap();
    let coll = db.collection("c").unwrap();
    coll.snapshot().unwrap().into_scan().map(|r| r.unwrap()).map(|r| (r.row_id, r.key, r.sketch)).collect()
}

/// The complete lines a decoder yields before it fails on a broken stream.
fn whole_lines_before_the_break(mut decoder: impl Read) -> usize {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match decoder.read(&mut buf) {
            Ok(0) => panic!("the broken stream decoded to its end"),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    out.iter().filter(|&&b| b == b'\n').count()
}

#[test]
fn one_thread_and_three_store_the_same_rows_from_gzip_and_zstd() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = corpus(6000);
    std::fs::write(d.join("docs.jsonl.gz"), gzip(text.as_bytes())).unwrap();
    std::fs::write(d.join("docs.jsonl.zst"), zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
    for file in ["docs.jsonl.gz", "docs.jsonl.zst"] {
        let mut got = Vec::new();
        for threads in ["1", "3"] {
            let db = format!("{file}-{threads}.db");
            ok(d, &["--db", &db, "ingest", "c", file, "--threads", threads, "--batch", "700"]);
            got.push(rows(&d.join(&db)));
        }
        assert_eq!(got[0].len(), 6000, "{file}");
        assert_eq!(got[0], got[1], "{file}");
    }
}

#[test]
fn a_stream_broken_in_the_middle_is_named_with_its_line_and_keeps_what_was_read_before() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = corpus(6000);
    let gz = gzip(text.as_bytes());
    let zst = zstd::encode_all(text.as_bytes(), 3).unwrap();
    // Cut at 60%: the decoders fail there (an incomplete deflate stream, an incomplete frame).
    let (gz, zst) = (&gz[..gz.len() * 3 / 5], &zst[..zst.len() * 3 / 5]);
    std::fs::write(d.join("cut.jsonl.gz"), gz).unwrap();
    std::fs::write(d.join("cut.jsonl.zst"), zst).unwrap();
    let cases = [
        ("cut.jsonl.gz", whole_lines_before_the_break(flate2::read::MultiGzDecoder::new(gz))),
        ("cut.jsonl.zst", whole_lines_before_the_break(zstd::stream::read::Decoder::new(zst).unwrap())),
    ];
    for (file, whole) in cases {
        assert!(whole > 1000 && whole < 6000, "{file}: {whole}");
        let mut want: Vec<String> = (1..=whole).map(|i| format!("r{i}")).collect();
        want.sort();
        let mut got = Vec::new();
        for threads in ["1", "3"] {
            let db = format!("{file}-{threads}.db");
            let out = run(d, &["--db", &db, "ingest", "c", file, "--threads", threads, "--batch", "700"]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{file} threads {threads}: {err}");
            let at = format!("{file}:{}: ", whole + 1);
            assert!(err.lines().any(|l| l.contains("error") && l.contains(&at)), "{file} threads {threads}: {err}");
            // Opened read-only: the command closed the file cleanly (no recovery needed).
            let rows = rows(&d.join(&db));
            let mut keys: Vec<String> = rows.iter().map(|r| String::from_utf8(r.1.clone()).unwrap()).collect();
            keys.sort();
            assert_eq!(keys, want, "{file} threads {threads}");
            got.push(rows);
        }
        assert_eq!(got[0], got[1], "{file}");
    }
}
