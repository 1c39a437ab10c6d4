//! The `hamming-query` workload: radius queries over u64 fingerprints with SimHash tables,
//! scored against a truth file.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;
use sketchdb::{Batch, Database, IndexConfig, Query, SimHash, Sketch, SketchParams};

use super::data::{Load, bulk_index, first_of, index_runs, load_config, workdir};
use super::report::{dataset_name, emit, percentile, ratio};
use crate::error::CliError;
use crate::input::read_u64_file;

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
    )?;
    Ok(())
}
