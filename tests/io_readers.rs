//! The corpus readers over files: the same documents as JSONL, gzip, zstd, Parquet, CSV and a
//! folder read identically; field selection; bad records rejected with their origin; a hostile
//! folder walk terminates and reports what it skipped.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, UInt64Builder};
use arrow_array::types::{Int8Type, Int16Type, Int32Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, StringArray, StructArray, UInt32Array};
use arrow_schema::{DataType, Field};
use common::Rng;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use sketchdb::io::{
    Content, Raw, ReadError, ReadOptions, Reject, RejectReason, Select, SkipReason, SourceRecord, read,
};

/// A document in the shape of the bench "Documents" workload.
struct Doc {
    id: String,
    text: String,
    url: String,
}

const WORDS: [&str; 16] = [
    "the",
    "quick",
    "Brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog's",
    "café",
    "naïve",
    "東京",
    "привет",
    "🙂emoji",
    "McMixed",
    "ACRONYM",
    "well-known",
];

fn docs(n: usize) -> Vec<Doc> {
    let mut rng = Rng(3);
    (0..n)
        .map(|i| {
            let words = rng.range(3, 40) as usize;
            let mut text = String::new();
            for w in 0..words {
                if w > 0 {
                    text.push_str(match rng.range(0, 9) {
                        0 => ", ",
                        1 => ".\n\n",
                        2 if i % 10 == 3 => ".\r\n",
                        _ => " ",
                    });
                }
                text.push_str(WORDS[rng.range(0, 15) as usize]);
            }
            text.push_str(if i % 2 == 0 { "." } else { "\"quoted\"!" });
            Doc { id: format!("d{i:06}"), text, url: format!("https://example.org/{i}") }
        })
        .collect()
}

fn jsonl(docs: &[Doc]) -> String {
    docs.iter()
        .map(|d| {
            let len = d.text.chars().count();
            format!(
                "{}\n",
                serde_json::json!({"id": d.id, "text": d.text, "url": d.url, "meta": {"lang": "en", "source": "synthetic", "len": len}})
            )
        })
        .collect()
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn csv(docs: &[Doc]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["id", "text", "url"]).unwrap();
    for d in docs {
        w.write_record([&d.id, &d.text, &d.url]).unwrap();
    }
    w.into_inner().unwrap()
}

/// Docs as Parquet with `meta` a struct, small row groups (so batches cross them), zstd pages.
fn parquet(path: &Path, docs: &[Doc], text: Vec<Option<&str>>) {
    let s = |v: Vec<Option<&str>>| Arc::new(StringArray::from(v)) as ArrayRef;
    let meta = StructArray::from(vec![
        (Arc::new(Field::new("lang", DataType::Utf8, true)), s(docs.iter().map(|_| Some("en")).collect())),
        (Arc::new(Field::new("body", DataType::Utf8, true)), s(text.clone())),
        (
            Arc::new(Field::new("len", DataType::UInt32, true)),
            Arc::new(UInt32Array::from(docs.iter().map(|d| d.text.chars().count() as u32).collect::<Vec<_>>()))
                as ArrayRef,
        ),
    ]);
    let mut tokens = ListBuilder::new(UInt64Builder::new());
    for d in docs {
        tokens.values().append_slice(&token_ids(&d.text));
        tokens.append(true);
    }
    let batch = RecordBatch::try_from_iter(vec![
        ("id", s(docs.iter().map(|d| Some(d.id.as_str())).collect())),
        ("text", s(text)),
        ("url", s(docs.iter().map(|d| Some(d.url.as_str())).collect())),
        ("meta", Arc::new(meta) as ArrayRef),
        ("tokens", Arc::new(tokens.finish()) as ArrayRef),
    ])
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(7))
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A stand-in for pre-tokenized input: each word's length and first byte.
fn token_ids(text: &str) -> Vec<u64> {
    text.split_whitespace().map(|w| (w.len() as u64) << 8 | u64::from(w.as_bytes()[0])).collect()
}

fn read_items(path: &Path, opts: &ReadOptions) -> Vec<Result<SourceRecord, Reject>> {
    read::open(path, opts).unwrap().map(|i| i.unwrap()).collect()
}

