//! The documents workloads over `docs-<n>.jsonl` and its truth file (../shared/bench, read as
//! they are): `dedup-docs`, raw documents to near-duplicate clusters with pair recall and
//! precision per threshold, and `search-docs`, threshold queries from the family documents
//! with recall and precision. Both run over a list of sketch configurations, with and without
//! an LSH index, so that defaults can be chosen by measurement.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use sketchdb::io::{Content as Read, ReadOptions, read};
use sketchdb::recipes::Content;
use sketchdb::{
    Batch, Clustering, Collection, CollectionConfig, Database, IndexConfig, QueryKind, QueryOptions, SketchParams,
};

use super::data::{DEFAULT_BATCH, workdir};
use super::report::{emit, percentile, ratio};
use crate::error::CliError;

/// The exact pairs of a `docs-<n>.truth.jsonl` file, by document number (`d000123` is 123).
pub struct Truth {
    /// Every listed pair (a < b) with its Jaccard under the truth's own recipe.
    pairs: HashMap<(u32, u32), f64>,
    /// The dataset name the file states (`docs-20k`).
    pub dataset: String,
}

impl Truth {
    /// Reads a truth file: the recipe line, then pair lines and bad-record lines.
    pub fn load(path: &Path) -> Result<Truth, CliError> {
        let file = std::fs::File::open(path).map_err(|e| CliError::io(path, e))?;
        let (mut pairs, mut dataset) = (HashMap::new(), String::new());
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| CliError::io(path, e))?;
            let bad = |what: &str| CliError::Input(format!("{}:{}: {what}", path.display(), i + 1));
            let v: Value = serde_json::from_str(&line).map_err(|e| bad(&e.to_string()))?;
            if let Some(name) = v.get("dataset").and_then(Value::as_str) {
                dataset = name.to_string();
            } else if let (Some(a), Some(b), Some(j)) = (v.get("a"), v.get("b"), v.get("jaccard")) {
                let num = |x: &Value| x.as_str().and_then(|s| doc_number(s.as_bytes()));
                let (Some(a), Some(b), Some(j)) = (num(a), num(b), j.as_f64()) else {
                    return Err(bad("a pair line needs string ids `d<number>` and a numeric jaccard"));
                };
                pairs.insert((a.min(b), a.max(b)), j);
            } else if v.get("bad").is_none() {
                return Err(bad("neither the recipe, a pair nor a bad record"));
            }
        }
        if pairs.is_empty() {
            return Err(CliError::Input(format!("no pairs in {}", path.display())));
        }
        Ok(Truth { pairs, dataset })
    }

    /// Keeps only the pairs of documents numbered below `n` (the lines a limited run read).
    pub fn restrict(&mut self, n: u64) {
        self.pairs.retain(|&(a, b), _| u64::from(a.max(b)) < n);
    }

    /// Pairs whose true Jaccard reaches `t`.
    pub fn count_at(&self, t: f64) -> usize {
        self.pairs.values().filter(|&&j| j >= t).count()
    }

    /// Whether documents `a` and `b` are a true pair at `t`.
    pub fn holds(&self, a: u32, b: u32, t: f64) -> bool {
        self.pairs.get(&(a.min(b), a.max(b))).is_some_and(|&j| j >= t)
    }

    /// Each document's partners with true Jaccard >= `t`.
    fn partners_at(&self, t: f64) -> HashMap<u32, HashSet<u32>> {
        let mut out: HashMap<u32, HashSet<u32>> = HashMap::new();
        for (&(a, b), _) in self.pairs.iter().filter(|(_, j)| **j >= t) {
            out.entry(a).or_default().insert(b);
            out.entry(b).or_default().insert(a);
        }
        out
    }

    /// Every document in some listed pair, ascending.
    fn members(&self) -> Vec<u32> {
        let mut m: Vec<u32> = self.pairs.keys().flat_map(|&(a, b)| [a, b]).collect();
        m.sort_unstable();
        m.dedup();
        m
    }
}

