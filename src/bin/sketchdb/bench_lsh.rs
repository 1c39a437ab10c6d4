//! The index workloads of `sketchdb bench`: lsh-build, lsh-query, lsh-query-e2e, persist,
//! sketch-size, lsh-maintain, hamming-query and dedup, in the shared result-line schema.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;
use sketchdb::{
    Batch, Collection, CollectionConfig, Database, IndexConfig, IndexSummary, PlanKind, Query, QueryKind, QueryOptions,
    SimHash, Sketch, SketchParams, Sketcher, TokenSet,
};

use crate::bench::{dataset_name, emit, first_of, for_each_set_chunk};
use crate::input::read_u64_file;
use crate::output::CliError;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn workdir(dir: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>), CliError> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| CliError::io(d, e))?;
            Ok((d.to_path_buf(), None))
        }
        None => {
            let t = tempfile::tempdir().map_err(|e| CliError::Io(format!("temporary directory: {e}")))?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

#[derive(Deserialize)]
struct QueryRecord {
    qid: String,
    tokens: Vec<u64>,
    truth: HashMap<String, Vec<String>>,
}

/// Loads a queries file; a file without queries is an error naming it.
fn load_queries(path: &Path) -> Result<Vec<QueryRecord>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::io(path, e))?;
    let queries = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| CliError::Input(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect::<Result<Vec<QueryRecord>, CliError>>()?;
    first_of(&queries, "queries", path)?;
    Ok(queries)
}

fn params_for(kind: &str) -> Result<SketchParams, CliError> {
    Ok(match kind {
        "minhash" => SketchParams::minhash(128, 32, 1)?,
        "bbit" => SketchParams::bbit(512, 8, 1)?,
        "oph" => SketchParams::oph(128, 32, 1)?,
        other => return Err(CliError::Usage(format!("unknown kind `{other}` (minhash, bbit or oph)"))),
    })
}

struct Measured {
    p50: f64,
    p99: f64,
    qps: f64,
    recall: f64,
    precision: f64,
}

impl Measured {
    /// The `metrics` object of an `lsh-query` line.
    fn json(&self) -> serde_json::Value {
        json!({"p50_us": self.p50, "p99_us": self.p99, "qps_single_thread": self.qps, "recall": self.recall,
               "precision": self.precision})
    }
}

/// The keys a threshold query with the stored (precomputed) signature of `q` returns.
fn stored_query(
    coll: &Collection,
    sketches: &HashMap<&str, &Sketch>,
    q: &QueryRecord,
    t: f64,
    options: QueryOptions,
) -> Result<Vec<String>, CliError> {
    let sketch = sketches.get(q.qid.as_str()).map(|s| (*s).clone()).ok_or_else(|| CliError::Input("query".into()))?;
    threshold_keys(coll, sketch, t, options)
}

/// The keys, as text, of a threshold query with `sketch`.
fn threshold_keys(coll: &Collection, sketch: Sketch, t: f64, options: QueryOptions) -> Result<Vec<String>, CliError> {
    let r = coll.query(&Query { sketch, kind: QueryKind::Threshold(t), options })?;
    Ok(r.hits.into_iter().map(|h| String::from_utf8_lossy(&h.key).into_owned()).collect())
}

/// Runs every query twice (a warm-up pass, then the timed pass) and scores the timed one.
fn measure(
    queries: &[QueryRecord],
    t: f64,
    mut run: impl FnMut(&QueryRecord) -> Result<Vec<String>, CliError>,
) -> Result<Measured, CliError> {
    for q in queries {
        run(q)?;
    }
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    let mut times = Vec::with_capacity(queries.len());
    let key = format!("{t}");
    for q in queries {
        let start = Instant::now();
        let got = run(q)?;
        times.push(start.elapsed().as_secs_f64());
        let truth: HashSet<&String> = q.truth.get(&key).map(|v| v.iter().collect()).unwrap_or_default();
        let got: HashSet<&String> = got.iter().collect();
        tp += got.intersection(&truth).count();
        fp += got.difference(&truth).count();
        fneg += truth.difference(&got).count();
    }
    let total: f64 = times.iter().sum();
    Ok(Measured {
        p50: percentile(&mut times, 0.5) * 1e6,
        p99: percentile(&mut times, 0.99) * 1e6,
        qps: queries.len() as f64 / total.max(1e-12),
        recall: ratio(tp, tp + fneg),
        precision: ratio(tp, tp + fp),
    })
}

