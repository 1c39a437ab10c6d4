//! `sketchdb import` of a signature Parquet in exactly the schema `sketchdb.spark dedup` writes
//! (`signatures/`: nullable `id`, nullable binary `signature`, the configuration in the
//! footer's key-value metadata, top-level or inside Spark's schema JSON): the imported
//! collection has the same records, the same LSH banding and answers every query like a
//! collection built directly from the same documents.

#[path = "common/cli.rs"]
#[allow(dead_code)]
mod cli;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use cli::{ok, run};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use serde_json::{Value, json};
use sketchdb::plan::PlanKind;
use sketchdb::{Collection, CollectionConfig, Database, IndexConfig, QueryKind, QueryOptions, Recipe, SketchParams};

/// `n` documents of 12 to 30 words, about half of them one-word edits of an earlier one.
fn corpus(n: usize) -> Vec<String> {
    let words: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    let mut docs: Vec<String> = Vec::new();
    for _ in 0..n {
        if !docs.is_empty() && next(2) == 0 {
            let mut w: Vec<String> = docs[next(docs.len())].split(' ').map(str::to_string).collect();
            let j = next(w.len());
            w[j] = words[next(words.len())].clone();
            docs.push(w.join(" "));
        } else {
            let len = 12 + next(19);
            docs.push((0..len).map(|_| words[next(words.len())].as_str()).collect::<Vec<_>>().join(" "));
        }
    }
    docs
}

/// Where the configuration goes in the file.
#[derive(Clone, Copy)]
enum Meta {
    /// A top-level footer key (pyarrow, Rust writers).
    TopLevel,
    /// The `signature` field's metadata inside Spark's row-metadata schema JSON.
    Spark,
    None,
}

/// Writes `ids[i]`'s signature under `config` for each document to `path`.
fn write_signatures(path: &Path, config: &CollectionConfig, ids: IdColumn, docs: &[String], meta: Meta, spec: &Value) {
    let sketcher = sketchdb::Sketcher::new(config.params).unwrap();
    let sigs: Vec<Vec<u8>> = docs
        .iter()
        .map(|d| sketchdb::signature::encode(&sketcher.sketch_text(&config.tokenizer, d).unwrap()))
        .collect();
    let (id_field, id_array): (Field, ArrayRef) = match ids {
        IdColumn::Strings(first) => (
            Field::new("id", DataType::Utf8, true),
            Arc::new(StringArray::from((first..first + docs.len()).map(|i| format!("doc-{i:05}")).collect::<Vec<_>>())),
        ),
        IdColumn::Ints(first) => (
            Field::new("id", DataType::Int64, true),
            Arc::new(Int64Array::from((first..first + docs.len()).map(|i| i as i64).collect::<Vec<_>>())),
        ),
    };
    let schema = Arc::new(Schema::new(vec![id_field, Field::new("signature", DataType::Binary, true)]));
    let sig_array: ArrayRef = Arc::new(BinaryArray::from(sigs.iter().map(|s| Some(s.as_slice())).collect::<Vec<_>>()));
    let batch = RecordBatch::try_new(schema.clone(), vec![id_array, sig_array]).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let text = spec.to_string();
    match meta {
        Meta::TopLevel => w.append_key_value_metadata(KeyValue::new("sketchdb.signatures".into(), text)),
        Meta::Spark => {
            let id_type = if matches!(ids, IdColumn::Ints(_)) { "long" } else { "string" };
            let row = json!({"type": "struct", "fields": [
                {"name": "id", "type": id_type, "nullable": true, "metadata": {}},
                {"name": "signature", "type": "binary", "nullable": true,
                 "metadata": {"sketchdb.signatures": text}}]});
            w.append_key_value_metadata(KeyValue::new(
                "org.apache.spark.sql.parquet.row.metadata".into(),
                row.to_string(),
            ));
        }
        Meta::None => {}
    }
    w.close().unwrap();
}

#[derive(Clone, Copy)]
enum IdColumn {
    Strings(usize),
    Ints(usize),
}

fn key(ids: IdColumn, i: usize) -> String {
    match ids {
        IdColumn::Strings(first) => format!("doc-{:05}", first + i),
        IdColumn::Ints(first) => (first + i).to_string(),
    }
}