/// `d000123` -> 123.
pub fn doc_number(key: &[u8]) -> Option<u32> {
    std::str::from_utf8(key.strip_prefix(b"d")?).ok()?.parse().ok()
}

/// The truth file beside a docs file: `docs-20k.jsonl[.gz]` or `.parquet` ->
/// `docs-20k.truth.jsonl`.
pub fn truth_beside(docs: &Path) -> PathBuf {
    let name = docs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("docs");
    docs.with_file_name(format!("{stem}.truth.jsonl"))
}

/// A configuration to measure: a name and its sketch parameters.
#[derive(Clone, Debug)]
pub struct DocsConfig {
    /// As given (`bbit1024x4`, `default`).
    pub name: String,
    /// The parameters.
    pub params: SketchParams,
}

/// Configurations the issue compares, in the order `--configs all` runs them.
pub const ALL_CONFIGS: &str = "minhash128,bbit512x8,bbit1024x4,oph512x8,oph1024x8";

/// Parses `minhash128` (32-bit values), `bbit512x8`, `oph1024x4` (kind, slots, `x` bits) or
/// `default` (the default text collection's parameters).
pub fn parse_config(name: &str) -> Result<DocsConfig, CliError> {
    let usage = || CliError::Usage(format!("unknown configuration `{name}` (e.g. default, minhash128, bbit512x8, oph1024x4)"));
    if name == "default" {
        return Ok(DocsConfig { name: name.into(), params: sketchdb::recipes::text_config()?.params });
    }
    let (kind, rest) = ["minhash", "bbit", "oph"]
        .iter()
        .find_map(|k| name.strip_prefix(k).map(|r| (*k, r)))
        .ok_or_else(usage)?;
    let (slots, bits) = match rest.split_once('x') {
        Some((s, b)) => (s.parse::<u32>().map_err(|_| usage())?, Some(b.parse::<u8>().map_err(|_| usage())?)),
        None => (rest.parse::<u32>().map_err(|_| usage())?, None),
    };
    let seed = sketchdb::recipes::DEFAULT_SEED;
    let params = match kind {
        "minhash" => SketchParams::minhash(slots, bits.unwrap_or(32), seed)?,
        "bbit" => SketchParams::bbit(slots, bits.unwrap_or(8), seed)?,
        _ => SketchParams::oph(slots, bits.unwrap_or(8), seed)?,
    };
    Ok(DocsConfig { name: name.into(), params })
}

/// A loaded documents collection and what loading it cost.
pub struct Loaded {
    /// The collection (no index).
    pub coll: Collection,
    /// Input lines read (records and rejected lines).
    pub lines: u64,
    /// Documents stored.
    pub docs: u64,
    /// Records skipped: rejected by the reader, or with no tokens.
    pub skipped: u64,
    /// Seconds to read, parse, tokenize, sketch and store every document.
    pub ingest_s: f64,
    /// The database file.
    pub file: PathBuf,
    _db: Database,
    _dir: Option<tempfile::TempDir>,
}

impl Loaded {
    /// The database file's bytes per stored document.
    pub fn file_bytes_per_doc(&self) -> f64 {
        let bytes = std::fs::metadata(&self.file).map(|m| m.len()).unwrap_or(0);
        bytes as f64 / self.docs.max(1) as f64
    }
}