/// Recall or precision: `hits / of`, micro-averaged; 1 when there is nothing to find (or
/// nothing was returned), so an empty truth scores the same in every workload.
fn ratio(hits: usize, of: usize) -> f64 {
    if of == 0 { 1.0 } else { hits as f64 / of as f64 }
}

/// Durable batches of the dedup workload's load (and the default of `bench lsh --batch`).
const DEFAULT_BATCH: usize = 10_000;

/// How `bench lsh` and `bench hamming-query` load their data.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Without the index, then the index built in one transaction.
    pub bulk: bool,
    /// Signatures per durable batch (at least 1).
    pub batch: usize,
}

/// Sets the benchmarks parse and sketch at a time ([`sketch_sets`]).
const SKETCH_CHUNK: usize = 10_000;

/// The keys and sketches under `sketcher` of the sets of `path` (the first `limit`), parsed
/// and sketched `chunk` sets at a time: a benchmark that loads a database holds what it inserts,
/// never every parsed token set (sets-1m's are about 3 GB; the heap a whole-file parse
/// leaves behind slows the durable load that follows, see `benches/MEASUREMENTS.md`). A set
/// that cannot be sketched is an input error naming its key. Also returns the seconds spent
/// sketching (the rest of the call is parsing).
fn sketch_sets(
    path: &Path,
    limit: Option<usize>,
    sketcher: &Sketcher,
    chunk: usize,
) -> Result<(Vec<String>, Vec<Sketch>, f64), CliError> {
    let (mut keys, mut sketches, mut sketch_s) = (Vec::new(), Vec::new(), 0.0);
    for_each_set_chunk(path, limit, chunk, |part| {
        let at = Instant::now();
        let (part_keys, token_sets): (Vec<String>, Vec<TokenSet>) = part.into_iter().unzip();
        for (key, s) in part_keys.iter().zip(sketcher.sketch_batch(&token_sets)) {
            sketches.push(s.map_err(|e| CliError::Input(format!("set `{key}`: {e}")))?);
        }
        keys.extend(part_keys);
        sketch_s += at.elapsed().as_secs_f64();
        Ok(())
    })?;
    Ok((keys, sketches, sketch_s))
}

/// Inserts `sketches` under `keys` in durable batches of `size`.
fn load_batches(
    coll: &Collection,
    keys: &[String],
    sketches: impl IntoIterator<Item = Sketch>,
    size: usize,
) -> Result<(), CliError> {
    let size = size.max(1);
    let mut batch = Batch::with_capacity(size);
    for (key, sketch) in keys.iter().zip(sketches) {
        batch.insert(key, sketch);
        if batch.len() == size {
            coll.apply(&batch)?;
            batch = Batch::with_capacity(size);
        }
    }
    if !batch.is_empty() {
        coll.apply(&batch)?;
    }
    Ok(())
}

/// Rows the `lsh-maintain` workload upserts, and then deletes, at most (half the collection
/// when it is smaller).
const MAINTAIN_ROWS: usize = 10_000;
/// Its durable batches.
const MAINTAIN_BATCH: usize = 1_000;

