//! Steady-state durable insert into an existing collection (with whatever index it has):
//! appends `BATCHES` batches of `BATCH` random signatures of the collection's parameters
//! and prints the rate of each batch. The per-batch cost at a given collection size is what
//! `bench lsh` averages over the whole load.
//!
//! Run: `cargo run --release --example insert_steady -- DB COLLECTION [BATCHES] [BATCH]`
//! (`SKETCHDB_CACHE_MB` sets redb's page cache).

use std::time::Instant;

use sketchdb::{BBitMinHash, Batch, Database, MinHash, Sketch, SketchKind};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        return Err("usage: insert_steady DB COLLECTION [BATCHES] [BATCH]".into());
    }
    let batches: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let size: usize = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    // SKETCHDB_CACHE_MB sets redb's page cache (default 1 GiB).
    let mut builder = Database::builder();
    if let Some(mb) = std::env::var("SKETCHDB_CACHE_MB").ok().and_then(|v| v.parse::<usize>().ok()) {
        builder = builder.cache_size(mb << 20);
    }
    let db = builder.open(&a[1])?;
    let c = db.collection(&a[2])?;
    let params = c.config().params;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let start = c.stats()?.live;
    let mut total = 0.0;
    for b in 0..batches {
        let mut batch = Batch::with_capacity(size);
        for i in 0..size {
            let sketch = match params.kind() {
                SketchKind::BBitMinHash => {
                    let words = params.size() as usize * usize::from(params.bits()) / 64;
                    Sketch::BBit(BBitMinHash::from_parts(params, (0..words).map(|_| next()).collect(), 100)?)
                }
                SketchKind::MinHash => {
                    let mask = if params.bits() == 64 { u64::MAX } else { (1u64 << params.bits()) - 1 };
                    Sketch::MinHash(MinHash::from_parts(
                        params,
                        (0..params.size() as usize).map(|_| next() & mask).collect(),
                        100,
                    )?)
                }
                k => return Err(format!("insert_steady does not generate {k:?} sketches").into()),
            };
            batch.insert(format!("steady-{start}-{b:04}-{i:06}"), sketch);
        }
        let t = Instant::now();
        c.apply(&batch)?;
        let s = t.elapsed().as_secs_f64();
        total += s;
        println!("batch {b}: {:.0} rows/s", size as f64 / s);
    }
    println!("{} rows into a collection of {start}: {:.0} rows/s", batches * size, (batches * size) as f64 / total);
    Ok(())
}