/// Reads every document of `docs` (the first `limit` lines), sketches it with `config` and
/// stores it under its `id` in durable batches; bad records and documents without tokens are
/// counted and skipped.
pub fn ingest(docs: &Path, limit: Option<usize>, config: CollectionConfig) -> Result<Loaded, CliError> {
    let (dir, guard) = workdir(None)?;
    let file = dir.join("docs.sketchdb");
    let db = Database::create(&file)?;
    let coll = db.create_collection("docs", config)?;
    let start = Instant::now();
    let mut source = read::open(docs, &ReadOptions::default()).map_err(|e| CliError::Input(e.to_string()))?;
    let (mut lines, mut stored, mut skipped) = (0u64, 0u64, 0u64);
    let mut batch = Batch::with_capacity(DEFAULT_BATCH);
    for item in source.by_ref() {
        if limit.is_some_and(|l| lines as usize >= l) {
            break;
        }
        lines += 1;
        let record = match item.map_err(|e| CliError::Input(e.to_string()))? {
            Ok(r) => r,
            Err(_) => {
                skipped += 1;
                continue;
            }
        };
        let Read::Text(text) = &record.content else {
            skipped += 1;
            continue;
        };
        match Content::Text(text).add_to(&coll, &mut batch, &record.key, false) {
            Ok(()) => stored += 1,
            Err(_) => skipped += 1,
        }
        if batch.len() == DEFAULT_BATCH {
            coll.apply(&batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        coll.apply(&batch)?;
    }
    if stored == 0 {
        return Err(CliError::Input(format!("no documents in {}", docs.display())));
    }
    let ingest_s = start.elapsed().as_secs_f64();
    Ok(Loaded { coll, lines, docs: stored, skipped, ingest_s, file, _db: db, _dir: guard })
}

/// Bytes of the uncompressed `.jsonl` a docs file was made from (the file itself, or its
/// `.jsonl` sibling), for `mb_per_s`; the file's own size when there is none.
fn jsonl_bytes(docs: &Path) -> u64 {
    let name = docs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("docs");
    let plain = docs.with_file_name(format!("{stem}.jsonl"));
    std::fs::metadata(&plain).or_else(|_| std::fs::metadata(docs)).map(|m| m.len()).unwrap_or(0)
}

/// The format label of a docs file: `jsonl`, `jsonl.gz` or `parquet`.
fn format_of(docs: &Path) -> String {
    let name = docs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.split_once('.').map(|(_, ext)| ext.to_string()).unwrap_or_default()
}

/// What every result line of one configuration shares.
struct Common<'a> {
    docs: &'a Path,
    truth: &'a Truth,
    config: &'a DocsConfig,
    loaded: &'a Loaded,
}

impl Common<'_> {
    fn config_json(&self, threshold: f64, index: &str) -> Value {
        let p = &self.config.params;
        json!({"config": self.config.name, "kind": p.kind().name(), "num_perm": p.slots(), "bits": p.bits(),
               "threshold": threshold, "index": index, "format": format_of(self.docs), "docs": self.loaded.docs,
               "exact_shingles": self.loaded.coll.config().exact_shingles})
    }

    fn sizes(&self) -> Result<Value, CliError> {
        let stats = self.loaded.coll.stats()?;
        Ok(json!({"bytes_per_record": stats.record_width,
                  "file_bytes_per_record": self.loaded.file_bytes_per_doc()}))
    }
}

