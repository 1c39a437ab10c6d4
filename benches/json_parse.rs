//! The JSONL parse stage of `ingest`, one core: serde_json (what `sketchdb::io` uses) against
//! simd-json and sonic-rs, on the documents workload (`{"id", "text", "url", "meta"}`, about
//! 3 KB a line) and the sets workload (`{"key", "tokens": [u64...]}`). Throughput is in input
//! bytes per second.
//!
//! Each parser is measured two ways: into its DOM (what a reader that picks fields by dotted
//! path at run time needs), and into a struct of the two selected fields with every other
//! field skipped (the fastest a parser can do here). The first row of each group is the
//! whole JSONL reader of `sketchdb::io` (line splitting, UTF-8 check, parse, field picking)
//! on a one-thread pool.
//!
//! Run: `cargo bench --bench json_parse`. The inputs are the first lines of
//! `$SKETCHDB_BENCH_DATA/docs-20k.jsonl` and `sets-100k.jsonl` (default `../shared/bench`,
//! made by its `gen_workloads.py`); where a file is missing, generated lines of the same
//! shape are used instead.

use std::borrow::Cow;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use simd_json::prelude::*;
use sketchdb::io::{Content, ReadOptions, read};
use sonic_rs::JsonValueTrait;

/// Input bytes measured per workload (whole lines up to this size).
const BYTES: usize = 16 << 20;

#[derive(Deserialize)]
struct Doc<'a> {
    id: Option<String>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Set {
    key: String,
    tokens: Vec<u64>,
}

/// The first lines of `name` in the data folder, up to [`BYTES`], or `generate()`'s.
fn lines(name: &str, generate: fn(usize) -> String) -> Vec<Vec<u8>> {
    let dir = std::env::var_os("SKETCHDB_BENCH_DATA").map_or_else(|| PathBuf::from("../shared/bench"), PathBuf::from);
    let text = match std::fs::read(dir.join(name)) {
        Ok(bytes) => {
            let mut end = bytes.len().min(BYTES);
            while end < bytes.len() && bytes[end - 1] != b'\n' {
                end += 1;
            }
            bytes[..end].to_vec()
        }
        Err(_) => {
            eprintln!("{}: not found, generating lines of the same shape", dir.join(name).display());
            generate(BYTES).into_bytes()
        }
    };
    // The workloads hold a few malformed lines on purpose; every parser gets the same valid
    // ones (what each does with malformed input is the fuzz targets' business).
    text.split(|&b| b == b'\n')
        .filter(|l| serde_json::from_slice::<serde_json::Value>(l).is_ok())
        .map(<[u8]>::to_vec)
        .collect()
}

fn next(x: &mut u64) -> u64 {
    *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *x >> 11
}

fn gen_docs(bytes: usize) -> String {
    let mut x = 7;
    let mut out = String::new();
    for i in 0.. {
        if out.len() >= bytes {
            break;
        }
        let words: Vec<String> = (0..450).map(|_| format!("w{}", next(&mut x) % 5000)).collect();
        let text = words.join(" ") + ".\n\"Quoted\" line";
        let v = serde_json::json!({"id": format!("d{i:06}"), "text": text, "url": format!("https://example.org/{i}"),
                                   "meta": {"lang": "en", "source": "synthetic", "len": text.len()}});
        out.push_str(&format!("{v}\n"));
    }
    out
}

fn gen_sets(bytes: usize) -> String {
    let mut x = 11;
    let mut out = String::new();
    for i in 0.. {
        if out.len() >= bytes {
            break;
        }
        let tokens: Vec<u64> = (0..250).map(|_| next(&mut x)).collect();
        out.push_str(&format!("{}\n", serde_json::json!({"key": format!("doc{i}"), "tokens": tokens})));
    }
    out
}

/// The whole `sketchdb::io` JSONL reader on one thread: the number of records read.
fn io_reader(all: &[u8], opts: &ReadOptions, pool: &rayon::ThreadPool) -> usize {
    pool.install(|| {
        let source = read::from_reader("bench.jsonl", std::io::Cursor::new(all.to_vec()), opts).unwrap();
        source.filter(|i| matches!(i, Ok(Ok(r)) if !matches!(r.content, Content::Fingerprint(_)))).count()
    })
}