/// The `lsh-maintain` workload over a loaded collection: upserts [`MAINTAIN_ROWS`] rows spread
/// evenly over it (each takes its neighbour's signature, so its band keys change), then
/// deletes as many others, in durable batches of [`MAINTAIN_BATCH`]; returns (upserts per
/// second, deletes per second, rows of each).
fn maintain(coll: &Collection, keys: &[String], sketches: &[Sketch]) -> Result<(f64, f64, usize), CliError> {
    let n = MAINTAIN_ROWS.min(keys.len() / 2);
    let Some(step) = keys.len().checked_div(n) else { return Ok((0.0, 0.0, 0)) };
    let timed = |fill: &dyn Fn(&mut Batch, usize)| -> Result<f64, CliError> {
        let start = Instant::now();
        for first in (0..n).step_by(MAINTAIN_BATCH) {
            let mut batch = Batch::with_capacity(MAINTAIN_BATCH);
            for i in first..(first + MAINTAIN_BATCH).min(n) {
                fill(&mut batch, i * step);
            }
            coll.apply(&batch)?;
        }
        Ok(n as f64 / start.elapsed().as_secs_f64())
    };
    let upserts = timed(&|b, at| {
        b.upsert(&keys[at], sketches[(at + 1) % sketches.len()].clone());
    })?;
    // The rows halfway between the upserted ones (step >= 2).
    let deletes = timed(&|b, at| {
        b.delete(&keys[at + step / 2]);
    })?;
    Ok((upserts, deletes, n))
}

/// The collection of a load: with `index` maintained batch by batch, or without it for a
/// bulk load (`bulk`; then built by [`bulk_index`]).
fn load_config(params: SketchParams, index: IndexConfig, bulk: bool) -> CollectionConfig {
    let config = CollectionConfig::new(params);
    if bulk { config } else { config.with_index(index) }
}

/// After a bulk load (`bulk`), builds `index` in one transaction and returns its seconds;
/// 0 otherwise (the index was maintained while loading).
fn bulk_index(bulk: bool, coll: &mut Collection, index: IndexConfig) -> Result<f64, CliError> {
    if !bulk {
        return Ok(0.0);
    }
    let at = Instant::now();
    coll.rebuild_index(index)?;
    Ok(at.elapsed().as_secs_f64())
}