fn pairs(items: &[Result<SourceRecord, Reject>]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|r| {
            let r = r.as_ref().unwrap();
            let Content::Text(t) = &r.content else { panic!("{:?}", r.content) };
            (r.key.clone(), t.clone())
        })
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn the_same_documents_read_identically_from_every_format() {
    let docs = docs(60);
    let want: Vec<(String, String)> = docs.iter().map(|d| (d.id.clone(), d.text.clone())).collect();
    let dir = tempfile::tempdir().unwrap();
    let lines = jsonl(&docs);
    let (first, second) = lines.split_at(lines.find("d000030").unwrap() - 7);
    let mut two_members = gz(first.as_bytes());
    two_members.extend(gz(second.as_bytes()));
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    for d in &docs {
        std::fs::write(folder.join(&d.id), &d.text).unwrap();
    }
    let pq = dir.path().join("docs.parquet");
    parquet(&pq, &docs, docs.iter().map(|d| Some(d.text.as_str())).collect());
    let inputs = [
        write(dir.path(), "docs.jsonl", lines.as_bytes()),
        write(dir.path(), "docs.jsonl.gz", &two_members),
        write(dir.path(), "docs.jsonl.zst", &zstd::encode_all(lines.as_bytes(), 3).unwrap()),
        write(dir.path(), "docs-no-extension", &zstd::encode_all(lines.as_bytes(), 3).unwrap()),
        pq.clone(),
        write(dir.path(), "docs.csv", &csv(&docs)),
        folder,
    ];
    let mut small_batches = ReadOptions::default();
    small_batches.parquet_batch_rows = 5;
    for input in &inputs {
        for opts in [ReadOptions::default(), small_batches.clone()] {
            let items = read_items(input, &opts);
            assert_eq!(pairs(&items), want, "{}", input.display());
        }
    }
    let rows: Vec<String> =
        read_items(&pq, &small_batches).iter().map(|r| r.as_ref().unwrap().origin.to_string()).collect();
    assert_eq!(rows[59], format!("{}:59", pq.display()));
    let mut keep = ReadOptions::default();
    keep.keep_raw = true;
    let items = read_items(&pq, &keep);
    assert_eq!(items[12].as_ref().unwrap().raw, Raw::ParquetRow(12));
    let items = read_items(&inputs[0], &keep);
    assert_eq!(items[1].as_ref().unwrap().raw, Raw::JsonLine(lines.lines().nth(1).unwrap().into()));
}

/// Docs as Parquet whose columns are dictionary-encoded (as pandas categoricals and Arrow
/// dictionary arrays are written, with their Arrow schema): `id` with 8-bit keys, `text` with
/// 32-bit keys, and `meta.body` inside a struct; row `null_at` has a null text.
fn dictionary_parquet(path: &Path, docs: &[Doc], null_at: usize) {
    let texts: Vec<Option<&str>> =
        docs.iter().enumerate().map(|(i, d)| (i != null_at).then_some(d.text.as_str())).collect();
    let body: ArrayRef = Arc::new(texts.iter().copied().collect::<DictionaryArray<Int16Type>>());
    let meta = StructArray::from(vec![(Arc::new(Field::new("body", body.data_type().clone(), true)), body)]);
    let ids: DictionaryArray<Int8Type> = docs.iter().map(|d| Some(d.id.as_str())).collect();
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(texts.into_iter().collect::<DictionaryArray<Int32Type>>()) as ArrayRef),
        ("meta", Arc::new(meta) as ArrayRef),
    ])
    .unwrap();
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(7)).build();
    let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn dictionary_encoded_parquet_columns_read_as_their_values() {
    let docs = docs(40);
    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("dict.parquet");
    dictionary_parquet(&pq, &docs, 9);
    let plain = dir.path().join("plain.parquet");
    parquet(&plain, &docs, docs.iter().enumerate().map(|(i, d)| (i != 9).then_some(d.text.as_str())).collect());
    let want: Vec<(String, String)> =
        docs.iter().enumerate().filter(|&(i, _)| i != 9).map(|(_, d)| (d.id.clone(), d.text.clone())).collect();
    let mut nested = ReadOptions::default();
    nested.text_field = "meta.body".into();
    let mut small_batches = ReadOptions::default();
    small_batches.parquet_batch_rows = 5;
    for opts in [ReadOptions::default(), nested, small_batches] {
        for input in [&pq, &plain] {
            let items = read_items(input, &opts);
            let ok: Vec<_> = items.iter().filter(|r| r.is_ok()).cloned().collect();
            assert_eq!(pairs(&ok), want, "{} {}", input.display(), opts.text_field);
            let bad: Vec<_> = items.iter().filter_map(|r| r.as_ref().err()).collect();
            assert_eq!(bad.len(), 1, "{}", input.display());
            assert_eq!(bad[0].origin.to_string(), format!("{}:9", input.display()));
            assert_eq!(bad[0].reason, RejectReason::MissingField(opts.text_field.clone()));
        }
    }
}

