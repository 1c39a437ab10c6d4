//! The LSH workloads of `sketchdb bench lsh`: lsh-build, lsh-query, lsh-query-e2e, persist,
//! sketch-size, lsh-query-stages, lsh-query-batch and lsh-maintain, one collection per
//! threshold.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;
use sketchdb::{
    Batch, Collection, Database, IndexConfig, Query, QueryKind, QueryOptions, Sketch, Sketcher, TokenSet,
    plan::PlanKind,
};

use super::data::{
    Load, SKETCH_CHUNK, bulk_index, first_of, index_runs, load_batches, load_config, params_for, sketch_sets, workdir,
};
use super::lsh_batch::BatchBench;
use super::report::{dataset_name, emit, percentile, ratio};
use crate::error::CliError;

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

/// Where a warm stored-signature query's time goes: each query run once more (after the
/// timed pass), split by the query's own EXPLAIN ANALYZE time into execution (band lookups,
/// the candidates' records, verification, ordering the hits) and the rest (the read
/// transaction, the collection state and index definition, planning, the result), with the
/// candidates and rows touched per query. Medians over the queries.
fn stages(coll: &Collection, stored: &[Sketch], t: f64, options: QueryOptions) -> Result<serde_json::Value, CliError> {
    let (mut total, mut exec, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    let (mut candidates, mut touched) = (0u64, 0u64);
    for sketch in stored {
        let query = Query { sketch: sketch.clone(), kind: QueryKind::Threshold(t), options };
        let start = Instant::now();
        let r = coll.query(&query)?;
        let all = start.elapsed().as_secs_f64();
        let e = r.analyze.elapsed.as_secs_f64();
        total.push(all);
        exec.push(e);
        rest.push((all - e).max(0.0));
        candidates += r.analyze.candidates;
        touched += r.analyze.rows_touched;
    }
    let n = stored.len().max(1) as f64;
    Ok(json!({"p50_us": percentile(&mut total, 0.5) * 1e6, "execute_p50_us": percentile(&mut exec, 0.5) * 1e6,
              "txn_stats_plan_p50_us": percentile(&mut rest, 0.5) * 1e6, "candidates_per_query": candidates as f64 / n,
              "rows_touched_per_query": touched as f64 / n}))
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
        // The signatures the load moves into its batches, copied before the clock starts: an
        // application inserts signatures it owns, so the copy is not the database's cost.
        let owned = sketches.clone();
        let start = Instant::now();
        load_batches(&coll, &keys, owned, batch)?;
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
        )?;
        let opts = QueryOptions { force, ..QueryOptions::default() };
        let stored: Vec<Sketch> = queries
            .iter()
            .map(|q| coll.sketcher().sketch(&TokenSet::from_unsorted(q.tokens.clone())))
            .collect::<Result<_, _>>()?;
        let by_qid: HashMap<&str, &Sketch> = queries.iter().map(|q| q.qid.as_str()).zip(stored.iter()).collect();
        let m = measure(&queries, t, |q| stored_query(&coll, &by_qid, q, t, opts))?;
        let notes = format!("{} {}", if force.is_some() { "forced" } else { "planner chose" }, choice.plan);
        let loaded = format!("{notes}; as loaded (index of {} run(s))", index_runs(&coll)?);
        emit(run, "lsh-query", &dataset, config.clone(), m.json(), &loaded)?;
        let m = measure(&queries, t, |q| {
            let sketch = coll.sketcher().sketch(&TokenSet::from_unsorted(q.tokens.clone()))?;
            threshold_keys(&coll, sketch, t, opts)
        })?;
        emit(run, "lsh-query-e2e", &dataset, config.clone(), m.json(), &notes)?;
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
        )?;
        db.compact()?;
        let compacted = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        emit(
            run,
            "sketch-size",
            &dataset,
            config.clone(),
            json!({"bytes_per_record": compacted as f64 / n, "file_bytes": compacted, "file_bytes_before_compaction": file_bytes}),
            "whole file (records, keys, index) after compaction, divided by records",
        )?;
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
            compacted.clone(),
            m.json(),
            &format!("{notes}; after compaction (index of {runs} run(s))"),
        )?;
        emit(
            run,
            "lsh-query-stages",
            &dataset,
            compacted,
            stages(&coll, &stored, t, opts)?,
            &format!("{notes}; after compaction; each stored-signature query once more, warm"),
        )?;
        let key = format!("{t}");
        let truth = queries.iter().map(|q| q.truth.get(&key).map(|v| v.iter().cloned().collect()).unwrap_or_default());
        let bench = BatchBench { coll: &coll, stored: &stored, truth: truth.collect(), t, options: opts };
        let mut batch_config = config.clone();
        batch_config["compacted"] = json!(true);
        bench.run(run, &dataset, &batch_config, &format!("{notes}; after compaction, warm"))?;
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
        )?;
    }
    Ok(())
}
