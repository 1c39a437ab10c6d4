//! The documents workloads over `docs-<n>.jsonl` and its truth file (../shared/bench, read as
//! they are): `dedup-docs`, raw documents to near-duplicate clusters with pair recall and
//! precision per threshold, and `search-docs`, threshold queries from the family documents
//! with recall and precision. Both run over a list of sketch configurations, with and without
//! an LSH index, so that defaults can be chosen by measurement.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use sketchdb::io::{Content as Read, ReadOptions, read};
use sketchdb::recipes::Content;
use sketchdb::{
    Batch, Clustering, Collection, CollectionConfig, Database, IndexConfig, QueryKind, QueryOptions, SketchParams,
};

use super::data::{DEFAULT_BATCH, workdir};
use super::quality;
use super::report::{emit, percentile, ratio};
use super::truth::{Truth, doc_number};
use crate::error::CliError;

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
    let usage =
        || CliError::Usage(format!("unknown configuration `{name}` (e.g. default, minhash128, bbit512x8, oph1024x4)"));
    if name == "default" {
        return Ok(DocsConfig { name: name.into(), params: sketchdb::recipes::text_config()?.params });
    }
    let (kind, rest) =
        ["minhash", "bbit", "oph"].iter().find_map(|k| name.strip_prefix(k).map(|r| (*k, r))).ok_or_else(usage)?;
    let (slots, bits) = match rest.split_once('x') {
        Some((s, b)) => (s.parse::<u32>().map_err(|_| usage())?, Some(b.parse::<u8>().map_err(|_| usage())?)),
        None => (rest.parse::<u32>().map_err(|_| usage())?, None),
    };
    let seed = sketchdb::recipes::DEFAULT_SEED;
    // Each kind in its default hash family, as `create --kind` makes it.
    let kind = match kind {
        "minhash" => sketchdb::SketchKind::MinHash,
        "bbit" => sketchdb::SketchKind::BBitMinHash,
        _ => sketchdb::SketchKind::Oph,
    };
    let params = sketchdb::recipes::default_params(kind, slots, bits, seed)?;
    Ok(DocsConfig { name: name.into(), params })
}

/// How every measured collection is set up besides its sketch parameters.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// Keep exact shingle sets (results re-ranked by exact Jaccard).
    pub exact: bool,
    /// The text recipe (default: the collection default's).
    pub recipe: Option<sketchdb::Recipe>,
}

impl Setup {
    /// The collection configuration of `params` under this setup.
    pub fn config(&self, params: SketchParams) -> CollectionConfig {
        let config = CollectionConfig::new(params).with_exact_shingles(self.exact);
        match &self.recipe {
            Some(r) => config.with_recipe(*r),
            None => config,
        }
    }