// One parameter per command-line option of `bench lsh`.
#[allow(clippy::too_many_arguments)]
pub fn lsh(
    sets_path: &Path,
    queries_path: &Path,
    thresholds: &[f64],
    kind: &str,
    limit: Option<usize>,
    dir: Option<&Path>,
    force: Option<PlanKind>,
    load: Load,
    run: &str,
) -> Result<(), CliError> {
    let Load { bulk, batch } = load;
    let params = params_for(kind)?;
    let sketcher = Sketcher::new(params)?;
    // Sketching is not part of the build measurement: signatures are computed once, before
    // any load (the parameters do not depend on the threshold).
    let (keys, sketches, _) = sketch_sets(sets_path, limit, &sketcher, SKETCH_CHUNK)?;
    let first = first_of(&sketches, "sets", sets_path)?.clone();
    let queries = load_queries(queries_path)?;
    let dataset = dataset_name(sets_path);
    let (dir, _keep) = workdir(dir)?;
    for &t in thresholds {
        let path = dir.join(format!("lsh-{kind}-{t}.sketchdb"));
        let _ = std::fs::remove_file(&path);
        let db = Database::create(&path)?;
        let index = IndexConfig::Lsh { threshold: t, bands: None, rows: None };
        let mut coll = db.create_collection("sets", load_config(params, index, bulk))?;
        let start = Instant::now();
        load_batches(&coll, &keys, sketches.iter().cloned(), batch)?;
        let index_s = bulk_index(bulk, &mut coll, index)?;
        let build_s = start.elapsed().as_secs_f64();
        let n = keys.len() as f64;
        let probe = Query::threshold(first.clone(), t);
        let choice = coll.plan(&Query { options: QueryOptions { force, ..QueryOptions::default() }, ..probe })?;
        let config = json!({"num_perm": params.size(), "kind": kind, "bits": params.bits(), "threshold": t, "batch": batch,
                            "index": format!("{:?}", coll.config().index), "storage": "file", "durability": "immediate"});
        emit(
            run,
            "lsh-build",
            &dataset,
            config.clone(),
            json!({"insert_per_s": n / build_s, "build_s": build_s, "index_build_s": index_s}),
            &if bulk {
                format!(
                    "batches of {batch} without the index, durable commits, then the index built in one transaction"
                )
            } else {
                format!("batches of {batch}, durable commits")
            },
        );
        let opts = QueryOptions { force, ..QueryOptions::default() };
        let stored: Vec<Sketch> = queries
            .iter()
            .map(|q| coll.sketcher().sketch(&TokenSet::from_unsorted(q.tokens.clone())))
            .collect::<Result<_, _>>()?;
        let by_qid: HashMap<&str, &Sketch> = queries.iter().map(|q| q.qid.as_str()).zip(stored.iter()).collect();
        let m = measure(&queries, t, |q| stored_query(&coll, &by_qid, q, t, opts))?;
        let notes = format!("{} {}", if force.is_some() { "forced" } else { "planner chose" }, choice.plan);
        let loaded = format!("{notes}; as loaded (index of {} run(s))", index_runs(&coll)?);
        emit(run, "lsh-query", &dataset, config.clone(), m.json(), &loaded);
        let m = measure(&queries, t, |q| {
            let sketch = coll.sketcher().sketch(&TokenSet::from_unsorted(q.tokens.clone()))?;
            threshold_keys(&coll, sketch, t, opts)
        })?;
        emit(run, "lsh-query-e2e", &dataset, config.clone(), m.json(), &notes);
        drop(coll);
        drop(db);
        let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let start = Instant::now();
        let db = Database::open(&path)?;
        let coll = db.collection("sets")?;
        let open_s = start.elapsed().as_secs_f64();
        let first = Instant::now();
        coll.query(&Query::threshold(first_of(&stored, "queries", queries_path)?.clone(), t))?;
        let first_query_s = first.elapsed().as_secs_f64();
        emit(
            run,
            "persist",
            &dataset,
            config.clone(),
            json!({"open_s": open_s, "first_query_s": first_query_s, "file_bytes": file_bytes}),
            "close, reopen, first query",
        );
        db.compact()?;
        let compacted = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        emit(
            run,
            "sketch-size",
            &dataset,
            config.clone(),
            json!({"bytes_per_record": compacted as f64 / n, "file_bytes": compacted, "file_bytes_before_compaction": file_bytes}),
            "whole file (records, keys, index) after compaction, divided by records",
        );
        // The same stored-signature queries over the compacted index (its runs merged into
        // one): what a loaded-then-compacted collection answers at.
        let runs = index_runs(&coll)?;
        let m = measure(&queries, t, |q| stored_query(&coll, &by_qid, q, t, opts))?;
        let mut compacted = config.clone();
        compacted["compacted"] = json!(true);
        emit(
            run,
            "lsh-query",
            &dataset,
            compacted,
            m.json(),
            &format!("{notes}; after compaction (index of {runs} run(s))"),
        );
        let (upsert_per_s, delete_per_s, rows) = maintain(&coll, &keys, &sketches)?;
        let mut config = config;
        config["batch"] = json!(MAINTAIN_BATCH);
        config["rows"] = json!(rows);
        emit(
            run,
            "lsh-maintain",
            &dataset,
            config,
            json!({"upsert_per_s": upsert_per_s, "delete_per_s": delete_per_s}),
            &format!(
                "{rows} upserts, then {rows} deletes, spread evenly over the compacted collection, durable batches of {MAINTAIN_BATCH}"
            ),
        );
    }
    Ok(())
}

/// The runs of the collection's LSH index or SimHash tables, as text ("no" without one).
fn index_runs(coll: &Collection) -> Result<String, CliError> {
    Ok(match coll.stats()?.index {
        Some(IndexSummary::Lsh { runs, .. } | IndexSummary::SimhashTables { runs, .. }) => runs.to_string(),
        _ => "no".into(),
    })
}

#[derive(Deserialize)]
struct FpTruth {
    q: usize,
    matches: Vec<(u64, u32)>,
}

