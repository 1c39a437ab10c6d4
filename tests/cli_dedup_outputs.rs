//! `sketchdb dedup`'s outputs: `--keep`, `--dropped`, `--pairs`, `--write-deduplicated`
//! (with and without `--cluster-column`) and the summary, on JSONL and folder inputs and on
//! stored collections; every `--json` line parsed against docs/cli-json.md.
#![cfg(all(feature = "cli", feature = "parquet"))]

mod common;

use common::cli::{lines, ok, run};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::Path;
use std::process::Output;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Value};

fn file_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

/// The test corpus, as (key, token ids, score): cluster A = k0, k1, k2 (k1 has two more
/// tokens: Jaccard 40/42 with the others), cluster B = k3, k4 (identical), and four records
/// unlike any other. Token ranges of different groups are disjoint.
fn corpus() -> Vec<(String, Vec<u64>, i64)> {
    let range = |lo: u64, n: u64| (lo..lo + n).collect::<Vec<u64>>();
    let mut v = vec![
        ("k0".to_string(), range(1000, 40), 1),
        ("k1".to_string(), range(1000, 42), 5),
        ("k2".to_string(), range(1000, 40), 5),
        ("k3".to_string(), range(2000, 60), 2),
        ("k4".to_string(), range(2000, 60), 1),
    ];
    for i in 0..4u64 {
        v.push((format!("k{}", 5 + i), range(10_000 + 1000 * i, 50), 0));
    }
    v
}

/// The corpus as JSONL lines, spelled unevenly (field order, spaces) so that a byte-exact
/// copy is told apart from a re-serialization.
fn jsonl_lines() -> Vec<String> {
    corpus()
        .into_iter()
        .enumerate()
        .map(|(i, (key, tokens, _))| {
            let t: Vec<String> = tokens.iter().map(u64::to_string).collect();
            if i % 2 == 0 {
                format!("{{\"tokens\": [{}],  \"key\":\"{key}\"}}", t.join(", "))
            } else {
                format!("{{\"key\":\"{key}\",\"tokens\":[{}]}}", t.join(","))
            }
        })
        .collect()
}

fn write_jsonl(d: &Path) {
    std::fs::write(d.join("docs.jsonl"), jsonl_lines().join("\n") + "\n").unwrap();
}

/// The summary line on stderr (the one with `"command": "dedup"`).
fn summary(out: &Output) -> Value {
    // Notes for people (such as "creating database") stay text; JSON lines are objects.
    let text = String::from_utf8(out.stderr.clone()).unwrap();
    let objects: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    lines(objects.join("\n").as_bytes()).into_iter().find(|v| v["command"] == "dedup").expect("a dedup summary")
}

