//! Replays the reader fuzz targets' committed inputs as ordinary tests:
//! `fuzz/seeds/io_<reader>/` and `fuzz/regressions/io_<reader>/` (inputs that once failed).
//! The targets' logic lives in `sketchdb::io::fuzz`, shared with the `fuzz/` crate. Each
//! input's first byte picks reader options (see `sketchdb::io::fuzz`).
//!
//! `SKETCHDB_WRITE_SEEDS=1 cargo test --test io_fuzz_replay` rewrites the `io_*` seeds from
//! [`seeds`].

mod common;

use std::io::Write;
use std::path::Path;

use common::fuzz_inputs as inputs;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use sketchdb::io::fuzz;

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 5] = [
    ("io_jsonl", fuzz::fuzz_jsonl),
    ("io_csv", fuzz::fuzz_csv),
    ("io_parquet", fuzz::fuzz_parquet),
    ("io_gzip", fuzz::fuzz_gzip),
    ("io_zstd", fuzz::fuzz_zstd),
];

const JSONL: &str = concat!(
    "{\"id\": \"d000000\", \"text\": \"The quick brown fox.\", \"url\": \"https://example.org/0\", \"meta\": {\"lang\": \"en\", \"body\": \"inner\", \"len\": 20}}\n",
    "{\"key\": \"k1\", \"tokens\": [1, 2, 3], \"simhash\": \"0xdeadbeef\"}\n",
    "{\"id\": 7, \"tokens\": [\"a b\", \"c\"], \"text\": \"caf\\u00e9 \\ud83d\\ude00\"}\n",
    "\n{\"id\": \"d000003\", \"text\": \"\"}\n{\"id\": \"d000004\", \"text\": 404}\n{\"id\": \"d000005\", \"text\": \"cut\n[1,2]\n",
);

fn flagged(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![flags];
    v.extend_from_slice(body);
    v
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn parquet_bytes(compression: Compression) -> Vec<u8> {
    let s = |v: Vec<Option<&str>>| Arc::new(StringArray::from(v)) as ArrayRef;
    let meta = StructArray::from(vec![(
        Arc::new(Field::new("body", DataType::Utf8, true)),
        s(vec![Some("inner"), None, Some("")]),
    )]);
    let mut tokens = ListBuilder::new(UInt64Builder::new());
    for t in [&[1u64, 2][..], &[], &[u64::MAX]] {
        tokens.values().append_slice(t);
        tokens.append(true);
    }
    let batch = RecordBatch::try_from_iter(vec![
        ("id", s(vec![Some("a"), Some("b"), None])),
        ("text", s(vec![Some("one two"), None, Some("three")])),
        ("simhash", s(vec![Some("ff"), Some("zz"), None])),
        ("meta", Arc::new(meta) as ArrayRef),
        ("tokens", Arc::new(tokens.finish()) as ArrayRef),
    ])
    .unwrap();
    let props = WriterProperties::builder().set_compression(compression).set_max_row_group_row_count(Some(2)).build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

/// The starting corpus of each target.
fn seeds(name: &str) -> Vec<Vec<u8>> {
    let jsonl = JSONL.as_bytes();
    let all_flags = [0u8, 1, 2, 3, 4, 8, 16, 32, 0x2f];
    match name {
        "io_jsonl" => {
            all_flags.iter().map(|&f| flagged(f, jsonl)).chain([flagged(0, b"{\"text\": \"bad \xff\"}\n{")]).collect()
        }
        "io_csv" => {
            let csv = b"\xef\xbb\xbfid,text,tokens,simhash\nd0,\"Hello, \"\"world\"\"\nline\",\"[1,2]\",ff\nd1,a,b,c,d\n,no id,,\n";
            let tsv = b"key\ttext\na\tone two\nb\t\n";
            all_flags
                .iter()
                .map(|&f| flagged(f, csv))
                .chain([flagged(0x80, tsv), flagged(0x80 | 4, b"text\n\"unclosed")])
                .collect()
        }
        "io_parquet" => {
            let plain = parquet_bytes(Compression::UNCOMPRESSED);
            let snappy = parquet_bytes(Compression::SNAPPY);
            let zstd = parquet_bytes(Compression::ZSTD(Default::default()));
            let mut truncated = snappy.clone();
            truncated.truncate(snappy.len() / 2);
            truncated.extend_from_slice(&snappy[snappy.len() - 8..]);
            vec![
                flagged(0, &plain),
                flagged(1, &plain),
                flagged(3, &snappy),
                flagged(16 | 32, &zstd),
                flagged(2, &zstd),
                flagged(0, &truncated),
                flagged(0, b"PAR1PAR1"),
            ]
        }
        "io_gzip" => {
            let mut two = gz(jsonl);
            two.extend(gz(b"{\"id\":\"z\",\"text\":\"second member\"}\n"));
            let mut cut = gz(jsonl);
            cut.truncate(cut.len() / 2);
            vec![flagged(0, &two), flagged(3, &gz(jsonl)), flagged(0, &cut), flagged(0, b"\x1f\x8b\x08\x00garbage")]
        }
        "io_zstd" => {
            let frame = zstd::encode_all(jsonl, 3).unwrap();
            let mut two = frame.clone();
            two.extend(zstd::encode_all(&b"{\"id\":\"z\",\"text\":\"second frame\"}\n"[..], 19).unwrap());
            let mut cut = frame.clone();
            cut.truncate(cut.len() / 2);
            vec![flagged(0, &two), flagged(4, &frame), flagged(0, &cut), flagged(0, b"\x28\xb5\x2f\xfdgarbage")]
        }
        _ => vec![],
    }
}

#[test]
fn every_reader_seed_and_regression_input_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    if std::env::var_os("SKETCHDB_WRITE_SEEDS").is_some() {
        for (name, _) in TARGETS {
            let dir = root.join("seeds").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            for (i, input) in seeds(name).iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i:03}")), input).unwrap();
            }
        }
    }
    for (name, target) in TARGETS {
        let committed = inputs(&root.join("seeds").join(name));
        assert!(!committed.is_empty(), "no seeds for {name}");
        let regressions = inputs(&root.join("regressions").join(name));
        for (path, input) in committed.iter().chain(&regressions) {
            eprintln!("{name}: {path}");
            target(input);
        }
        eprintln!("{name}: {} seeds, {} regressions replayed", committed.len(), regressions.len());
        for input in seeds(name) {
            target(&input);
        }
    }
}

#[test]
fn oversized_inputs_are_ignored() {
    let big = vec![b'{'; fuzz::MAX_INPUT + 1];
    for (_, target) in TARGETS {
        target(&big);
    }
}

/// A cheap stand-in for fuzzing in every test run: each seed with bytes flipped, cut short or
/// spliced, deterministically.
#[test]
fn mutated_seeds_never_panic() {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (name, target) in TARGETS {
        for seed in seeds(name) {
            for _ in 0..60 {
                let mut input = seed.clone();
                match next() % 3 {
                    0 => {
                        for _ in 0..1 + next() % 4 {
                            let i = (next() as usize) % input.len();
                            input[i] ^= 1 << (next() % 8);
                        }
                    }
                    1 => input.truncate(1 + (next() as usize) % input.len()),
                    _ => {
                        let i = (next() as usize) % input.len();
                        let junk: Vec<u8> = (0..next() % 16).map(|_| next() as u8).collect();
                        input.splice(i..i, junk);
                    }
                }
                target(&input);
            }
        }
    }
}