pub fn hamming(
    fps: &Path,
    queries: &Path,
    truth: &Path,
    radius: u32,
    dir: Option<&Path>,
    load: Load,
    run: &str,
) -> Result<(), CliError> {
    let Load { bulk, batch: size } = load;
    let size = size.max(1);
    let stored = read_u64_file(fps)?;
    first_of(&stored, "fingerprints", fps)?;
    let qs = read_u64_file(queries)?;
    let first_q = *first_of(&qs, "query fingerprints", queries)?;
    let text = std::fs::read_to_string(truth).map_err(|e| CliError::io(truth, e))?;
    let mut want: Vec<HashSet<u64>> = vec![HashSet::new(); qs.len()];
    for (i, l) in text.lines().enumerate() {
        let t: FpTruth =
            serde_json::from_str(l).map_err(|e| CliError::Input(format!("{}:{}: {e}", truth.display(), i + 1)))?;
        if let Some(w) = want.get_mut(t.q) {
            w.extend(t.matches.iter().filter(|m| m.1 <= radius).map(|m| m.0));
        }
    }
    let dataset = dataset_name(fps);
    let (dir, _keep) = workdir(dir)?;
    let path = dir.join("hamming.sketchdb");
    let _ = std::fs::remove_file(&path);
    let db = Database::create(&path)?;
    let params = SketchParams::simhash(64, 0)?;
    let index = IndexConfig::SimhashTables { radius };
    let mut coll = db.create_collection("fp", load_config(params, index, bulk))?;
    // Keys are the row indexes in decimal, zero-padded to one width so that key order is
    // row order: the keys are appended, not inserted at random places.
    let width = (stored.len() - 1).to_string().len();
    let start = Instant::now();
    for (c, chunk) in stored.chunks(size).enumerate() {
        let mut batch = Batch::with_capacity(chunk.len());
        for (i, &fp) in chunk.iter().enumerate() {
            let row = c * size + i;
            batch.insert(format!("{row:0width$}"), Sketch::SimHash(SimHash::from_parts(params, u128::from(fp))?));
        }
        coll.apply(&batch)?;
    }
    let index_s = bulk_index(bulk, &mut coll, index)?;
    let build_s = start.elapsed().as_secs_f64();
    let probe = |q: u64| -> Result<Vec<u64>, CliError> {
        let sketch = Sketch::SimHash(SimHash::from_parts(params, u128::from(q))?);
        let r = coll.query(&Query::hamming(sketch, radius))?;
        Ok(r.hits.iter().filter_map(|h| h.key_str().and_then(|k| k.parse().ok())).collect())
    };
    for &q in &qs {
        probe(q)?;
    }
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    let mut times = Vec::with_capacity(qs.len());
    for (i, &q) in qs.iter().enumerate() {
        let t0 = Instant::now();
        let got = probe(q)?;
        times.push(t0.elapsed().as_secs_f64());
        let got: HashSet<u64> = got.into_iter().collect();
        tp += got.intersection(&want[i]).count();
        fp += got.difference(&want[i]).count();
        fneg += want[i].difference(&got).count();
    }
    let total: f64 = times.iter().sum();
    let plan =
        coll.plan(&Query::hamming(Sketch::SimHash(SimHash::from_parts(params, u128::from(first_q))?), radius))?;
    emit(
        run,
        "hamming-query",
        &dataset,
        json!({"bits": 64, "radius": radius, "index": format!("{:?}", coll.config().index), "storage": "file",
               "batch": size, "durability": "immediate"}),
        json!({"p50_us": percentile(&mut times.clone(), 0.5) * 1e6, "p99_us": percentile(&mut times, 0.99) * 1e6,
               "qps_single_thread": qs.len() as f64 / total, "recall": ratio(tp, tp + fneg),
               "precision": ratio(tp, tp + fp),
               "build_s": build_s, "index_build_s": index_s, "insert_per_s": stored.len() as f64 / build_s}),
        &format!(
            "planner chose {}; {}; tables in {} run(s)",
            plan.plan,
            if bulk {
                format!(
                    "batches of {size} without the tables, durable commits, then the tables built in one transaction"
                )
            } else {
                format!("batches of {size}, durable commits")
            },
            index_runs(&coll)?
        ),
    );
    Ok(())
}

