//! The `dedup` workload: parse, sketch, load and self-join a sets file, each phase timed.

use std::path::Path;
use std::time::Instant;

use serde_json::json;
use sketchdb::{CollectionConfig, Database, IndexConfig, QueryKind, QueryOptions};

use super::data::{DEFAULT_BATCH, SKETCH_CHUNK, load_batches, params_for, sketch_sets, workdir};
use super::report::{dataset_name, emit};
use crate::error::CliError;

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
    // EXPLAIN's estimate of the self-join, beside its measured time (the plan must be the
    // one that runs).
    let explained = coll.explain_dedup(QueryKind::Threshold(threshold), QueryOptions::default())?;
    let chosen = explained.as_ref().map(|e| e.choice.plan);
    let estimated_s = explained.as_ref().and_then(|e| {
        e.choice.alternatives.iter().find(|a| a.plan == e.choice.plan).and_then(|a| a.cost_ns).map(|ns| ns / 1e9)
    });
    let (start, cpu_start) = (Instant::now(), cpu_seconds());
    let d = coll.dedup(QueryKind::Threshold(threshold), QueryOptions::default())?;
    let wall_s = start.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds().zip(cpu_start).map(|(end, begin)| end - begin);
    if chosen != d.plan {
        return Err(CliError::Runtime(format!("explain chose {chosen:?}, dedup ran {:?}", d.plan)));
    }
    emit(
        run,
        "dedup",
        &dataset_name(sets_path),
        json!({"num_perm": params.slots(), "bits": params.bits(), "kind": kind, "threshold": threshold,
               "sets": n, "lsh_index": index}),
        json!({"wall_s": wall_s, "load_s": load_s, "insert_per_s": n as f64 / load_s,
               "parse_s": parse_s, "sketch_s": sketch_s, "end_to_end_s": parse_s + sketch_s + load_s + wall_s,
               "pairs": d.pairs, "clusters": d.clusters.len(),
               "estimated_s": estimated_s, "estimate_ratio": estimated_s.map(|e| e / wall_s),
               "cpu_s": cpu_s, "estimate_ratio_cpu": estimated_s.zip(cpu_s).map(|(e, c)| e / c)}),
        &format!("every pair verified; plan {} ({})", d.plan.map(|p| p.to_string()).unwrap_or_default(), d.reason),
    )?;
    Ok(())
}

/// CPU time of this process's threads so far (Linux: the sum of `/proc/self/task/*/schedstat`,
/// nanoseconds on the CPU), so that an estimate can be compared with the work done on a
/// machine whose other load stretches the wall-clock time; `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e9)
}