/// The collection built directly from the documents through the library, in one batch (as
/// `ingest` or Python's `insert_many` load a corpus).
fn direct(dir: &Path, config: CollectionConfig, ids: IdColumn, docs: &[String]) -> Collection {
    let db = Database::create(dir.join("direct.sketchdb")).unwrap();
    let c = db.create_collection("direct", config).unwrap();
    let mut batch = sketchdb::Batch::new();
    for (i, d) in docs.iter().enumerate() {
        batch.insert(key(ids, i), c.sketcher().sketch_text(&config.tokenizer, d).unwrap());
    }
    c.apply(&batch).unwrap();
    c
}

type Answer = Vec<(Vec<u8>, u64, u64, u64)>;

fn answers(c: &Collection, text: &str, kind: QueryKind, force: Option<PlanKind>) -> Answer {
    let opts = QueryOptions { force, ..QueryOptions::default() };
    let r = c.query_text(text, kind, opts).unwrap();
    let mut v: Answer = r
        .hits
        .into_iter()
        .map(|h| (h.key, h.estimate.value.to_bits(), h.estimate.lower.to_bits(), h.estimate.upper.to_bits()))
        .collect();
    v.sort();
    v
}

/// Same records (key and signature bytes), same index banding, same answers to threshold
/// queries (planned and forced through the LSH index), top-k and dedup.
fn assert_same(a: &Collection, b: &Collection, docs: &[String]) {
    let scan = |c: &Collection| {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> =
            c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key, sketchdb::signature::encode(&r.sketch))).collect();
        v.sort();
        v
    };
    assert_eq!(scan(a), scan(b));
    assert_eq!(a.config().params, b.config().params);
    assert_eq!(a.config().tokenizer, b.config().tokenizer);
    let banding = |c: &Collection| match c.stats().unwrap().index {
        Some(sketchdb::IndexSummary::Lsh { bands, rows, .. }) => (bands, rows),
        other => panic!("no LSH index: {other:?}"),
    };
    assert_eq!(banding(a), banding(b));
    for (i, d) in docs.iter().enumerate().step_by(7) {
        for t in [0.5, 0.8] {
            let q = QueryKind::Threshold(t);
            assert_eq!(answers(a, d, q, None), answers(b, d, q, None), "doc {i} at {t}");
            for plan in [PlanKind::LshProbe, PlanKind::FullScan] {
                let p = Some(plan);
                assert_eq!(answers(a, d, q, p), answers(b, d, q, p), "doc {i} at {t}, {plan:?}");
            }
        }
        assert_eq!(answers(a, d, QueryKind::TopK(5), None), answers(b, d, QueryKind::TopK(5), None), "doc {i} top-5");
    }
    let clusters = |c: &Collection| {
        let r = c.dedup(QueryKind::Threshold(0.7), QueryOptions::default()).unwrap();
        let mut v: Vec<Vec<Vec<u8>>> = r
            .clusters
            .into_iter()
            .map(|cl| {
                let mut m = cl.keys;
                m.sort();
                m
            })
            .collect();
        v.sort();
        v
    };
    let (ca, cb) = (clusters(a), clusters(b));
    assert!(!ca.is_empty(), "the corpus has near-duplicates");
    assert_eq!(ca, cb);
}

/// The summary: the last line of stderr, as JSON.
fn summary_of(out: &std::process::Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    serde_json::from_str(err.lines().last().unwrap()).unwrap_or_else(|e| panic!("{err}: {e}"))
}

fn imported(dir: &Path, db: &str, name: &str) -> Collection {
    Database::open(dir.join(db)).unwrap().collection(name).unwrap()
}

/// The pipeline's metadata for `config`, resolved as the pipeline writes it.
fn spec_json(config: &CollectionConfig, recipe: Option<&str>, bands: u32, rows: u32) -> Value {
    let p = config.params;
    let (shingle, ngram, token_seed) = match config.tokenizer.kind() {
        sketchdb::TokenizerKind::Shingles { w } => (json!(w), Value::Null, config.tokenizer.seed()),
        sketchdb::TokenizerKind::CharNgrams { n } => (Value::Null, json!(n), config.tokenizer.seed()),
        _ => (Value::Null, Value::Null, 0),
    };
    json!({"version": 1, "kind": p.kind().name(), "k": p.size(), "bits": p.bits(), "seed": p.seed(),
           "family": p.family().name(), "recipe": recipe, "shingle": shingle, "ngram": ngram,
           "token_seed": token_seed, "threshold": 0.8, "bands": bands, "rows": rows,
           "signature_width": sketchdb::signature::width(&p), "level": 0.95})
}

