//! Profiling loop for stored-signature LSH threshold queries: opens an existing database
//! (built by `sketchdb bench lsh --dir`), sketches the queries of a queries file with the
//! collection's sketcher and runs them `ROUNDS` times through the public query API with the
//! plan forced to an LSH probe, printing p50/p99 per round. For `perf record`. With
//! `SKETCHDB_PROBE_ONLY=1` each round also times the candidate probe alone (no planning, no
//! fetch or verification), and the same probe repeated at once (every line it reads then in
//! the cache: its CPU cost). `SKETCHDB_PROBE_CACHE_MB` sets the probe cache's budget (0: every
//! probe reads the index from redb). With `SKETCHDB_MANY=1` each round asks all the queries as
//! one `query_many` batch instead, on the global rayon pool (`RAYON_NUM_THREADS` sizes it).
//!
//! Run: `cargo run --release --example lsh_query_loop -- DB COLLECTION QUERIES THRESHOLD [ROUNDS]`

use std::io::{BufRead, BufReader};
use std::time::Instant;

use sketchdb::plan::*;
use sketchdb::*;

type R<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> R<()> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        return Err("usage: lsh_query_loop DB COLLECTION QUERIES THRESHOLD [ROUNDS]".into());
    }
    let t: f64 = a[4].parse()?;
    let rounds: usize = a.get(5).and_then(|s| s.parse().ok()).unwrap_or(10);
    // SKETCHDB_CACHE_MB sets redb's page cache (default 1 GiB).
    let mut builder = Database::builder();
    if let Some(mb) = std::env::var("SKETCHDB_CACHE_MB").ok().and_then(|v| v.parse::<usize>().ok()) {
        builder = builder.cache_size(mb << 20);
    }
    let db = builder.open(&a[1])?;
    // SKETCHDB_PROBE_CACHE_MB sets the probes' cache budget (0: every probe reads the index
    // from redb, as a first pass does).
    if let Some(mb) = std::env::var("SKETCHDB_PROBE_CACHE_MB").ok().and_then(|v| v.parse::<usize>().ok()) {
        db.set_probe_cache_budget(mb << 20);
    }
    let c = db.collection(&a[2])?;
    let mut queries = Vec::new();
    for line in BufReader::new(std::fs::File::open(&a[3])?).lines() {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        let tokens: Vec<u64> =
            v["tokens"].as_array().map(|x| x.iter().filter_map(|y| y.as_u64()).collect()).unwrap_or_default();
        queries.push(c.sketcher().sketch(&TokenSet::from_unsorted(tokens))?);
    }
    let options = QueryOptions { force: Some(PlanKind::LshProbe), ..QueryOptions::default() };
    if std::env::var_os("SKETCHDB_MANY").is_some() {
        // Each round: every query once through `query_many` (one batch, the current pool).
        let batch: Vec<Query> = queries.iter().map(|q| Query::threshold(q.clone(), t).with_options(options)).collect();
        for round in 0..rounds {
            let start = Instant::now();
            let answers = c.query_many(&batch)?;
            let secs = start.elapsed().as_secs_f64();
            let hits: usize = answers.iter().map(|a| a.as_ref().map_or(0, |r| r.hits.len())).sum();
            println!(
                "round {round}: batch of {} in {:.2} ms ({:.0} queries/s), hits {hits}",
                batch.len(),
                secs * 1e3,
                batch.len() as f64 / secs
            );
        }
        return Ok(());
    }
    for round in 0..rounds {
        let mut lat = Vec::with_capacity(queries.len());
        let mut hits = 0usize;
        for q in &queries {
            let start = Instant::now();
            let r = c.query(&Query::threshold(q.clone(), t).with_options(options))?;
            lat.push(start.elapsed().as_secs_f64() * 1e6);
            hits += r.hits.len();
        }
        lat.sort_by(f64::total_cmp);
        if std::env::var_os("SKETCHDB_PROBE_ONLY").is_some() {
            let snap = sketchdb::testing::hold_snapshot(&db)?;
            let (mut pl, mut again) = (Vec::new(), Vec::new());
            for q in &queries {
                let start = Instant::now();
                let _ = sketchdb::testing::lsh_candidates_in(&snap, &c, q, u32::MAX)?;
                let first = start.elapsed();
                // The same probe at once: every line it reads is in the cache, so this is
                // its CPU cost and the difference its wait on memory.
                let _ = sketchdb::testing::lsh_candidates_in(&snap, &c, q, u32::MAX)?;
                pl.push(first.as_secs_f64() * 1e6);
                again.push((start.elapsed() - first).as_secs_f64() * 1e6);
            }
            pl.sort_by(f64::total_cmp);
            again.sort_by(f64::total_cmp);
            println!(
                "probe only p50 {:.2} us (repeated at once, cache hot: {:.2} us)",
                pl[pl.len() / 2],
                again[again.len() / 2]
            );
        }
        println!(
            "round {round}: p50 {:.2} us, p99 {:.2} us, hits {hits}",
            lat[lat.len() / 2],
            lat[(lat.len() - 1) * 99 / 100]
        );
    }
    Ok(())
}
