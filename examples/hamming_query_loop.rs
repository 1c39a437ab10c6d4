//! Profiling loop for warm Hamming-radius queries over SimHash tables: opens the database at
//! DB (building it first when the file does not exist: the fingerprints of FPS as collection
//! `fp`, loaded in durable batches of 1M without the tables, then the tables built in one
//! transaction, as `sketchdb bench hamming-query --bulk --batch 1000000` does) and runs the
//! queries of QUERIES (little-endian u64 fingerprints) `ROUNDS` times through the public query
//! API, printing p50/p99 per round. The first round fills the probe cache.
//!
//! With `SKETCHDB_PROBE_ONLY=1` each round also times the table probe alone (row ids and
//! distances, no planning and no records). With `SKETCHDB_MEM=1` the same queries are also
//! probed in a [`SimhashMemIndex`] built from FPS with the collection's table design (the
//! in-memory reference on the same machine). `SKETCHDB_RADIUS` sets the radius (default 3).
//!
//! Run: `cargo run --release --example hamming_query_loop -- FPS QUERIES DB [ROUNDS]`

use std::path::Path;
use std::time::Instant;

use sketchdb::simhash::SimhashTableDesign;
use sketchdb::testing::{ProbeScratch, SimhashMemIndex};
use sketchdb::*;

type R<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn read_u64s(path: &str) -> R<Vec<u64>> {
    let bytes = std::fs::read(path)?;
    Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
}

fn p(lat: &mut [f64], q: f64) -> f64 {
    lat.sort_by(f64::total_cmp);
    lat.get(((lat.len().max(1) - 1) as f64 * q) as usize).copied().unwrap_or(0.0)
}

fn build(path: &Path, fps: &[u64], radius: u32) -> R<()> {
    let db = Database::create(path)?;
    let params = SketchParams::simhash(64, 0)?;
    let mut coll = db.create_collection("fp", CollectionConfig::new(params))?;
    let width = (fps.len().max(2) - 1).to_string().len();
    for (c, chunk) in fps.chunks(1_000_000).enumerate() {
        let mut batch = Batch::with_capacity(chunk.len());
        for (i, &fp) in chunk.iter().enumerate() {
            let row = c * 1_000_000 + i;
            batch.insert(format!("{row:0width$}"), Sketch::SimHash(SimHash::from_parts(params, u128::from(fp))?));
        }
        coll.apply(&batch)?;
    }
    coll.rebuild_index(IndexConfig::SimhashTables { radius })?;
    Ok(())
}

fn main() -> R<()> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        return Err("usage: hamming_query_loop FPS QUERIES DB [ROUNDS]".into());
    }
    let rounds: usize = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(5);
    let radius: u32 = std::env::var("SKETCHDB_RADIUS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let queries = read_u64s(&a[2])?;
    let path = Path::new(&a[3]);
    if !path.exists() {
        let at = Instant::now();
        build(path, &read_u64s(&a[1])?, radius)?;
        println!("built {} in {:.1} s", path.display(), at.elapsed().as_secs_f64());
    }
    let db = Database::open(path)?;
    let c = db.collection("fp")?;
    let params = SketchParams::simhash(64, 0)?;
    let sketches: Vec<Sketch> = queries
        .iter()
        .map(|&q| SimHash::from_parts(params, u128::from(q)).map(Sketch::SimHash))
        .collect::<std::result::Result<_, _>>()?;
    let mem = if std::env::var_os("SKETCHDB_MEM").is_some() {
        let fps = read_u64s(&a[1])?;
        let design = SimhashTableDesign::design(fps.len() as u64, radius, 64)?;
        let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (i as u64, f)).collect();
        drop(fps);
        Some(SimhashMemIndex::build(design, &items)?)
    } else {
        None
    };
    for round in 0..rounds {
        let mut lat = Vec::with_capacity(queries.len());
        let mut hits = 0usize;
        for s in &sketches {
            let start = Instant::now();
            let r = c.query(&Query::hamming(s.clone(), radius))?;
            lat.push(start.elapsed().as_secs_f64() * 1e6);
            hits += r.hits.len();
        }
        print!("round {round}: query p50 {:.2} us, p99 {:.2} us, hits {hits}", p(&mut lat, 0.5), p(&mut lat, 0.99));
        if std::env::var_os("SKETCHDB_PROBE_ONLY").is_some() {
            let snap = sketchdb::testing::hold_snapshot(&db)?;
            let mut pl = Vec::with_capacity(queries.len());
            for &q in &queries {
                let start = Instant::now();
                let _ = sketchdb::testing::simhash_within_in(&snap, &c, u128::from(q), radius)?;
                pl.push(start.elapsed().as_secs_f64() * 1e6);
            }
            print!("; probe only p50 {:.2} us", p(&mut pl, 0.5));
        }
        if let Some(index) = &mem {
            let (mut scratch, mut out) = (ProbeScratch::default(), Vec::new());
            let mut ml = Vec::with_capacity(queries.len());
            let mut mhits = 0usize;
            for &q in &queries {
                let start = Instant::now();
                index.probe_into(q, &mut scratch, &mut out);
                ml.push(start.elapsed().as_secs_f64() * 1e6);
                mhits += out.iter().filter(|m| m.distance <= radius).count();
            }
            print!("; in memory p50 {:.2} us, hits {mhits}", p(&mut ml, 0.5));
        }
        println!();
    }
    Ok(())
}