/// The banding an LSH index gets for `config` at 0.8 (asked of the library, as the pipeline
/// does).
fn banding(config: CollectionConfig) -> (u32, u32) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("b.sketchdb")).unwrap();
    let c = db.create_collection("b", config.with_index(IndexConfig::lsh(0.8))).unwrap();
    match c.stats().unwrap().index {
        Some(sketchdb::IndexSummary::Lsh { bands, rows, .. }) => (bands, rows),
        other => panic!("{other:?}"),
    }
}

/// One import case: the direct collection and the imported one agree.
fn case(config: CollectionConfig, recipe: Option<&str>, ids: IdColumn, meta: Meta) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = corpus(400);
    let (bands, rows) = banding(config);
    let config = config.with_index(IndexConfig::Lsh { threshold: 0.8, bands: Some(bands), rows: Some(rows) });
    let spec = spec_json(&config, recipe, bands, rows);
    std::fs::create_dir(d.join("signatures")).unwrap();
    // Two part files and Spark's marker files, as `signatures/` holds them.
    let half = docs.len() / 2;
    let second = match ids {
        IdColumn::Strings(f) => IdColumn::Strings(f + half),
        IdColumn::Ints(f) => IdColumn::Ints(f + half),
    };
    write_signatures(&d.join("signatures/part-00000-x.snappy.parquet"), &config, ids, &docs[..half], meta, &spec);
    write_signatures(&d.join("signatures/part-00001-x.snappy.parquet"), &config, second, &docs[half..], meta, &spec);
    std::fs::write(d.join("signatures/_SUCCESS"), b"").unwrap();
    std::fs::write(d.join("signatures/.part-00000-x.snappy.parquet.crc"), b"crc").unwrap();
    let mut args = vec!["--db", "imp.sketchdb", "--json", "import", "signatures", "--into", "docs"];
    let flags: Vec<String>;
    if matches!(meta, Meta::None) {
        // Without metadata the flags state the configuration.
        let p = config.params;
        flags = [
            ("--kind", p.kind().name().to_string()),
            ("--k", p.size().to_string()),
            ("--bits", p.bits().to_string()),
            ("--seed", p.seed().to_string()),
            ("--lsh", "0.8".into()),
            ("--bands", bands.to_string()),
            ("--rows", rows.to_string()),
        ]
        .into_iter()
        .flat_map(|(f, v)| [f.to_string(), v])
        .chain(recipe.map(|r| ["--recipe".to_string(), r.to_string()]).into_iter().flatten())
        .collect();
        args.extend(flags.iter().map(String::as_str));
    }
    let out = ok(d, &args);
    let summary = summary_of(&out);
    assert_eq!(summary["inserted"], docs.len());
    assert_eq!(summary["configuration"], if matches!(meta, Meta::None) { "flags" } else { "metadata" });
    let a = direct(d, config, ids, &docs);
    let b = imported(d, "imp.sketchdb", "docs");
    assert_same(&a, &b, &docs);
    drop(b);
    // The same file again is a no-op; with --upsert every record is replaced by itself.
    let again = summary_of(&ok(d, &args));
    assert_eq!((again["inserted"].as_u64(), again["skipped"].as_u64()), (Some(0), Some(docs.len() as u64)));
    args.push("--upsert");
    let up = summary_of(&ok(d, &args));
    assert_eq!(up["replaced"], docs.len());
    assert_same(&a, &imported(d, "imp.sketchdb", "docs"), &docs);
}

#[test]
fn minhash_from_spark_metadata_answers_like_a_direct_collection() {
    let config = CollectionConfig::new(SketchParams::minhash(128, 32, sketchdb::recipes::DEFAULT_SEED).unwrap());
    case(config, None, IdColumn::Strings(0), Meta::Spark);
}

