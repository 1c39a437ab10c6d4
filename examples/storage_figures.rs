//! Measures the storage layer's four headline figures at full scale (1M records, MinHash
//! k = 128, 32-bit):
//!
//! 1. durable batched ingest of precomputed signatures (records/s),
//! 2. opening the 1M-record database (ms),
//! 3. file size after deleting 10% and compacting, against signature + key bytes,
//! 4. scanning the collection's signature columns from a warm cache (GB/s).
//!
//! Run: `cargo run --release --example storage_figures [-- <records> <batch> <dir>]`

use std::time::Instant;

use sketchdb::{Batch, CollectionConfig, Database, MinHash, Sketch, SketchParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let batch_size: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let dir = match args.get(3) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir(),
    };
    let path = dir.join(format!("sketchdb-figures-{}.sketchdb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let params = SketchParams::minhash(128, 32, 42)?;

    // Precompute signatures: random 32-bit minima (what is stored does not depend on how
    // they were computed).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let t = Instant::now();
    let sketches: Vec<Sketch> = (0..n)
        .map(|i| {
            Sketch::MinHash(
                MinHash::from_parts(params, (0..128).map(|_| next() >> 32).collect(), 10 + i % 1000).unwrap(),
            )
        })
        .collect();
    let keys: Vec<String> = (0..n).map(|i| format!("doc-{i:010}")).collect();
    eprintln!("generated {n} signatures in {:.2?}", t.elapsed());

    let db = Database::create(&path)?;
    let c = db.create_collection("docs", CollectionConfig::new(params))?;
    let mut batches = Vec::new();
    for chunk in (0..n as usize).collect::<Vec<_>>().chunks(batch_size as usize) {
        let mut b = Batch::with_capacity(chunk.len());
        for &i in chunk {
            b.insert(&keys[i], sketches[i].clone());
        }
        batches.push(b);
    }
    let t = Instant::now();
    let mut last = Instant::now();
    for (j, b) in batches.iter().enumerate() {
        c.apply(b)?;
        if std::env::var_os("FIGURES_VERBOSE").is_some() && (j + 1) % 10 == 0 {
            let per = last.elapsed().as_secs_f64() / 10.0;
            eprintln!("batches {}..{}: {:.0} records/s", j - 9, j + 1, batch_size as f64 / per);
            last = Instant::now();
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "ingest: {n} records in {secs:.2} s = {:.0} records/s (durable, batches of {batch_size})",
        n as f64 / secs
    );
    drop(batches);
    if std::env::var_os("FIGURES_INGEST_ONLY").is_some() {
        drop(c);
        drop(db);
        let _ = std::fs::remove_file(&path);
        return Ok(());
    }
    let size_loaded = std::fs::metadata(&path)?.len();
    drop(c);
    drop(db);

    let mut opens = vec![];
    for _ in 0..5 {
        let t = Instant::now();
        let db = Database::open(&path)?;
        let c = db.collection("docs")?;
        opens.push(t.elapsed().as_secs_f64() * 1e3);
        drop(c);
        drop(db);
    }
    println!("open (incl. collection lookup): {opens:.2?} ms");

    let db = Database::open(&path)?;
    let c = db.collection("docs")?;
    // Warm the cache, then time column scans.
    let scan = |c: &sketchdb::Collection| -> Result<(u64, usize), sketchdb::Error> {
        let mut acc = 0u64;
        let mut bytes = 0usize;
        c.for_each_page(|p| {
            let v = p.value_bytes();
            bytes += v.len();
            for w in v.chunks_exact(8) {
                acc ^= u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            }
            true
        })?;
        Ok((acc, bytes))
    };
    scan(&c)?;
    let mut rates = vec![];
    for _ in 0..5 {
        let t = Instant::now();
        let (acc, bytes) = scan(&c)?;
        let s = t.elapsed().as_secs_f64();
        std::hint::black_box(acc);
        rates.push(bytes as f64 / s / 1e9);
    }
    println!("column scan (warm): {rates:.2?} GB/s of signature bytes");
    let t = Instant::now();
    let count = c.scan()?.count();
    println!("record scan (decoded sketches + keys): {count} records in {:.2?}", t.elapsed());

    // Everything equal after reopen.
    let t = Instant::now();
    for (i, rec) in c.scan()?.enumerate() {
        let rec = rec?;
        assert_eq!(rec.sketch, sketches[i]);
        assert_eq!(rec.key, keys[i].as_bytes());
    }
    println!("checked {n} records equal in {:.2?}", t.elapsed());

    // Delete 10%, compact, measure.
    let mut b = Batch::new();
    for i in (0..n as usize).step_by(10) {
        b.delete(&keys[i]);
    }
    c.apply(&b)?;
    drop(c);
    let t = Instant::now();
    let summary = db.compact()?;
    println!("compaction: {summary:?} in {:.2?}", t.elapsed());
    let c = db.collection("docs")?;
    let live = c.len()?;
    let size = std::fs::metadata(&path)?.len();
    let sig = 128 * 4u64;
    let key = keys[0].len() as u64;
    let per = size as f64 / live as f64;
    println!(
        "file: {size_loaded} bytes loaded; after compaction {size} bytes for {live} records = {per:.1} B/record; \
         signature+key = {} B => ratio {:.3} (with the 8-byte cardinality counted as signature: {:.3})",
        sig + key,
        per / (sig + key) as f64,
        per / (sig + 8 + key) as f64,
    );
    drop(c);
    drop(db);
    let _ = std::fs::remove_file(&path);
    Ok(())
}