#[test]
fn dedup_of_a_jsonl_file_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_jsonl(d);
    let out = ok(
        d,
        &[
            "--db",
            "x.db",
            "dedup",
            "docs.jsonl",
            "--threshold",
            "0.8",
            "--json",
            "--dropped",
            "dropped.jsonl",
            "--pairs",
            "pairs.jsonl",
            "--write-deduplicated",
            "out.jsonl",
        ],
    );
    // Clusters: A then B (largest first), each keeping the member stored first.
    let clusters = lines(&out.stdout);
    assert_eq!(clusters.len(), 2, "{clusters:?}");
    for (c, (id, keys, keeper)) in clusters.iter().zip([(1, vec!["k0", "k1", "k2"], "k0"), (2, vec!["k3", "k4"], "k3")])
    {
        assert_eq!(c["cluster"], id);
        assert_eq!(c["size"], keys.len());
        assert_eq!(c["keys"], serde_json::json!(keys));
        assert_eq!(c["keeper"], keeper);
        assert_eq!(c["rows"].as_array().unwrap().len(), keys.len());
    }
    // The summary: documents, clusters, duplicates removed, percent, time, files.
    let s = summary(&out);
    assert_eq!((s["records"].as_u64(), s["clusters"].as_u64(), s["duplicates"].as_u64()), (Some(9), Some(2), Some(3)));
    assert_eq!((s["kept"].as_u64(), s["keep"].as_str(), s["pairs"].as_u64()), (Some(6), Some("first"), Some(4)));
    assert!((s["percent"].as_f64().unwrap() - 100.0 * 3.0 / 9.0).abs() < 1e-9);
    assert!(s["seconds"].as_f64().unwrap() >= 0.0 && s["plan"].is_string() && s["reason"].is_string());
    let files: BTreeMap<String, u64> = s["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["option"].as_str().unwrap().to_string(), f["records"].as_u64().unwrap()))
        .collect();
    let expect: BTreeMap<String, u64> =
        [("dropped", 3), ("pairs", 4), ("write_deduplicated", 6)].map(|(k, v)| (k.to_string(), v)).into();
    assert_eq!(files, expect);

    // The pairs: exactly the pairs of equal or nearly equal token sets (brute force over the
    // corpus: Jaccard >= 0.8), each with its estimate inside its interval.
    let corpus = corpus();
    let mut truth = BTreeSet::new();
    for (i, (a, x, _)) in corpus.iter().enumerate() {
        for (b, y, _) in &corpus[i + 1..] {
            let (x, y): (BTreeSet<_>, BTreeSet<_>) = (x.iter().collect(), y.iter().collect());
            let j = x.intersection(&y).count() as f64 / x.union(&y).count() as f64;
            if j >= 0.8 {
                truth.insert((a.clone(), b.clone()));
            }
        }
    }
    let pairs = lines(&std::fs::read(d.join("pairs.jsonl")).unwrap());
    let found: BTreeSet<(String, String)> =
        pairs.iter().map(|p| (p["a"].as_str().unwrap().to_string(), p["b"].as_str().unwrap().to_string())).collect();
    assert_eq!(found, truth);
    for p in &pairs {
        let (e, lo, hi) = (p["estimate"].as_f64().unwrap(), p["lower"].as_f64().unwrap(), p["upper"].as_f64().unwrap());
        assert!(lo <= e && e <= hi && e >= 0.8, "{p}");
        assert_eq!((p["measure"].as_str(), p["level"].as_f64()), (Some("jaccard"), Some(0.95)));
        assert_eq!(p["cluster"], if p["a"] == "k3" { 2 } else { 1 });
    }

    // Dropped: every member but the keeper, with its best verified match.
    let dropped = lines(&std::fs::read(d.join("dropped.jsonl")).unwrap());
    let keys: Vec<&str> = dropped.iter().map(|v| v["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["k1", "k2", "k4"]);
    for v in &dropped {
        let key = v["key"].as_str().unwrap();
        let expect_keeper = if key == "k4" { "k3" } else { "k0" };
        assert_eq!(v["keeper"], expect_keeper);
        // k2 and k0 are identical (estimate 1), so k2's best match is k0; k1's best match is
        // k0 or k2 with equal estimates: the one stored first, k0.
        assert_eq!(v["best_match"], expect_keeper, "{v}");
        let best = pairs
            .iter()
            .filter(|p| p["a"] == key || p["b"] == key)
            .map(|p| p["estimate"].as_f64().unwrap())
            .fold(f64::MIN, f64::max);
        assert_eq!(v["estimate"].as_f64(), Some(best));
    }

    // The deduplicated records: the input's lines of the kept keys, byte for byte, in input
    // order; kept = input - dropped.
    let kept: Vec<String> =
        jsonl_lines().into_iter().filter(|l| !["\"k1\"", "\"k2\"", "\"k4\""].iter().any(|k| l.contains(k))).collect();
    assert_eq!(file_lines(&d.join("out.jsonl")), kept);
    assert_eq!(kept.len(), corpus.len() - dropped.len());
}

#[test]
fn keep_rules_choose_the_member_and_break_ties_by_storage_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_jsonl(d);
    let keepers = |keep: &str| -> Vec<String> {
        let db = format!("{keep}.db");
        let out = ok(d, &["--db", &db, "dedup", "docs.jsonl", "--threshold", "0.8", "--json", "--keep", keep]);
        lines(&out.stdout).iter().map(|c| c["keeper"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(keepers("first"), ["k0", "k3"]);
    // k1 has 42 tokens, the others of A 40; B's members tie, so the first stays.
    assert_eq!(keepers("longest"), ["k1", "k3"]);
    assert_eq!(keepers("shortest"), ["k0", "k3"]);
    // A field the records lack ranks every member equal: the first stays.
    assert_eq!(keepers("score"), ["k0", "k3"]);
}

#[test]
fn cluster_column_writes_every_record_with_its_cluster_and_keeper() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_jsonl(d);
    ok(
        d,
        &[
            "--db",
            "x.db",
            "dedup",
            "docs.jsonl",
            "--threshold",
            "0.8",
            "--format",
            "none",
            "--write-deduplicated",
            "all.jsonl.gz",
            "--cluster-column",
            "dup",
        ],
    );
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(File::open(d.join("all.jsonl.gz")).unwrap()),
        &mut text,
    )
    .unwrap();
    let written: Vec<&str> = text.lines().collect();
    let input = jsonl_lines();
    assert_eq!(written.len(), input.len(), "every record is written");
    let expect = |key: &str| -> (Value, String) {
        match key {
            "k0" | "k1" | "k2" => (Value::from(1), "k0".into()),
            "k3" | "k4" => (Value::from(2), "k3".into()),
            other => (Value::Null, other.into()),
        }
    };
    for (line, original) in written.iter().zip(&input) {
        // The input's bytes come first, unchanged; the four fields follow.
        let body = original.trim_end().strip_suffix('}').unwrap();
        assert!(line.starts_with(body), "{line}");
        let mut v: Map<String, Value> = serde_json::from_str(line).unwrap();
        let key = v["key"].as_str().unwrap().to_string();
        let (cluster, keeper) = expect(&key);
        assert_eq!(v.remove("dup"), Some(cluster.clone()), "{line}");
        assert_eq!(v.remove("dup_keeper"), Some(Value::from(keeper.as_str())));
        assert_eq!(v.remove("dup_kept"), Some(Value::from(key == keeper)));
        let status = match (&cluster, key == keeper) {
            (Value::Null, _) => "unique",
            (_, true) => "kept",
            (_, false) => "duplicate",
        };
        assert_eq!(v.remove("dup_status"), Some(Value::from(status)));
        assert_eq!(Value::Object(v), serde_json::from_str::<Value>(original).unwrap());
    }
}

/// The bundled sample folder: 12 texts, of which three near-duplicate groups.
fn samples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/docs")
}

fn parquet_batches(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    reader.map(Result::unwrap).collect()
}

fn strings(b: &RecordBatch, name: &str) -> Vec<String> {
    let col = b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    col.as_string::<i32>().iter().map(|s| s.unwrap().to_string()).collect()
}

/// Golden test on the bundled samples: the deduplicated JSONL and Parquet hold exactly the
/// kept files (input minus dropped) with their text unchanged, and the cluster column agrees
/// with the clusters.
#[test]
fn golden_deduplicated_outputs_of_the_bundled_samples() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = d.join("docs");
    std::fs::create_dir(&docs).unwrap();
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(samples()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        std::fs::copy(&p, docs.join(&name)).unwrap();
        files.insert(name, std::fs::read_to_string(&p).unwrap());
    }
    let out = ok(
        d,
        &["--db", "x.db", "dedup", "docs", "--json", "--dropped", "dropped.txt", "--write-deduplicated", "kept.jsonl"],
    );
    let clusters = lines(&out.stdout);
    assert!(clusters.len() >= 2, "the samples hold near-duplicates: {clusters:?}");
    let dropped: BTreeSet<String> = file_lines(&d.join("dropped.txt")).into_iter().collect();
    let mut expect_dropped = BTreeSet::new();
    for c in &clusters {
        for k in c["keys"].as_array().unwrap() {
            if *k != c["keeper"] {
                expect_dropped.insert(k.as_str().unwrap().to_string());
            }
        }
    }
    assert_eq!(dropped, expect_dropped);
    let kept: Vec<Value> = lines(&std::fs::read(d.join("kept.jsonl")).unwrap());
    let kept_ids: BTreeSet<String> = kept.iter().map(|v| v["id"].as_str().unwrap().to_string()).collect();
    let all: BTreeSet<String> = files.keys().cloned().collect();
    assert_eq!(kept_ids, all.difference(&dropped).cloned().collect(), "kept = input - dropped");
    for v in &kept {
        assert_eq!(v["text"].as_str(), Some(files[v["id"].as_str().unwrap()].as_str()), "text unchanged");
    }

    // Parquet, every record with the cluster column.
    ok(
        d,
        &[
            "--db",
            "x.db",
            "dedup",
            "docs",
            "--format",
            "none",
            "--write-deduplicated",
            "all.parquet",
            "--cluster-column",
            "cluster",
        ],
    );
    let batches = parquet_batches(&d.join("all.parquet"));
    let mut seen = BTreeMap::new();
    for b in &batches {
        let (ids, texts, keepers) = (strings(b, "id"), strings(b, "text"), strings(b, "cluster_keeper"));
        let cluster = b.column_by_name("cluster").unwrap().as_primitive::<UInt64Type>();
        let kept = b.column_by_name("cluster_kept").unwrap().as_boolean();
        let status = strings(b, "cluster_status");
        for i in 0..b.num_rows() {
            assert_eq!(texts[i], files[&ids[i]], "text unchanged");
            let c = (!cluster.is_null(i)).then(|| cluster.value(i));
            let expect = match (c, kept.value(i)) {
                (None, _) => "unique",
                (Some(_), true) => "kept",
                (Some(_), false) => "duplicate",
            };
            assert_eq!(status[i], expect, "{}", ids[i]);
            seen.insert(ids[i].clone(), (c, keepers[i].clone(), kept.value(i)));
        }
    }
    assert_eq!(seen.keys().cloned().collect::<BTreeSet<_>>(), all, "every record written");
    for (id, (c, keeper, kept)) in &seen {
        let home = clusters.iter().find(|c| c["keys"].as_array().unwrap().iter().any(|k| k == id.as_str()));
        match home {
            Some(h) => {
                assert_eq!(*c, h["cluster"].as_u64());
                assert_eq!(keeper, h["keeper"].as_str().unwrap());
            }
            None => assert_eq!((c, keeper.as_str()), (&None, id.as_str())),
        }
        assert_eq!(*kept, !dropped.contains(id));
    }

    // Kept records only, as Parquet: the same set as the JSONL.
    ok(d, &["--db", "x.db", "dedup", "docs", "--format", "none", "--write-deduplicated", "kept.parquet"]);
    let ids: BTreeSet<String> =
        parquet_batches(&d.join("kept.parquet")).iter().flat_map(|b| strings(b, "id")).collect();
    assert_eq!(ids, kept_ids);
}

