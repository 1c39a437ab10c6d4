//! `sketchdb dedup INPUT` reads what `ingest` reads, with the same options: the same records
//! as JSONL, CSV, Parquet and on standard input (`-`, spooled for a second pass) give the
//! same clusters, and `--write-deduplicated` from each keeps every input field. Records
//! without tokens are kept, counted (`no_tokens`) and marked; the readers' options
//! (`--input-format`, `--rejects`, `--strict`) work on dedup as on ingest.
#![cfg(all(feature = "cli", feature = "parquet"))]

mod common;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use common::cli::{lines, ok, run};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};

/// One test record: id, body text, a score and a language (fields dedup must pass through).
struct Doc {
    id: String,
    body: String,
    score: i64,
    lang: String,
}

/// Deterministic words: word `i` of family `f`.
fn words(f: usize, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("w{}x{}", f * 7919 + i * 31 % 97, i)).collect()
}

/// Four families of near-duplicates (the last word changed: Jaccard of 5-word shingles
/// about 0.98) of sizes 3, 2, 2 and 1, plus unlike records; one record has a comma, a quote
/// and a newline in its text (CSV quoting).
fn docs() -> Vec<Doc> {
    let mut v = Vec::new();
    for (f, size) in [(0usize, 3usize), (1, 2), (2, 2), (3, 1), (4, 1), (5, 1)] {
        let base = words(f, 120);
        for m in 0..size {
            let mut w = base.clone();
            if m > 0 {
                *w.last_mut().unwrap() = format!("changed{m}");
            }
            let mut body = w.join(" ");
            if f == 1 && m == 0 {
                body.push_str(", \"quoted\"\nsecond line");
            }
            let n = v.len();
            v.push(Doc { id: format!("d{n:02}"), body, score: (n as i64 * 37) % 11, lang: ["en", "fr"][n % 2].into() });
        }
    }
    v
}

/// The expected clusters as sets of ids (families with more than one member).
fn expected_clusters() -> BTreeSet<BTreeSet<String>> {
    let ids = |r: std::ops::Range<usize>| r.map(|i| format!("d{i:02}")).collect::<BTreeSet<_>>();
    [ids(0..3), ids(3..5), ids(5..7)].into_iter().collect()
}

fn jsonl_line(d: &Doc) -> String {
    // Field order and spacing differ from serde_json's, so a byte-exact copy shows.
    format!(
        "{{\"lang\": \"{}\", \"doc_id\":\"{}\",\"body\":{},  \"score\":{}}}",
        d.lang,
        d.id,
        serde_json::to_string(&d.body).unwrap(),
        d.score
    )
}

fn write_jsonl(path: &Path, docs: &[Doc]) {
    let text: String = docs.iter().map(|d| jsonl_line(d) + "\n").collect();
    std::fs::write(path, text).unwrap();
}

fn write_csv(path: &Path, docs: &[Doc]) {
    let mut w = csv::Writer::from_path(path).unwrap();
    w.write_record(["doc_id", "body", "score", "lang"]).unwrap();
    for d in docs {
        w.write_record([d.id.as_str(), &d.body, &d.score.to_string(), &d.lang]).unwrap();
    }
    w.flush().unwrap();
}