/// The `dedup-docs` workload: for each configuration, load the documents once, then per
/// threshold deduplicate without an index (signatures banded in memory) and, when `with_index`,
/// with an LSH index for the threshold built over the loaded rows; one result line each.
#[allow(clippy::too_many_arguments)]
pub fn dedup_docs(
    docs: &Path,
    truth: &Path,
    thresholds: &[f64],
    configs: &[DocsConfig],
    indexes: &[bool],
    clusterings: &[Clustering],
    exact: bool,
    limit: Option<usize>,
    run: &str,
) -> Result<(), CliError> {
    let mut truth = Truth::load(truth)?;
    let bytes = jsonl_bytes(docs);
    for config in configs {
        let mut loaded = ingest(docs, limit, CollectionConfig::new(config.params).with_exact_shingles(exact))?;
        eprintln!("{}: {} documents in {:.1} s ({} skipped)", config.name, loaded.docs, loaded.ingest_s, loaded.skipped);
        if limit.is_some() {
            truth.restrict(loaded.lines);
        }
        for &with_index in indexes {
            for (&t, &clustering) in thresholds.iter().flat_map(|t| clusterings.iter().map(move |c| (t, c))) {
                let at = Instant::now();
                let index = if with_index { IndexConfig::lsh(t) } else { IndexConfig::None };
                if loaded.coll.config().index != index {
                    loaded.coll.rebuild_index(index)?;
                }
                let index_s = at.elapsed().as_secs_f64();
                let common = Common { docs, truth: &truth, config, loaded: &loaded };
                let at = Instant::now();
                let d = loaded.coll.dedup_clustered(QueryKind::Threshold(t), QueryOptions::default(), clustering)?;
                let dedup_s = at.elapsed().as_secs_f64();
                let (mut reported, mut right) = (0u64, 0u64);
                for c in &d.clusters {
                    let ids: Vec<Option<u32>> = c.keys.iter().map(|k| doc_number(k)).collect();
                    for i in 0..ids.len() {
                        for j in i + 1..ids.len() {
                            reported += 1;
                            if let (Some(a), Some(b)) = (ids[i], ids[j]) {
                                right += u64::from(common.truth.holds(a, b, t));
                            }
                        }
                    }
                }
                let wall_s = loaded.ingest_s + index_s + dedup_s;
                let mut metrics = json!({
                    "wall_s": wall_s, "docs_per_s": loaded.lines as f64 / wall_s,
                    "mb_per_s": bytes as f64 / 1e6 / wall_s, "pairs": reported, "clusters": d.clusters.len(),
                    "pair_recall": ratio(right as usize, common.truth.count_at(t)),
                    "pair_precision": ratio(right as usize, reported as usize),
                    "verified_pairs": d.pairs, "ingest_s": loaded.ingest_s, "index_s": index_s, "dedup_s": dedup_s,
                    "skipped": loaded.skipped,
                });
                merge(&mut metrics, common.sizes()?);
                let notes = format!(
                    "{} scores; plan {}; truth recipe differs from the collection's tokenizer",
                    d.scoring,
                    d.plan.map(|p| p.to_string()).unwrap_or_default()
                );
                let index_name = if with_index { "lsh" } else { "none" };
                let mut cfg = common.config_json(t, index_name);
                merge(&mut cfg, json!({"clustering": clustering.name()}));
                emit(run, "dedup-docs", &truth.dataset, cfg, metrics, &notes)?;
            }
        }
    }
    Ok(())
}

/// Adds `extra`'s fields to the object `into`.
fn merge(into: &mut Value, extra: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), extra) {
        a.extend(b);
    }
}