#[test]
fn pairs_and_drop_lists_in_csv_tsv_and_parquet_agree_with_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_jsonl(d);
    let base = ["--db", "x.db", "dedup", "docs.jsonl", "--threshold", "0.8", "--format", "none"];
    let with = |extra: &[&str]| ok(d, &[&base[..], extra].concat());
    with(&["--pairs", "p.jsonl", "--dropped", "dr.jsonl"]);
    with(&["--pairs", "p.csv", "--dropped", "dr.tsv"]);
    with(&["--pairs", "p.parquet", "--dropped", "dr.txt"]);
    let json_pairs: Vec<(String, String, f64)> = lines(&std::fs::read(d.join("p.jsonl")).unwrap())
        .iter()
        .map(|p| (p["a"].as_str().unwrap().into(), p["b"].as_str().unwrap().into(), p["estimate"].as_f64().unwrap()))
        .collect();
    let mut csv = csv::Reader::from_path(d.join("p.csv")).unwrap();
    assert_eq!(csv.headers().unwrap(), vec!["a", "b", "cluster", "measure", "estimate", "lower", "upper", "level"]);
    let csv_pairs: Vec<(String, String, f64)> =
        csv.records().map(|r| r.unwrap()).map(|r| (r[0].into(), r[1].into(), r[4].parse().unwrap())).collect();
    // The same pairs; estimates equal to the last bit a decimal rendering keeps.
    assert_eq!(csv_pairs.len(), json_pairs.len());
    for (c, j) in csv_pairs.iter().zip(&json_pairs) {
        assert_eq!((&c.0, &c.1), (&j.0, &j.1));
        assert!((c.2 - j.2).abs() < 1e-12, "{c:?} vs {j:?}");
    }
    let pq: Vec<(String, String)> = parquet_batches(&d.join("p.parquet"))
        .iter()
        .flat_map(|b| strings(b, "a").into_iter().zip(strings(b, "b")))
        .collect();
    assert_eq!(pq, json_pairs.iter().map(|p| (p.0.clone(), p.1.clone())).collect::<Vec<_>>());
    let json_dropped: Vec<String> =
        lines(&std::fs::read(d.join("dr.jsonl")).unwrap()).iter().map(|v| v["key"].as_str().unwrap().into()).collect();
    let mut tsv = csv::ReaderBuilder::new().delimiter(b'\t').from_path(d.join("dr.tsv")).unwrap();
    let tsv_dropped: Vec<String> = tsv.records().map(|r| r.unwrap()[0].to_string()).collect();
    assert_eq!(tsv_dropped, json_dropped);
    assert_eq!(file_lines(&d.join("dr.txt")), json_dropped);
}