fn write_parquet(path: &Path, docs: &[Doc]) {
    let col = |f: &dyn Fn(&Doc) -> String| -> ArrayRef {
        Arc::new(StringArray::from(docs.iter().map(f).collect::<Vec<_>>()))
    };
    let batch = RecordBatch::try_from_iter([
        ("doc_id", col(&|d| d.id.clone())),
        ("body", col(&|d| d.body.clone())),
        ("score", Arc::new(Int64Array::from(docs.iter().map(|d| d.score).collect::<Vec<_>>())) as ArrayRef),
        ("lang", col(&|d| d.lang.clone())),
    ])
    .unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn parquet_batches(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    reader.map(Result::unwrap).collect()
}

/// Runs the binary with `input` on its standard input.
fn run_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The clusters printed by `dedup --json`, as sets of keys.
fn clusters(out: &Output) -> BTreeSet<BTreeSet<String>> {
    lines(&out.stdout)
        .iter()
        .map(|c| c["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect())
        .collect()
}

/// The dedup summary on stderr.
fn summary(out: &Output) -> Value {
    let text = String::from_utf8(out.stderr.clone()).unwrap();
    let objects: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    lines(objects.join("\n").as_bytes()).into_iter().find(|v| v["command"] == "dedup").expect("a dedup summary")
}

/// Every record of a CSV file as (header -> value) maps.
fn csv_records(path: &Path) -> Vec<Vec<(String, String)>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records().map(|rec| headers.iter().cloned().zip(rec.unwrap().iter().map(str::to_string)).collect()).collect()
}

const FIELDS: [&str; 6] = ["--text-field", "body", "--id-field", "doc_id", "--threshold", "0.8"];

/// The kept ids: every record but the non-first members of each cluster (`--keep first`).
fn expected_kept(docs: &[Doc]) -> Vec<String> {
    let dropped: BTreeSet<String> =
        expected_clusters().iter().flat_map(|c| c.iter().skip(1).cloned().collect::<Vec<_>>()).collect();
    docs.iter().map(|d| d.id.clone()).filter(|id| !dropped.contains(id)).collect()
}

#[test]
fn every_input_format_and_stdin_give_the_same_clusters_and_keep_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = docs();
    write_jsonl(&d.join("docs.jsonl"), &docs);
    write_csv(&d.join("docs.csv"), &docs);
    write_parquet(&d.join("docs.parquet"), &docs);
    let kept_ids = expected_kept(&docs);
    let dedup = |input: &str, db: &str, out: &str| -> Output {
        let args = [&["--db", db, "--json", "dedup", input, "--write-deduplicated", out][..], &FIELDS].concat();
        if input == "-" {
            let bytes = std::fs::read(d.join(if out.ends_with(".csv") { "docs.csv" } else { "docs.jsonl" })).unwrap();
            let mut args = args;
            if out.ends_with(".csv") {
                args.extend(["--input-format", "csv"]);
            }
            let o = run_stdin(d, &args, &bytes);
            assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
            o
        } else {
            ok(d, &args)
        }
    };

    // JSONL: the kept lines are the input's lines, byte for byte.
    let out = dedup("docs.jsonl", "a.db", "kept.jsonl");
    assert_eq!(clusters(&out), expected_clusters());
    let s = summary(&out);
    assert_eq!(
        (s["records"].as_u64(), s["duplicates"].as_u64(), s["no_tokens"].as_u64()),
        (Some(10), Some(4), Some(0))
    );
    // Where the time went: the ingest of the input, its stages, then the join.
    assert_eq!(s["ingest"]["documents"].as_u64(), Some(10), "{s}");
    for stage in ["read", "sketch", "commit"] {
        let secs = s["ingest"]["stage_seconds"][stage].as_f64();
        assert!(secs.is_some_and(|x| x >= 0.0 && x <= s["seconds"].as_f64().unwrap()), "{stage}: {s}");
    }
    let join = s["join_seconds"].as_f64().unwrap();
    let stages: Vec<f64> =
        ["load", "keys", "pairs", "cluster"].iter().map(|k| s["join_stages"][k].as_f64().unwrap()).collect();
    assert!(stages.iter().all(|&x| x >= 0.0) && stages.iter().sum::<f64>() <= join, "{s}");
    let kept_lines: Vec<String> =
        std::fs::read_to_string(d.join("kept.jsonl")).unwrap().lines().map(str::to_string).collect();
    let want: Vec<String> = docs.iter().filter(|x| kept_ids.contains(&x.id)).map(jsonl_line).collect();
    assert_eq!(kept_lines, want);

    // Standard input (JSONL, spooled): the same clusters and the same bytes written.
    let out = dedup("-", "b.db", "kept-stdin.jsonl");
    assert_eq!(clusters(&out), expected_clusters());
    assert_eq!(std::fs::read(d.join("kept-stdin.jsonl")).unwrap(), std::fs::read(d.join("kept.jsonl")).unwrap());
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".sketchdb-stdin"))
        .collect();
    assert!(left.is_empty(), "the spool is removed: {left:?}");

    // CSV, from the file and from standard input: every column kept, values unchanged.
    let want_csv: Vec<Vec<(String, String)>> = docs
        .iter()
        .filter(|x| kept_ids.contains(&x.id))
        .map(|x| {
            [
                ("doc_id", x.id.clone()),
                ("body", x.body.clone()),
                ("score", x.score.to_string()),
                ("lang", x.lang.clone()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        })
        .collect();
    let out = dedup("docs.csv", "c.db", "kept.csv");
    assert_eq!(clusters(&out), expected_clusters());
    assert_eq!(csv_records(&d.join("kept.csv")), want_csv);
    let out = dedup("-", "d.db", "kept-stdin.csv");
    assert_eq!(clusters(&out), expected_clusters());
    assert_eq!(csv_records(&d.join("kept-stdin.csv")), want_csv);

    // Parquet: the input's schema and values, kept rows only.
    let out = dedup("docs.parquet", "e.db", "kept.parquet");
    assert_eq!(clusters(&out), expected_clusters());
    let batches = parquet_batches(&d.join("kept.parquet"));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["doc_id", "body", "score", "lang"]);
    let mut got = Vec::new();
    for b in &batches {
        let ids = b.column_by_name("doc_id").unwrap().as_string::<i32>();
        let bodies = b.column_by_name("body").unwrap().as_string::<i32>();
        let scores = b.column_by_name("score").unwrap().as_primitive::<Int64Type>();
        let langs = b.column_by_name("lang").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            got.push((
                ids.value(i).to_string(),
                bodies.value(i).to_string(),
                scores.value(i),
                langs.value(i).to_string(),
            ));
        }
    }
    let want: Vec<(String, String, i64, String)> = docs
        .iter()
        .filter(|x| kept_ids.contains(&x.id))
        .map(|x| (x.id.clone(), x.body.clone(), x.score, x.lang.clone()))
        .collect();
    assert_eq!(got, want);
}

