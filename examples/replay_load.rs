//! The durable load alone on real signatures, in a fresh process: reads every record of a
//! collection (say sets-1m ingested with `sketchdb ingest`), then inserts them into a new
//! database with an LSH index at t = 0.8, in durable batches, and prints the rate and each
//! batch's seconds. Only the `apply` calls are timed. `bench lsh` times the same load after
//! parsing and sketching in the same process.
//!
//! Then upserts `DELETES` rows (default 10,000) spread evenly over the collection, each taking
//! its neighbour's signature (so its band keys change), and deletes as many others, in durable
//! batches of 1,000, and prints their rates and slowest batches: what replacing and removing a
//! row costs (past an eighth of a run's rows, a batch also rewrites that run without the
//! removed rows). Each phase also prints the process's CPU time per row (all threads, user
//! and system; Linux), which a loaded machine disturbs less than the wall clock.
//!
//! Run: `cargo run --release --example replay_load -- SRC_DB COLLECTION OUT_DB [BATCH] [keys|-] [DELETES]`
//! (`keys`: replace the keys by ascending `k00000000`, ... to see what key order costs).

use std::time::Instant;

use sketchdb::{Batch, CollectionConfig, Database, IndexConfig, Sketch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        return Err("usage: replay_load SRC_DB COLLECTION OUT_DB [BATCH] [keys|-] [DELETES]".into());
    }
    let size: usize = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(100_000).max(1);
    let (params, mut rows) = {
        let src = Database::open_read_only(&a[1])?;
        let c = src.collection(&a[2])?;
        let rows: Vec<(Vec<u8>, Sketch)> = c.scan()?.map(|r| r.map(|r| (r.key, r.sketch))).collect::<Result<_, _>>()?;
        (c.config().params, rows)
    };
    if a.get(5).map(String::as_str) == Some("keys") {
        for (i, r) in rows.iter_mut().enumerate() {
            r.0 = format!("k{i:08}").into_bytes();
        }
    }
    let _ = std::fs::remove_file(&a[3]);
    let db = Database::create(&a[3])?;
    let index = IndexConfig::Lsh { threshold: 0.8, bands: None, rows: None };
    let out = db.create_collection("c", CollectionConfig::new(params).with_index(index))?;
    let (mut total, mut each) = (0.0, Vec::new());
    let cpu = cpu_seconds();
    for chunk in rows.chunks(size) {
        let mut batch = Batch::with_capacity(chunk.len());
        for (k, s) in chunk {
            batch.insert(k.clone(), s.clone());
        }
        let t = Instant::now();
        out.apply(&batch)?;
        let s = t.elapsed().as_secs_f64();
        total += s;
        each.push(format!("{s:.2}"));
    }
    println!(
        "{} rows in batches of {size}: {:.0} rows/s, {:.2} us CPU per row; batches (s): {}",
        rows.len(),
        rows.len() as f64 / total,
        (cpu_seconds() - cpu) * 1e6 / rows.len().max(1) as f64,
        each.join(" ")
    );
    let deletes: usize = a.get(6).and_then(|s| s.parse().ok()).unwrap_or(10_000).min(rows.len() / 2);
    if let Some(step) = rows.len().checked_div(deletes) {
        let timed = |what: &str, fill: &dyn Fn(&mut Batch, usize)| -> Result<(), Box<dyn std::error::Error>> {
            let (t, cpu) = (Instant::now(), cpu_seconds());
            let mut slowest = 0f64;
            for first in (0..deletes).step_by(1000) {
                let mut batch = Batch::with_capacity(1000);
                for i in first..(first + 1000).min(deletes) {
                    fill(&mut batch, i * step);
                }
                let at = Instant::now();
                out.apply(&batch)?;
                slowest = slowest.max(at.elapsed().as_secs_f64());
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "{deletes} {what} in batches of 1000: {:.0} rows/s, {:.1} us CPU per row ({s:.2} s; slowest batch {slowest:.2} s)",
                deletes as f64 / s,
                (cpu_seconds() - cpu) * 1e6 / deletes as f64
            );
            Ok(())
        };
        timed("upserts", &|b, at| {
            b.upsert(&rows[at].0, rows[(at + 1) % rows.len()].1.clone());
        })?;
        // The rows halfway between the upserted ones (step >= 2).
        timed("deletes", &|b, at| {
            b.delete(&rows[at + step / 2].0);
        })?;
    }
    Ok(())
}

/// This process's CPU seconds so far (user and system, all threads), from `/proc/self/stat`;
/// 0 where that cannot be read.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which ends at the last ')'): utime and stime are the
    // 12th and 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