#[test]
fn a_stored_collection_has_no_records_to_write_or_fields_to_keep_by() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_jsonl(d);
    ok(d, &["--db", "x.db", "ingest", "c", "docs.jsonl"]);
    // The drop list and the pairs need only the collection.
    let out = ok(d, &["--db", "x.db", "dedup", "c", "--threshold", "0.8", "--format", "none", "--dropped", "dr.txt"]);
    assert_eq!(file_lines(&d.join("dr.txt")), ["k1", "k2", "k4"], "{}", String::from_utf8_lossy(&out.stderr));
    // `--threads` sets the join's threads, of a stored collection too; the clusters are the same.
    let join = |threads: Option<&str>| {
        let mut args = vec!["--db", "x.db", "--json", "dedup", "c", "--threshold", "0.8"];
        args.extend(threads.map(|n| ["--threads", n]).into_iter().flatten());
        ok(d, &args).stdout
    };
    let all = join(None);
    assert_eq!(lines(&all).len(), 2, "{}", String::from_utf8_lossy(&all));
    for n in ["1", "3"] {
        assert_eq!(join(Some(n)), all, "--threads {n}");
    }
    for args in [
        &["dedup", "c", "--rejects", "r.jsonl"][..],
        &["dedup", "c", "--write-deduplicated", "o.jsonl"],
        &["dedup", "c", "--keep", "longest"],
        &["dedup", "c", "--keep", "score"],
        &["dedup", "c", "--dropped", "x.unknown"],
        &["dedup", "c", "--write-deduplicated", "o.parquet.gz"],
        &["dedup", "c", "--cluster-column", "x"],
    ] {
        let out = run(d, &[&["--db", "x.db", "--json"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = lines(&out.stderr);
        assert_eq!(err.last().unwrap()["error"]["kind"], "usage", "{args:?}: {err:?}");
    }
    // A JSONL input is not turned into CSV.
    let out = run(d, &["--db", "y.db", "dedup", "docs.jsonl", "--write-deduplicated", "o.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JSONL"), "{}", String::from_utf8_lossy(&out.stderr));
}