/// `--keep FIELD` from standard input reads the spool a second time: the same keepers as
/// from the file.
#[test]
fn keep_by_field_from_stdin_equals_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = docs();
    write_jsonl(&d.join("docs.jsonl"), &docs);
    let keepers = |out: &Output| -> Vec<String> {
        lines(&out.stdout).iter().map(|c| c["keeper"].as_str().unwrap().to_string()).collect()
    };
    let args = |db: &'static str, input: &'static str| {
        [&["--db", db, "--json", "dedup", input, "--keep", "score"][..], &FIELDS].concat()
    };
    let from_file = ok(d, &args("a.db", "docs.jsonl"));
    let from_stdin = run_stdin(d, &args("b.db", "-"), &std::fs::read(d.join("docs.jsonl")).unwrap());
    assert!(from_stdin.status.success(), "{}", String::from_utf8_lossy(&from_stdin.stderr));
    assert_eq!(keepers(&from_stdin), keepers(&from_file));
    // The highest score of each cluster (ties: the first stored).
    let score = |id: &str| docs.iter().find(|x| x.id == id).unwrap().score;
    for (c, keeper) in lines(&from_file.stdout).iter().zip(keepers(&from_file)) {
        let best = c["keys"].as_array().unwrap().iter().map(|k| score(k.as_str().unwrap())).max().unwrap();
        assert_eq!(score(&keeper), best, "{c}");
    }
}