    fn name(&self) -> String {
        self.recipe.as_ref().map_or_else(|| "default".to_string(), |r| r.name().to_string())
    }
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
    recipe: String,
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
               "exact_shingles": self.loaded.coll.config().exact_shingles, "recipe": self.recipe})
    }

    fn sizes(&self) -> Result<Value, CliError> {
        let stats = self.loaded.coll.stats()?;
        Ok(json!({"bytes_per_record": stats.record_width,
                  "file_bytes_per_record": self.loaded.file_bytes_per_doc(),
                  "index": crate::cmd::admin::index_json(stats.index)}))
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
    setup: &Setup,
    limit: Option<usize>,
    run: &str,
) -> Result<(), CliError> {
    let mut truth = Truth::load(truth)?;
    let bytes = jsonl_bytes(docs);
    let mut family = quality::families(&truth);
    for config in configs {
        let mut loaded = ingest(docs, limit, setup.config(config.params))?;
        eprintln!(
            "{}: {} documents in {:.1} s ({} skipped)",
            config.name, loaded.docs, loaded.ingest_s, loaded.skipped
        );
        if limit.is_some() {
            truth.restrict(loaded.lines);
            family = quality::families(&truth);
        }
        for &with_index in indexes {
            for (&t, &clustering) in thresholds.iter().flat_map(|t| clusterings.iter().map(move |c| (t, c))) {
                let at = Instant::now();
                let index = if with_index { IndexConfig::lsh(t) } else { IndexConfig::None };
                if loaded.coll.config().index != index {
                    loaded.coll.rebuild_index(index)?;
                }
                let index_s = at.elapsed().as_secs_f64();
                let common = Common { recipe: setup.name(), docs, truth: &truth, config, loaded: &loaded };
                let at = Instant::now();
                let d = loaded.coll.dedup_clustered(QueryKind::Threshold(t), QueryOptions::default(), clustering)?;
                let dedup_s = at.elapsed().as_secs_f64();
                let q = quality::measure(d.clusters.iter().map(|c| c.keys.as_slice()), &truth, &family, t);
                let (reported, right) = (q.reported, q.right);
                let clusters = d.clusters.iter().map(|c| (c.rows.as_slice(), c.keys.as_slice()));
                let (verified, verified_right) = quality::verified_right(&d.verified, clusters, &truth, t);
                let wall_s = loaded.ingest_s + index_s + dedup_s;
                let mut metrics = json!({
                    "wall_s": wall_s, "docs_per_s": loaded.lines as f64 / wall_s,
                    "mb_per_s": bytes as f64 / 1e6 / wall_s, "pairs": reported, "clusters": d.clusters.len(),
                    "pair_recall": ratio(right as usize, common.truth.count_at(t)),
                    "pair_precision": ratio(right as usize, reported as usize),
                    "verified_recall": ratio(verified_right as usize, common.truth.count_at(t)),
                    "verified_precision": ratio(verified_right as usize, verified as usize),
                    "purity": q.purity, "pure_clusters": q.pure_clusters, "verified_pairs": d.pairs, "candidates": d.candidates, "ingest_s": loaded.ingest_s, "index_s": index_s, "dedup_s": dedup_s,
                    "skipped": loaded.skipped,
                });
                merge(&mut metrics, common.sizes()?);
                let notes = format!("{} scores; plan {}", d.scoring, d.plan.map(|p| p.to_string()).unwrap_or_default());
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
    setup: &Setup,
    limit: Option<usize>,
    run: &str,
) -> Result<(), CliError> {
    let mut truth = Truth::load(truth)?;
    for config in configs {
        let mut loaded = ingest(docs, limit, setup.config(config.params))?;
        eprintln!(
            "{}: {} documents in {:.1} s ({} skipped)",
            config.name, loaded.docs, loaded.ingest_s, loaded.skipped
        );
        if limit.is_some() {
            truth.restrict(loaded.lines);
        }
        let probes: Vec<u32> = truth.members().into_iter().take(queries).collect();
        for &t in thresholds {
            loaded.coll.rebuild_index(IndexConfig::lsh(t))?;
            let partners = truth.partners_at(t);
            for exact in [false, true] {
                let common = Common { recipe: setup.name(), docs, truth: &truth, config, loaded: &loaded };
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
                let notes = format!("plan {plan}");
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
        let lanes32 = sketchdb::HashFamily::MixMultiplyShift32;
        let seed = sketchdb::recipes::DEFAULT_SEED;
        assert_eq!(c.params, SketchParams::bbit(1024, 4, seed).unwrap().with_family(lanes32).unwrap());
        let c = parse_config("minhash128").unwrap();
        assert_eq!(c.params, SketchParams::minhash(128, 32, seed).unwrap().with_family(lanes32).unwrap());
        let c = parse_config("oph512x8").unwrap();
        assert_eq!(c.params, SketchParams::oph(512, 8, sketchdb::recipes::DEFAULT_SEED).unwrap());
        for bad in ["", "bbit", "bbitx4", "simhash64", "oph512x"] {
            assert!(parse_config(bad).is_err(), "{bad}");
        }
        assert_eq!(ALL_CONFIGS.split(',').filter(|c| parse_config(c).is_ok()).count(), 5);
    }
}