/// The 32-bit lane family, the default of MinHash 32 and b-bit, and the 64-bit family named
/// for the same kinds (the metadata names each; `import` recreates the collection in it).
#[test]
fn both_own_families_from_metadata_answer_like_a_direct_collection() {
    use sketchdb::HashFamily;
    for family in [HashFamily::MixMultiplyShift32, HashFamily::MixMultiplyShift] {
        let minhash = SketchParams::minhash(128, 32, 21).unwrap().with_family(family).unwrap();
        case(CollectionConfig::new(minhash), None, IdColumn::Strings(0), Meta::Spark);
        let bbit = SketchParams::bbit(256, 4, 22).unwrap().with_family(family).unwrap();
        case(CollectionConfig::new(bbit), None, IdColumn::Ints(0), Meta::TopLevel);
    }
}

#[test]
fn oph_words5_from_top_level_metadata_with_integer_ids() {
    let config =
        CollectionConfig::new(SketchParams::oph(256, 8, 7).unwrap()).with_recipe(Recipe::preset("words-5").unwrap());
    case(config, Some("words-5"), IdColumn::Ints(1000), Meta::TopLevel);
}

#[test]
fn bbit_text_dedup_and_datasketch_recipes() {
    let bbit = CollectionConfig::new(SketchParams::bbit(256, 8, 3).unwrap())
        .with_tokenizer(sketchdb::Tokenizer::char_ngrams(4, 9).unwrap());
    case(bbit, None, IdColumn::Strings(0), Meta::TopLevel);
    for name in ["text-dedup", "datasketch"] {
        let config = CollectionConfig::new(SketchParams::minhash(128, 32, 1).unwrap())
            .with_recipe(Recipe::preset(name).unwrap());
        case(config, Some(name), IdColumn::Strings(0), Meta::Spark);
    }
}

#[test]
fn configuration_from_flags_when_the_file_has_none() {
    let config = CollectionConfig::new(SketchParams::minhash(64, 64, 5).unwrap());
    case(config, None, IdColumn::Ints(0), Meta::None);
}

/// A one-file signature Parquet of 50 documents with `meta`.
fn small(d: &Path, meta: Meta) -> CollectionConfig {
    let params = sketchdb::recipes::default_params(sketchdb::SketchKind::MinHash, 128, None, 11).unwrap();
    let config =
        CollectionConfig::new(params).with_index(IndexConfig::Lsh { threshold: 0.8, bands: Some(16), rows: Some(8) });
    let spec = spec_json(&config, None, 16, 8);
    write_signatures(&d.join("s.parquet"), &config, IdColumn::Strings(0), &corpus(50), meta, &spec);
    config
}