/// Records without tokens (an empty text, a text of punctuation) cannot be anyone's
/// duplicate: kept by `--write-deduplicated`, counted as `no_tokens`, marked `no_tokens` by
/// `--cluster-column`, never in `--dropped`; the same from JSONL and Parquet.
#[test]
fn records_without_tokens_are_kept_counted_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut docs = docs();
    let n = docs.len();
    for (i, body) in ["", "... !!! ---"].into_iter().enumerate() {
        docs.push(Doc { id: format!("e{i}"), body: body.into(), score: 1, lang: "en".into() });
    }
    write_jsonl(&d.join("docs.jsonl"), &docs);
    write_parquet(&d.join("docs.parquet"), &docs);
    let out = ok(
        d,
        &[
            &["--db", "x.db", "--json", "dedup", "docs.jsonl", "--write-deduplicated", "kept.jsonl"][..],
            &["--dropped", "dropped.txt"],
            &FIELDS,
        ]
        .concat(),
    );
    let s = summary(&out);
    assert_eq!((s["records"].as_u64(), s["no_tokens"].as_u64()), (Some(n as u64), Some(2)), "{s}");
    assert_eq!(clusters(&out), expected_clusters());
    let kept: Vec<String> = lines(&std::fs::read(d.join("kept.jsonl")).unwrap())
        .iter()
        .map(|v| v["doc_id"].as_str().unwrap().to_string())
        .collect();
    // The expected kept records include e0 and e1, in input order.
    assert_eq!(kept, expected_kept(&docs));
    assert!(kept.ends_with(&["e0".to_string(), "e1".to_string()]));
    let dropped = std::fs::read_to_string(d.join("dropped.txt")).unwrap();
    assert!(!dropped.lines().any(|k| k.starts_with('e')), "{dropped}");
    assert_eq!(dropped.lines().count(), 4);

    // A record that loses its tokens on a second run leaves its cluster: its stored sketch
    // is deleted (records without tokens do not keep --sync from deleting).
    let mut edited: Vec<Doc> = docs
        .iter()
        .take(n)
        .map(|x| Doc { id: x.id.clone(), body: x.body.clone(), score: x.score, lang: x.lang.clone() })
        .collect();
    edited[0].body = "--".into();
    write_jsonl(&d.join("docs.jsonl"), &edited);
    let out = ok(d, &[&["--db", "x.db", "--json", "dedup", "docs.jsonl"][..], &FIELDS].concat());
    let s = summary(&out);
    assert_eq!((s["records"].as_u64(), s["no_tokens"].as_u64()), (Some(n as u64 - 1), Some(1)), "{s}");
    let mut want = expected_clusters();
    let first = want.pop_first().unwrap();
    want.insert(first.into_iter().filter(|k| k != "d00").collect());
    assert_eq!(clusters(&out), want);
    write_jsonl(&d.join("docs.jsonl"), &docs);

    // Every record with the cluster columns: the status names what dedup decided.
    for (input, db, outf) in [("docs.jsonl", "y.db", "all.jsonl"), ("docs.parquet", "z.db", "all.parquet")] {
        ok(
            d,
            &[
                &["--db", db, "dedup", input, "--format", "none", "--write-deduplicated", outf][..],
                &["--cluster-column", "dup"],
                &FIELDS,
            ]
            .concat(),
        );
        let rows: Vec<(String, String, bool)> = if outf.ends_with(".jsonl") {
            lines(&std::fs::read(d.join(outf)).unwrap())
                .iter()
                .map(|v| {
                    let id = v["doc_id"].as_str().unwrap().to_string();
                    (id, v["dup_status"].as_str().unwrap().to_string(), v["dup_kept"].as_bool().unwrap())
                })
                .collect()
        } else {
            parquet_batches(&d.join(outf))
                .iter()
                .flat_map(|b| {
                    let ids = b.column_by_name("doc_id").unwrap().as_string::<i32>().clone();
                    let st = b.column_by_name("dup_status").unwrap().as_string::<i32>().clone();
                    let kept = b.column_by_name("dup_kept").unwrap().as_boolean().clone();
                    (0..b.num_rows())
                        .map(|i| (ids.value(i).to_string(), st.value(i).to_string(), kept.value(i)))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        assert_eq!(rows.len(), docs.len(), "{input}: every record written");
        let firsts: BTreeSet<String> = expected_clusters().iter().map(|c| c.first().unwrap().clone()).collect();
        let members: BTreeSet<String> = expected_clusters().into_iter().flatten().collect();
        for (id, status, kept) in rows {
            let want = if id.starts_with('e') {
                "no_tokens"
            } else if firsts.contains(&id) {
                "kept"
            } else if members.contains(&id) {
                "duplicate"
            } else {
                "unique"
            };
            assert_eq!((status.as_str(), kept), (want, want != "duplicate"), "{input}: {id}");
        }
    }
}

/// `--input-format` names the reader's format on dedup (its `--format` is the clusters'),
/// and is accepted by ingest too; `--rejects` and `--strict` work on dedup as on ingest.
#[test]
fn reader_options_on_dedup_and_the_input_format_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = docs();
    write_csv(&d.join("docs.data"), &docs);
    // No extension to detect CSV from: the reader's format must be given.
    let out = run(d, &[&["--db", "x.db", "dedup", "docs.data"][..], &FIELDS].concat());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = ok(
        d,
        &[&["--db", "x.db", "--json", "dedup", "docs.data", "--input-format", "csv", "--format", "csv"][..], &FIELDS]
            .concat(),
    );
    // `--json` prints the clusters as JSON lines; without it `--format csv` prints CSV.
    assert_eq!(clusters(&out), expected_clusters());
    let out = ok(
        d,
        &[&["--db", "x.db", "dedup", "docs.data", "--input-format", "csv", "--format", "csv"][..], &FIELDS].concat(),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().next(), Some("cluster,key,row_id,kept"), "{text}");
    // Ingest takes both spellings.
    for (c, flag) in [("c1", "--format"), ("c2", "--input-format")] {
        let out = ok(
            d,
            &[
                "--db",
                "y.db",
                "--json",
                "ingest",
                c,
                "docs.data",
                flag,
                "csv",
                "--text-field",
                "body",
                "--id-field",
                "doc_id",
            ],
        );
        let err = String::from_utf8(out.stderr).unwrap();
        let s: Value =
            err.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).next_back().unwrap();
        assert_eq!(s["added"], json!(docs.len()), "{flag}: {err}");
    }

    // A bad line: skipped and listed with --rejects; --strict stops with exit 2.
    let mut text: String = docs.iter().map(|x| jsonl_line(x) + "\n").collect();
    text.push_str("{not json\n");
    std::fs::write(d.join("bad.jsonl"), &text).unwrap();
    let out =
        ok(d, &[&["--db", "r.db", "--json", "dedup", "bad.jsonl", "--rejects", "rej.jsonl"][..], &FIELDS].concat());
    assert_eq!(clusters(&out), expected_clusters());
    let rejects = lines(&std::fs::read(d.join("rej.jsonl")).unwrap());
    assert_eq!(rejects.len(), 1);
    assert_eq!(rejects[0]["reason"], "invalid_json");
    assert_eq!(rejects[0]["origin"], format!("bad.jsonl:{}", docs.len() + 1));
    let out = run(d, &[&["--db", "s.db", "dedup", "bad.jsonl", "--strict"][..], &FIELDS].concat());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `ReadOptions::keep_empty` (dedup's second pass) passes records with an empty text or
/// token list through; by default the reader rejects them.
#[test]
fn keep_empty_passes_empty_records_through() {
    use sketchdb::io::{Content, ReadOptions, RejectReason, read};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.jsonl");
    std::fs::write(&path, "{\"id\":\"a\",\"text\":\"\"}\n{\"id\":\"b\",\"text\":\"word\"}\n").unwrap();
    let texts = |opts: &ReadOptions| -> Vec<Result<String, RejectReason>> {
        read::open(&path, opts)
            .unwrap()
            .map(|item| match item.unwrap() {
                Ok(rec) => match rec.content {
                    Content::Text(t) => Ok(t),
                    other => panic!("{other:?}"),
                },
                Err(reject) => Err(reject.reason),
            })
            .collect()
    };
    let mut opts = ReadOptions::default();
    assert_eq!(texts(&opts), [Err(RejectReason::EmptyText), Ok("word".to_string())]);
    opts.keep_empty = true;
    assert_eq!(texts(&opts), [Ok(String::new()), Ok("word".to_string())]);
}