fn group(
    c: &mut Criterion,
    name: &str,
    lines: &[Vec<u8>],
    opts: ReadOptions,
    typed: fn(Parser, &[u8], &mut Vec<u8>) -> usize,
) {
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let all: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let mut g = c.benchmark_group(format!("jsonl_parse_{name}"));
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_millis(500));
    g.bench_function("sketchdb_io_reader_serde_json", |b| b.iter(|| black_box(io_reader(&all, &opts, &pool))));
    g.bench_function("serde_json_value", |b| {
        b.iter(|| {
            lines
                .iter()
                .map(|l| black_box(serde_json::from_slice::<serde_json::Value>(l).unwrap()).is_object() as usize)
                .sum::<usize>()
        })
    });
    g.bench_function("simd_json_owned_value", |b| {
        let mut buf = Vec::new();
        b.iter(|| {
            lines
                .iter()
                .map(|l| {
                    buf.clear();
                    buf.extend_from_slice(l);
                    let v = simd_json::to_owned_value(&mut buf).unwrap();
                    black_box(v).as_object().is_some() as usize
                })
                .sum::<usize>()
        })
    });
    g.bench_function("simd_json_borrowed_value", |b| {
        let mut buf = Vec::new();
        b.iter(|| {
            lines
                .iter()
                .map(|l| {
                    buf.clear();
                    buf.extend_from_slice(l);
                    let v = simd_json::to_borrowed_value(&mut buf).unwrap();
                    black_box(v).as_object().is_some() as usize
                })
                .sum::<usize>()
        })
    });
    g.bench_function("sonic_rs_value", |b| {
        b.iter(|| {
            lines
                .iter()
                .map(|l| black_box(sonic_rs::from_slice::<sonic_rs::Value>(l).unwrap()).is_object() as usize)
                .sum::<usize>()
        })
    });
    for parser in [Parser::SerdeJson, Parser::SimdJson, Parser::SonicRs] {
        g.bench_function(format!("{}_selected_fields", parser.name()), |b| {
            let mut buf = Vec::new();
            b.iter(|| lines.iter().map(|l| typed(parser, l, &mut buf)).sum::<usize>())
        });
    }
    g.finish();
}

#[derive(Clone, Copy)]
enum Parser {
    SerdeJson,
    SimdJson,
    SonicRs,
}

impl Parser {
    fn name(self) -> &'static str {
        match self {
            Parser::SerdeJson => "serde_json",
            Parser::SimdJson => "simd_json",
            Parser::SonicRs => "sonic_rs",
        }
    }
}

/// Parses `line` into `T` with `parser` (simd-json parses in place: from a copy in `buf`).
fn parse<'a, T: Deserialize<'a>>(parser: Parser, line: &'a [u8], buf: &'a mut Vec<u8>) -> T {
    match parser {
        Parser::SerdeJson => serde_json::from_slice(line).unwrap(),
        Parser::SimdJson => {
            buf.clear();
            buf.extend_from_slice(line);
            simd_json::serde::from_slice(buf).unwrap()
        }
        Parser::SonicRs => sonic_rs::from_slice(line).unwrap(),
    }
}

fn typed_doc(parser: Parser, line: &[u8], buf: &mut Vec<u8>) -> usize {
    let d: Doc<'_> = parse(parser, line, buf);
    black_box(d.text.len() + d.id.map_or(0, |i| i.len()))
}

fn typed_set(parser: Parser, line: &[u8], buf: &mut Vec<u8>) -> usize {
    let s: Set = parse(parser, line, buf);
    black_box(s.tokens.len() + s.key.len())
}

fn docs(c: &mut Criterion) {
    let lines = lines("docs-20k.jsonl", gen_docs);
    let mut opts = ReadOptions::default();
    opts.text_field = "text".into();
    opts.select = sketchdb::io::Select::Text;
    group(c, "docs", &lines, opts, typed_doc);
}

fn sets(c: &mut Criterion) {
    let lines = lines("sets-100k.jsonl", gen_sets);
    let mut opts = ReadOptions::default();
    opts.id_field = "key".into();
    opts.tokens_field = "tokens".into();
    opts.select = sketchdb::io::Select::Tokens;
    group(c, "sets", &lines, opts, typed_set);
}

criterion_group!(benches, docs, sets);
criterion_main!(benches);
