//! The two-step JSONL read ([`Lines`], [`LineParser`], [`DuplicateIds`]) against the
//! one-step reader ([`read::from_reader`]): the same items in the same order, whatever the
//! chunk sizes, parsed in any order.

use std::io::{Cursor, Write};

use super::*;

/// Every kind of line a JSONL input can hold: good records, a byte-order mark, CRLF, blank
/// lines, invalid JSON, a missing and a non-string text, an empty text, invalid UTF-8, a
/// repeated id, a line over the limit, a key over the limit, a non-object.
fn mixed() -> Vec<u8> {
    let mut v: Vec<u8> = b"\xef\xbb\xbf{\"id\": \"a\", \"text\": \"first line\"}\r\n\n   \n".to_vec();
    for i in 0..300 {
        let line = match i % 13 {
            0 => format!("{{\"id\": \"r{i}\", \"text\": \"record {i}\", \"url\": \"u\"}}"),
            1 => "{\"id\": \"broken\", \"text\": ".into(),
            2 => format!("{{\"id\": \"m{i}\"}}"),
            3 => format!("{{\"id\": \"n{i}\", \"text\": {i}}}"),
            4 => format!("{{\"id\": \"e{i}\", \"text\": \"\"}}"),
            5 => format!("{{\"id\": \"r{}\", \"text\": \"the id of a record before\"}}", i - 5),
            6 => format!("{{\"text\": \"no id at {i}\"}}"),
            7 => format!("{{\"id\": \"long{i}\", \"text\": \"{}\"}}", "x".repeat(300)),
            8 => format!("{{\"id\": \"{}\", \"text\": \"a key over the limit\"}}", "k".repeat(40)),
            9 => "[1, 2]".into(),
            10 => "".into(),
            _ => format!("{{\"key\": \"k{i}\", \"text\": \"keyed the old way {i}\"}}"),
        };
        v.extend_from_slice(line.as_bytes());
        if i % 13 == 12 {
            v.extend_from_slice(b"\n{\"id\": \"bad\", \"text\": \"caf\xe9\"}");
        }
        v.extend_from_slice(if i % 7 == 0 { b"\r\n" } else { b"\n" });
    }
    v.extend_from_slice(b"{\"id\": \"last\", \"text\": \"no newline at the end\"}");
    v
}

fn opts() -> ReadOptions {
    ReadOptions { max_record_bytes: 200, max_key_len: 32, ..ReadOptions::default() }
}

/// The items of `data` read in two steps, chunks of `lines` lines (`bytes` bytes), each
/// chunk's lines parsed last to first, ids checked in input order after.
fn two_step(data: &[u8], opts: &ReadOptions, lines: usize, bytes: usize) -> Vec<String> {
    let Opened::Lines(mut source) = read::lines_from_reader("in.jsonl", Cursor::new(data.to_vec()), opts).unwrap()
    else {
        panic!("JSONL opens as lines")
    };
    let parser = source.parser();
    let mut ids = DuplicateIds::new(opts);
    let mut out = Vec::new();
    while let Some(mut chunk) = source.next_chunk(lines, bytes) {
        assert!(chunk.len() <= lines.max(1));
        let mut parsed: Vec<_> = (0..chunk.len()).rev().map(|i| parser.parse(&chunk, i)).collect();
        parsed.reverse();
        for item in parsed {
            let item = item.and_then(|r| match ids.check(&r) {
                Ok(()) => Ok(r),
                Err(reason) => Err(Reject::new(r.origin, reason)),
            });
            out.push(show(&Ok(item)));
        }
        if let Some(e) = chunk.take_failure() {
            out.push(show(&Err(e)));
        }
    }
    out
}

fn show(item: &Item) -> String {
    match item {
        Ok(Ok(r)) => format!("{} {} {:?} {:?}", r.origin, r.key, r.content, r.raw),
        Ok(Err(reject)) => format!("{} rejected: {}", reject.origin, reject.reason),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn two_steps_yield_the_one_step_items_for_any_chunk_size() {
    let data = mixed();
    for keep_raw in [false, true] {
        let mut opts = opts();
        opts.keep_raw = keep_raw;
        let want: Vec<String> =
            read::from_reader("in.jsonl", Cursor::new(data.clone()), &opts).unwrap().map(|i| show(&i)).collect();
        assert!(want.iter().any(|s| s.contains("rejected: duplicate")), "{want:?}");
        assert!(want.iter().any(|s| s.contains("rejected: invalid UTF-8")), "{want:?}");
        assert!(want.iter().any(|s| s.contains("in.jsonl:1 a ")), "{want:?}");
        for (lines, bytes) in [(1, 1 << 20), (2, 1 << 20), (7, 1 << 20), (64, 1 << 20), (1024, 1 << 20), (1024, 150)] {
            assert_eq!(two_step(&data, &opts, lines, bytes), want, "chunks of {lines} lines, {bytes} bytes");
        }
    }
}

#[test]
fn lossy_utf8_and_repeated_ids_allowed_agree_too() {
    let data = mixed();
    let mut opts = opts();
    opts.lossy_utf8 = true;
    opts.reject_duplicates = false;
    let want: Vec<String> =
        read::from_reader("in.jsonl", Cursor::new(data.clone()), &opts).unwrap().map(|i| show(&i)).collect();
    assert!(want.iter().any(|s| s.contains("caf\u{fffd}")), "{want:?}");
    assert_eq!(two_step(&data, &opts, 5, 1 << 20), want);
}

#[test]
fn a_truncated_stream_ends_with_its_error_after_every_whole_line() {
    let data = mixed();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&data).unwrap();
    let gz = gz.finish().unwrap();
    let cut = gz[..gz.len() / 2].to_vec();
    for thread in [false, true] {
        let mut opts = opts();
        opts.decompress_thread = thread;
        let want: Vec<String> =
            read::from_reader("in.jsonl", Cursor::new(cut.clone()), &opts).unwrap().map(|i| show(&i)).collect();
        assert!(want.last().unwrap().starts_with("error: "), "{want:?}");
        assert!(want.len() > 50, "{}", want.len());
        for lines in [1, 3, 1024] {
            assert_eq!(two_step(&cut, &opts, lines, 1 << 20), want, "thread {thread}, chunks of {lines}");
        }
    }
}

#[test]
fn other_formats_open_as_records_and_lines_count_bytes() {
    let csv = read::lines_from_reader("in.csv", Cursor::new(b"id,text\na,b c\n".to_vec()), &opts()).unwrap();
    assert!(matches!(csv, Opened::Records(_)));
    let data = mixed();
    let Opened::Lines(mut lines) = read::lines_from_reader("in.jsonl", Cursor::new(data.clone()), &opts()).unwrap()
    else {
        panic!("JSONL opens as lines")
    };
    while lines.next_chunk(16, 1 << 20).is_some() {}
    assert_eq!(lines.bytes_read(), data.len() as u64);
    assert!(lines.next_chunk(16, 1 << 20).is_none());
}