/// The `search-docs` workload: for each configuration, load the documents once; per
/// threshold, build an LSH index for it and ask a threshold query from each of the first
/// `queries` documents that belong to a planted family, once through the planner's choice
/// (the index) and once with `exact` (every stored sketch, no LSH); recall and precision are
/// micro-averaged over (query, document) pairs against the truth, the query document itself
/// not counted.
#[allow(clippy::too_many_arguments)]
pub fn search_docs(
    docs: &Path,
    truth: &Path,
    thresholds: &[f64],
    configs: &[DocsConfig],
    queries: usize,
    exact: bool,
    limit: Option<usize>,
    run: &str,
) -> Result<(), CliError> {
    let mut truth = Truth::load(truth)?;
    for config in configs {
        let mut loaded = ingest(docs, limit, CollectionConfig::new(config.params).with_exact_shingles(exact))?;
        eprintln!("{}: {} documents in {:.1} s ({} skipped)", config.name, loaded.docs, loaded.ingest_s, loaded.skipped);
        if limit.is_some() {
            truth.restrict(loaded.lines);
        }
        let probes: Vec<u32> = truth.members().into_iter().take(queries).collect();
        for &t in thresholds {
            loaded.coll.rebuild_index(IndexConfig::lsh(t))?;
            let partners = truth.partners_at(t);
            for exact in [false, true] {
                let common = Common { docs, truth: &truth, config, loaded: &loaded };
                let options = QueryOptions { exact, ..QueryOptions::default() };
                let (mut found, mut returned, mut expected, mut lat, mut asked) = (0u64, 0u64, 0u64, vec![], 0u64);
                let mut plan = String::new();
                for &q in &probes {
                    let key = format!("d{q:06}");
                    let at = Instant::now();
                    let res = match loaded.coll.query_key(&key, QueryKind::Threshold(t), options) {
                        Ok(r) => r,
                        // A family document the collection skipped (no tokens under its tokenizer).
                        Err(sketchdb::Error::Query(sketchdb::QueryError::UnknownKey { .. })) => continue,
                        Err(e) => return Err(e.into()),
                    };
                    lat.push(at.elapsed().as_secs_f64() * 1e6);
                    plan = res.plan.to_string();
                    asked += 1;
                    let want = partners.get(&q);
                    expected += want.map_or(0, |w| w.len() as u64);
                    for hit in res.hits.iter().filter_map(|h| doc_number(&h.key)).filter(|&h| h != q) {
                        returned += 1;
                        found += u64::from(want.is_some_and(|w| w.contains(&hit)));
                    }
                }
                let mut metrics = json!({
                    "recall": ratio(found as usize, expected as usize),
                    "precision": ratio(found as usize, returned as usize),
                    "p50_us": percentile(&mut lat, 0.5), "p99_us": percentile(&mut lat, 0.99),
                    "queries": asked, "returned": returned, "expected": expected, "ingest_s": loaded.ingest_s,
                });
                merge(&mut metrics, common.sizes()?);
                let index_name = if exact { "none (exact over stored sketches)" } else { "lsh" };
                let notes = format!("plan {plan}; truth recipe differs from the collection's tokenizer");
                emit(run, "search-docs", &truth.dataset, common.config_json(t, index_name), metrics, &notes)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_parse_kind_slots_and_bits() {
        let c = parse_config("bbit1024x4").unwrap();
        assert_eq!(c.params, SketchParams::bbit(1024, 4, sketchdb::recipes::DEFAULT_SEED).unwrap());
        let c = parse_config("minhash128").unwrap();
        assert_eq!(c.params, SketchParams::minhash(128, 32, sketchdb::recipes::DEFAULT_SEED).unwrap());
        let c = parse_config("oph512x8").unwrap();
        assert_eq!(c.params, SketchParams::oph(512, 8, sketchdb::recipes::DEFAULT_SEED).unwrap());
        for bad in ["", "bbit", "bbitx4", "simhash64", "oph512x"] {
            assert!(parse_config(bad).is_err(), "{bad}");
        }
        assert_eq!(ALL_CONFIGS.split(',').filter(|c| parse_config(c).is_ok()).count(), 5);
    }

    #[test]
    fn truth_files_give_pairs_by_document_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs-3.truth.jsonl");
        let lines = [
            r#"{"recipe": {}, "dataset": "docs-3", "n": 3}"#,
            r#"{"a": "d000002", "b": "d000000", "jaccard": 0.81}"#,
            r#"{"a": "d000000", "b": "d000001", "jaccard": 0.5}"#,
            r#"{"bad": 4, "why": "empty_text", "id": "d000003"}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let t = Truth::load(&path).unwrap();
        assert_eq!(t.dataset, "docs-3");
        assert!(t.holds(0, 2, 0.8) && t.holds(2, 0, 0.8) && !t.holds(0, 1, 0.8) && t.holds(1, 0, 0.5));
        assert_eq!((t.count_at(0.5), t.count_at(0.8), t.count_at(0.9)), (2, 1, 0));
        assert_eq!(t.members(), vec![0, 1, 2]);
        assert_eq!(truth_beside(Path::new("/x/docs-20k.jsonl.gz")), Path::new("/x/docs-20k.truth.jsonl"));
        std::fs::write(&path, "{\"a\": 1}\n").unwrap();
        assert!(Truth::load(&path).is_err());
    }
}