/// The `dedup` workload, end to end: parse the sets file, sketch, load in durable batches of
/// 10k, then deduplicate; each phase timed.
pub fn dedup(
    sets_path: &Path,
    threshold: f64,
    limit: Option<usize>,
    kind: &str,
    index: bool,
    run: &str,
) -> Result<(), CliError> {
    let params = params_for(kind)?;
    let (dir, _keep) = workdir(None)?;
    let db = Database::create(dir.join("dedup.sketchdb"))?;
    let mut config = CollectionConfig::new(params);
    if index {
        config = config.with_index(IndexConfig::Lsh { threshold, bands: None, rows: None });
    }
    let coll = db.create_collection("sets", config)?;
    // Parsed and sketched a chunk at a time; the two phases' seconds are told apart.
    let start = Instant::now();
    let (keys, sketches, sketch_s) = sketch_sets(sets_path, limit, coll.sketcher(), SKETCH_CHUNK)?;
    let parse_s = start.elapsed().as_secs_f64() - sketch_s;
    let n = keys.len();
    let start = Instant::now();
    load_batches(&coll, &keys, sketches, DEFAULT_BATCH)?;
    let load_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let d = coll.dedup(QueryKind::Threshold(threshold), QueryOptions::default())?;
    let wall_s = start.elapsed().as_secs_f64();
    emit(
        run,
        "dedup",
        &dataset_name(sets_path),
        json!({"num_perm": params.slots(), "bits": params.bits(), "kind": kind, "threshold": threshold,
               "sets": n, "lsh_index": index}),
        json!({"wall_s": wall_s, "load_s": load_s, "insert_per_s": n as f64 / load_s,
               "parse_s": parse_s, "sketch_s": sketch_s, "end_to_end_s": parse_s + sketch_s + load_s + wall_s,
               "pairs": d.pairs, "clusters": d.clusters.len()}),
        &format!("every pair verified; plan {} ({})", d.plan.map(|p| p.to_string()).unwrap_or_default(), d.reason),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 25 sets `s0`..`s24`, set i holding tokens i..i + 5 (set 13 is empty when `empty13`).
    fn sets_file(dir: &Path, empty13: bool) -> PathBuf {
        let lines: Vec<String> = (0..25u64)
            .map(|i| {
                let tokens: Vec<u64> = if empty13 && i == 13 { Vec::new() } else { (i..i + 5).collect() };
                json!({"key": format!("s{i}"), "tokens": tokens}).to_string()
            })
            .collect();
        let path = dir.join("sets.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    #[test]
    fn chunked_sketches_stay_with_their_keys_across_chunk_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = sets_file(dir.path(), false);
        let sketcher = Sketcher::new(params_for("bbit").unwrap()).unwrap();
        for (chunk, limit, n) in
            [(7, None, 25), (25, None, 25), (1, Some(3), 3), (10, Some(12), 12), (100, Some(40), 25)]
        {
            let (keys, sketches, _) = sketch_sets(&path, limit, &sketcher, chunk).unwrap();
            let want: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
            assert_eq!(keys, want, "chunk {chunk}, limit {limit:?}");
            assert_eq!(sketches.len(), n);
            for (i, s) in sketches.iter().enumerate() {
                let alone = sketcher.sketch(&TokenSet::from_unsorted((i as u64..i as u64 + 5).collect())).unwrap();
                assert_eq!(*s, alone, "set {i}, chunk {chunk}");
            }
        }
    }

    #[test]
    fn a_set_that_cannot_be_sketched_is_named_in_any_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let path = sets_file(dir.path(), true);
        // Every kind refuses an empty set (`SketchError::EmptySet`).
        let sketcher = Sketcher::new(params_for("bbit").unwrap()).unwrap();
        for chunk in [1, 7, 13, 14, 100] {
            let err = sketch_sets(&path, None, &sketcher, chunk).unwrap_err().to_string();
            assert!(err.contains("set `s13`"), "chunk {chunk}: {err}");
        }
    }
}