#[test]
fn nested_text_field_and_pre_tokenized_input() {
    let docs = docs(20);
    let dir = tempfile::tempdir().unwrap();
    let nested: String = docs
        .iter()
        .map(|d| {
            format!("{}\n", serde_json::json!({"id": d.id, "meta": {"body": d.text, "lang": "en"}, "text": "decoy"}))
        })
        .collect();
    let pq = dir.path().join("docs.parquet");
    parquet(&pq, &docs, docs.iter().map(|d| Some(d.text.as_str())).collect());
    let mut opts = ReadOptions::default();
    opts.text_field = "meta.body".into();
    let want: Vec<(String, String)> = docs.iter().map(|d| (d.id.clone(), d.text.clone())).collect();
    assert_eq!(pairs(&read_items(&write(dir.path(), "n.jsonl", nested.as_bytes()), &opts)), want);
    assert_eq!(pairs(&read_items(&pq, &opts)), want);

    let tokenized: String =
        docs.iter().map(|d| format!("{}\n", serde_json::json!({"id": d.id, "tokens": token_ids(&d.text)}))).collect();
    let mut toks = ReadOptions::default();
    toks.select = Select::Tokens;
    let want: Vec<(String, Content)> =
        docs.iter().map(|d| (d.id.clone(), Content::Tokens(token_ids(&d.text)))).collect();
    for input in [write(dir.path(), "t.jsonl", tokenized.as_bytes()), pq] {
        let got: Vec<(String, Content)> =
            read_items(&input, &toks).into_iter().map(|r| r.unwrap()).map(|r| (r.key, r.content)).collect();
        assert_eq!(got, want, "{}", input.display());
    }
}

#[test]
fn bad_records_at_known_lines_are_rejected_and_the_rest_read() {
    let docs = docs(12);
    let mut lines: Vec<String> = jsonl(&docs).lines().map(String::from).collect();
    // The workload's bad kinds, at known 1-based lines, plus a duplicate id and an overlong one.
    lines[1] = r#"{"id": "d000001", "text": "", "url": "u"}"#.into();
    lines[3] = r#"{"id": "d000003", "text": " ... -- !! ", "url": "u"}"#.into();
    lines[4] = r#"{"id": "d000004", "url": "u"}"#.into();
    lines[6] = r#"{"id": "d000006", "text": "cut in ha"#.into();
    lines[7] = r#"{"id": "d000007", "text": 404237}"#.into();
    lines[9] = r#"{"id": "d000000", "text": "dup"}"#.into();
    lines[10] = format!(r#"{{"id": "{}", "text": "long key"}}"#, "x".repeat(2000));
    let data = lines.join("\n");
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.jsonl.gz", &gz(data.as_bytes()));
    let items = read_items(&path, &ReadOptions::default());
    let ok: Vec<String> = items.iter().filter_map(|r| r.as_ref().ok()).map(|r| r.key.clone()).collect();
    // Punctuation (line 4) is read: whether it has tokens is the collection's tokenizer's call.
    assert_eq!(ok, ["d000000", "d000002", "d000003", "d000005", "d000008", "d000011"]);
    let got: Vec<(String, RejectReason)> =
        items.iter().filter_map(|r| r.as_ref().err()).map(|r| (r.origin.to_string(), r.reason.clone())).collect();
    let at = |line: usize| format!("{}:{line}", path.display());
    assert_eq!(got[0], (at(2), RejectReason::EmptyText));
    assert_eq!(got[1], (at(5), RejectReason::MissingField("text".into())));
    assert!(matches!(&got[2], (o, RejectReason::InvalidJson(_)) if *o == at(7)));
    assert_eq!(got[3], (at(8), RejectReason::NotAString { field: "text".into(), found: "number" }));
    assert_eq!(got[4], (at(10), RejectReason::DuplicateKey("d000000".into())));
    assert_eq!(got[5], (at(11), RejectReason::KeyTooLong { len: 2000, max: sketchdb::MAX_KEY_LEN }));
    assert_eq!(got.len(), 6);

    // Strict mode: the first bad record ends the stream as an error naming it.
    let mut strict = ReadOptions::default();
    strict.strict = true;
    let mut src = read::open(&path, &strict).unwrap();
    let mut read_ok = 0;
    let err = loop {
        match src.next().unwrap() {
            Ok(Ok(_)) => read_ok += 1,
            Ok(Err(r)) => panic!("a reject in strict mode: {r}"),
            Err(e) => break e,
        }
    };
    assert_eq!(read_ok, 1);
    assert!(
        matches!(&err, ReadError::Rejected(r) if r.origin.to_string() == at(2) && r.reason == RejectReason::EmptyText)
    );
    assert_eq!(err.to_string(), format!("{}: empty text", at(2)));
    assert!(src.next().is_none());
    let root: sketchdb::Error = err.into();
    assert!(matches!(root, sketchdb::Error::Read(_)));

    // Parquet: a null and an empty text at known rows.
    let pq = dir.path().join("bad.parquet");
    let text: Vec<Option<&str>> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if i == 2 {
                None
            } else if i == 5 {
                Some("")
            } else {
                Some(d.text.as_str())
            }
        })
        .collect();
    parquet(&pq, &docs, text);
    let items = read_items(&pq, &ReadOptions::default());
    let got: Vec<(String, RejectReason)> =
        items.iter().filter_map(|r| r.as_ref().err()).map(|r| (r.origin.to_string(), r.reason.clone())).collect();
    assert_eq!(
        got,
        [
            (format!("{}:2", pq.display()), RejectReason::MissingField("text".into())),
            (format!("{}:5", pq.display()), RejectReason::EmptyText)
        ]
    );
    assert_eq!(items.len(), 12);
    let mut wrong = ReadOptions::default();
    wrong.text_field = "body".into();
    assert!(matches!(read::open(&pq, &wrong).err(), Some(ReadError::MissingColumn { .. })));
}