fn fails(d: &Path, args: &[&str], code: i32, words: &[&str]) {
    let out = run(d, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    for w in words {
        assert!(err.contains(w), "{args:?}: `{w}` not in: {err}");
    }
    // Nothing was created.
    if d.join("x.sketchdb").exists() {
        let db = Database::open(d.join("x.sketchdb")).unwrap();
        assert!(db.collections().unwrap().iter().all(|c| c.name() != "c" || !c.is_empty().unwrap()));
    }
}

#[test]
fn a_flag_that_contradicts_the_metadata_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    small(d, Meta::TopLevel);
    let base = ["--db", "x.sketchdb", "import", "s.parquet", "--into", "c"];
    let with = |extra: &[&'static str]| base.iter().copied().chain(extra.iter().copied()).collect::<Vec<&str>>();
    fails(d, &with(&["--k", "64"]), 2, &["--k", "k = 128"]);
    fails(d, &with(&["--seed", "12"]), 2, &["--seed", "seed = 11"]);
    fails(d, &with(&["--bands", "8"]), 2, &["--bands", "bands = 16"]);
    fails(d, &with(&["--recipe", "words-5"]), 2, &["--recipe", "recipe"]);
    // Flags that agree are accepted.
    ok(d, &with(&["--k", "128", "--seed", "11", "--kind", "minhash"]));
    // An existing collection with other sketches is refused, not mixed.
    ok(d, &["--db", "y.sketchdb", "create", "c", "--kind", "minhash", "--k", "128", "--seed", "12"]);
    let out = run(d, &["--db", "y.sketchdb", "import", "s.parquet", "--into", "c"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("seed"));
}

#[test]
fn wrong_or_missing_configuration_and_bad_rows_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    small(d, Meta::None);
    // Without metadata the defaults (minhash 128 x 32, sketchdb's seed) decode the bytes
    // (same width) but the seed differs from the pipeline's: the flags must say so. A wrong
    // kind or k shows as a width mismatch.
    fails(d, &["--db", "x.sketchdb", "import", "s.parquet", "--into", "c", "--k", "64"], 2, &["s.parquet", "length"]);
    fails(d, &["--db", "x.sketchdb", "import", "s.parquet", "--into", "c", "--kind", "oph"], 2, &["length"]);
    fails(d, &["--db", "x.sketchdb", "import", "s.parquet"], 2, &["--into"]);
    // A null signature names its file and row; nothing is written.
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new("signature", DataType::Binary, true),
    ]));
    let good = vec![0u8; sketchdb::signature::width(&SketchParams::minhash(128, 32, 11).unwrap())];
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["a", "b", "c"])),
            Arc::new(BinaryArray::from(vec![Some(good.as_slice()), Some(good.as_slice()), None])),
        ],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(File::create(d.join("null.parquet")).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    fails(
        d,
        &["--db", "x.sketchdb", "import", "null.parquet", "--into", "c", "--seed", "11"],
        2,
        &["null.parquet", "row 2", "null `signature`"],
    );
    // A file without the columns.
    let schema = Arc::new(Schema::new(vec![Field::new("key", DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec!["a"])) as ArrayRef]).unwrap();
    let mut w = ArrowWriter::try_new(File::create(d.join("nocol.parquet")).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    fails(d, &["--db", "x.sketchdb", "import", "nocol.parquet", "--into", "c"], 2, &["no column `id`", "key"]);
    // Metadata of an unknown version.
    let config = CollectionConfig::new(SketchParams::minhash(128, 32, 11).unwrap());
    let mut spec = spec_json(&config, None, 16, 8);
    spec["version"] = json!(2);
    write_signatures(&d.join("v2.parquet"), &config, IdColumn::Strings(0), &corpus(3), Meta::TopLevel, &spec);
    fails(d, &["--db", "x.sketchdb", "import", "v2.parquet", "--into", "c"], 2, &["version 2"]);
    // An empty folder.
    std::fs::create_dir(d.join("empty")).unwrap();
    fails(d, &["--db", "x.sketchdb", "import", "empty", "--into", "c"], 2, &["no .parquet files"]);
    // The flags describe a signature Parquet, not an export.
    std::fs::write(d.join("e.jsonl"), "{}\n").unwrap();
    fails(d, &["--db", "x.sketchdb", "import", "e.jsonl", "--k", "64"], 2, &["signature Parquet"]);
}

#[test]
fn only_kept_leaves_out_the_ids_the_run_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = corpus(120);
    let config = CollectionConfig::new(SketchParams::minhash(128, 32, 4).unwrap()).with_index(IndexConfig::Lsh {
        threshold: 0.8,
        bands: Some(16),
        rows: Some(8),
    });
    let spec = spec_json(&config, None, 16, 8);
    for sub in ["run/signatures", "run/removed"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    write_signatures(&d.join("run/signatures/part-0.parquet"), &config, IdColumn::Ints(0), &docs, Meta::Spark, &spec);
    // removed/ as the pipeline writes it: (id, cluster), ids of the same type.
    let gone: Vec<i64> = (0..120).filter(|i| i % 3 == 1).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("cluster", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(gone.clone())), Arc::new(Int64Array::from(vec![0i64; gone.len()]))],
    )
    .unwrap();
    let mut w =
        ArrowWriter::try_new(File::create(d.join("run/removed/part-0.parquet")).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = ok(d, &["--db", "k.sketchdb", "--json", "import", "run", "--into", "kept", "--only-kept"]);
    let s = summary_of(&out);
    assert_eq!((s["rows"].as_u64(), s["removed"].as_u64(), s["inserted"].as_u64()), (Some(120), Some(40), Some(80)));
    let c = imported(d, "k.sketchdb", "kept");
    let mut keys: Vec<String> = c.scan().unwrap().map(|r| String::from_utf8(r.unwrap().key).unwrap()).collect();
    keys.sort();
    let mut want: Vec<String> = (0..120).filter(|i| i % 3 != 1).map(|i: i32| i.to_string()).collect();
    want.sort();
    assert_eq!(keys, want);
    drop(c);
    // --only-kept needs a run folder.
    fails(d, &["--db", "x.sketchdb", "import", "run/signatures", "--into", "c", "--only-kept"], 2, &["run folder"]);
}