#[test]
fn a_hostile_folder_terminates_reads_the_rest_and_reports_what_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("a.txt"), "alpha text").unwrap();
    std::fs::write(root.join("sub/b.txt"), "beta text").unwrap();
    std::fs::write(root.join("sub/deeper/c.txt"), "gamma text").unwrap();
    std::fs::write(root.join(".git/config"), "hidden text").unwrap();
    std::fs::write(root.join(".hidden.txt"), "hidden text").unwrap();
    std::fs::write(root.join("image.bin"), b"GIF89a\x00\x01\x02").unwrap();
    std::fs::write(root.join("latin1.txt"), b"caf\xe9").unwrap();
    std::fs::write(root.join("empty.txt"), "").unwrap();
    let locked = root.join("sub/locked.txt");
    std::fs::write(&locked, "locked text").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::{PermissionsExt, symlink};
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        symlink(&root, root.join("sub/deeper/loop")).unwrap();
        symlink(root.join("a.txt"), root.join("link-to-a.txt")).unwrap();
    }
    // Root (as in CI containers) reads a mode-000 file anyway.
    let locked_readable = std::fs::read(&locked).is_ok();

    let mut src = read::open(&root, &ReadOptions::default()).unwrap();
    let items: Vec<_> = src.by_ref().map(|i| i.unwrap()).collect();
    let mut want = vec!["a.txt", "sub/b.txt", "sub/deeper/c.txt"];
    if locked_readable {
        want.push("sub/locked.txt");
    }
    let ok: Vec<&str> = items.iter().filter_map(|r| r.as_ref().ok()).map(|r| r.key.as_str()).collect();
    assert_eq!(ok, want);
    let rejected: Vec<(&Path, &RejectReason)> =
        items.iter().filter_map(|r| r.as_ref().err()).map(|r| (r.origin.path(), &r.reason)).collect();
    assert_eq!(rejected[0], (root.join("empty.txt").as_path(), &RejectReason::EmptyText));
    if locked_readable {
        assert_eq!(rejected.len(), 1);
    } else {
        assert_eq!(rejected.len(), 2);
        assert!(matches!(rejected[1], (p, RejectReason::Unreadable(_)) if p == locked));
    }
    let summary = src.summary();
    assert_eq!(summary.skipped_for(SkipReason::Hidden), 2);
    assert_eq!(summary.skipped_for(SkipReason::Binary), 2);
    if cfg!(unix) {
        assert_eq!(summary.skipped_for(SkipReason::Symlink), 2);
    }

    // Following links: the loop is entered once at most, the linked file read under its own key.
    let mut follow = ReadOptions::default();
    follow.follow_symlinks = true;
    follow.lossy_utf8 = true;
    let mut src = read::open(&root, &follow).unwrap();
    let items: Vec<_> = src.by_ref().map(|i| i.unwrap()).collect();
    let ok: Vec<&str> = items.iter().filter_map(|r| r.as_ref().ok()).map(|r| r.key.as_str()).collect();
    assert!(ok.contains(&"latin1.txt") && ok.contains(&"sub/deeper/c.txt"), "{ok:?}");
    if cfg!(unix) {
        assert!(ok.contains(&"link-to-a.txt"));
        assert_eq!(src.summary().skipped_for(SkipReason::Loop), 1);
    }
    assert_eq!(src.summary().skipped_for(SkipReason::Binary), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}
