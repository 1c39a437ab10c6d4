//! Measures the persisted indexes on the shared benchmark workloads.
//!
//! ```text
//! cargo run --release --example index_eval -- simhash DATA_DIR OUT_DIR [N]
//! cargo run --release --example index_eval -- lsh DATA_DIR OUT_DIR [KIND]   # KIND: mh128x32 (default) | bbit512x8 | oph512x8
//! ```
//! `simhash`: builds a SimHash-table collection (radius 3) from `fp-10m.u64` (durable
//! batches of 1M), runs the 1000 queries of `fp-queries.u64` (one warm-up pass, then one
//! timed pass; per call = a fresh snapshot and index open), and scores them against
//! `fp-10m.truth.jsonl` (or `fp-1m.truth.jsonl` when N <= 1M).
//! `lsh`: sketches `sets-100k.jsonl`, and for each t in {0.5, 0.7, 0.8, 0.9} builds an
//! LSH collection (optimised banding, durable batches of 10k), queries `queries-100k.jsonl`
//! with precomputed signatures, verifies candidates with `Sketch::similarity` (estimate >= t)
//! and scores micro-averaged recall and precision against the file's `truth`.
//! Result lines on stdout, one JSON object per measurement.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use sketchdb::{
    Batch, CollectionConfig, Database, IndexConfig, SimHash, Sketch, SketchParams, Sketcher, TokenSet, testing,
};

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[((v.len() - 1) as f64 * p).round() as usize] }
}

fn read_u64s(path: &Path, limit: usize) -> R<Vec<u64>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes.chunks_exact(8).take(limit).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
}

fn simhash(data: &Path, out: &Path, n: usize) -> R<()> {
    let fps = read_u64s(&data.join("fp-10m.u64"), n)?;
    let queries = read_u64s(&data.join("fp-queries.u64"), usize::MAX)?;
    let path = out.join("simhash.sketchdb");
    let params = SketchParams::simhash(64, 1)?;
    // SKETCHDB_QUERY_ONLY=1 reuses the database a previous run built.
    let query_only = std::env::var_os("SKETCHDB_QUERY_ONLY").is_some();
    if !query_only {
        let _ = std::fs::remove_file(&path);
        let db = Database::create(&path)?;
        // SKETCHDB_NOINDEX=1 measures the same ingest without the index (the storage baseline).
        let index = if std::env::var_os("SKETCHDB_NOINDEX").is_some() || std::env::var_os("SKETCHDB_BULK").is_some() {
            IndexConfig::None
        } else {
            IndexConfig::SimhashTables { radius: 3 }
        };
        let c = db.create_collection("fp", CollectionConfig::new(params).with_index(index))?;
        let t0 = Instant::now();
        // SKETCHDB_BATCH=n sets the rows per durable batch (default 1M).
        let batch_rows: usize =
            std::env::var("SKETCHDB_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000).max(1);
        // One batch, cleared and refilled: its allocation is reused.
        let mut batch = Batch::with_capacity(batch_rows);
        for (b, chunk) in fps.chunks(batch_rows).enumerate() {
            let tb = Instant::now();
            batch.clear();
            for (i, &fp) in chunk.iter().enumerate() {
                let row = (b * batch_rows + i) as u64;
                batch.insert(row.to_be_bytes(), Sketch::SimHash(SimHash::from_parts(params, u128::from(fp))?));
            }
            c.apply(&batch)?;
            if chunk.len() >= 1_000_000 || b % 10 == 9 {
                eprintln!("batch {b}: {} rows in {:.2}s", chunk.len(), tb.elapsed().as_secs_f64());
            }
        }
        // SKETCHDB_BULK=1: the rows were loaded without an index; build it now in one
        // transaction (its design and bucket width then fit the loaded size).
        if std::env::var_os("SKETCHDB_BULK").is_some() {
            let tb = Instant::now();
            let mut c = c;
            c.rebuild_index(IndexConfig::SimhashTables { radius: 3 })?;
            eprintln!("index built in {:.2}s", tb.elapsed().as_secs_f64());
        }
        let build_s = t0.elapsed().as_secs_f64();
        let file_bytes = std::fs::metadata(&path)?.len();
        println!(
            "{{\"workload\":\"hamming-build\",\"dataset\":\"fp-{n}\",\"metrics\":{{\"build_s\":{build_s:.2},\"insert_per_s\":{:.0},\"file_bytes\":{file_bytes}}}}}",
            fps.len() as f64 / build_s
        );
        if std::env::var_os("SKETCHDB_NOINDEX").is_some() {
            return Ok(());
        }
    }
    // Reopen: nothing rebuilt. SKETCHDB_CACHE_MB sets redb's page cache (default 1 GiB, less
    // than the 10M file: probes then read pages from the OS cache into fresh buffers).
    let t_open = Instant::now();
    let mut builder = Database::builder();
    if let Some(mb) = std::env::var("SKETCHDB_CACHE_MB").ok().and_then(|v| v.parse::<usize>().ok()) {
        builder = builder.cache_size(mb << 20);
    }
    let db = builder.open(&path)?;
    let c = db.collection("fp")?;
    let open_s = t_open.elapsed().as_secs_f64();
    let mut results = Vec::with_capacity(queries.len());
    // SKETCHDB_WARMUP=n repeats the warm-up pass n times (to profile probes alone).
    let warmups = std::env::var("SKETCHDB_WARMUP").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    for _ in 0..warmups {
        for &q in &queries {
            testing::simhash_within(&c, &db, u128::from(q), 3)?;
        }
    }
    let mut lat = Vec::with_capacity(queries.len());
    for &q in &queries {
        let t = Instant::now();
        let r = testing::simhash_within(&c, &db, u128::from(q), 3)?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        results.push(r);
    }
    let t = Instant::now();
    let batch = testing::simhash_within_batch(&c, &db, &queries.iter().map(|&q| u128::from(q)).collect::<Vec<_>>(), 3)?;
    let batch_us = t.elapsed().as_secs_f64() * 1e6 / queries.len() as f64;
    // Truth.
    let truth_file = if n <= 1_000_000 { "fp-1m.truth.jsonl" } else { "fp-10m.truth.jsonl" };
    let (mut tp, mut fp_, mut fn_) = (0u64, 0u64, 0u64);
    for (line, got) in BufReader::new(std::fs::File::open(data.join(truth_file))?).lines().zip(&results) {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        let want: HashSet<(u64, u64)> = v["matches"]
            .as_array()
            .map(|a| {
                a.iter().filter_map(|m| Some((m[0].as_u64()?, m[1].as_u64()?))).filter(|m| (m.0 as usize) < n).collect()
            })
            .unwrap_or_default();
        let got: HashSet<(u64, u64)> = got.iter().map(|&(r, d)| (r, u64::from(d))).collect();
        tp += want.intersection(&got).count() as u64;
        fp_ += got.difference(&want).count() as u64;
        fn_ += want.difference(&got).count() as u64;
    }
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let precision = tp as f64 / (tp + fp_).max(1) as f64;
    assert_eq!(batch.len(), results.len());
    let (p50, p99) = (pct(&mut lat.clone(), 0.5), pct(&mut lat, 0.99));
    println!(
        "{{\"workload\":\"hamming-query\",\"dataset\":\"fp-{n}\",\"config\":{{\"radius\":3,\"tables\":4,\"storage\":\"file\"}},\"metrics\":{{\"p50_us\":{p50:.2},\"p99_us\":{p99:.2},\"batch_us_per_query\":{batch_us:.2},\"recall\":{recall:.4},\"precision\":{precision:.4},\"matches\":{tp},\"open_s\":{open_s:.4}}}}}"
    );
    // SKETCHDB_NO_DEDUP=1 stops after the queries (to profile them alone).
    if std::env::var_os("SKETCHDB_NO_DEDUP").is_some() {
        return Ok(());
    }
    let t = Instant::now();
    let pairs = testing::simhash_pairs(&c, &db, 3)?;
    println!(
        "{{\"workload\":\"dedup\",\"dataset\":\"fp-{n}\",\"metrics\":{{\"wall_s\":{:.2},\"pairs\":{}}}}}",
        t.elapsed().as_secs_f64(),
        pairs.len()
    );
    Ok(())
}

fn parse_tokens(v: &serde_json::Value) -> Vec<u64> {
    v["tokens"].as_array().map(|a| a.iter().filter_map(|x| x.as_u64()).collect()).unwrap_or_default()
}

fn lsh(data: &Path, out: &Path, kind: &str) -> R<()> {
    let params = match kind {
        "bbit512x8" => SketchParams::bbit(512, 8, 1)?,
        "oph512x8" => SketchParams::oph(512, 8, 1)?,
        _ => SketchParams::minhash(128, 32, 1)?,
    };
    let sketcher = Sketcher::new(params)?;
    let t = Instant::now();
    let mut keys = Vec::new();
    let mut sketches = Vec::new();
    for line in BufReader::new(std::fs::File::open(data.join("sets-100k.jsonl"))?).lines() {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        keys.push(v["key"].as_str().unwrap_or("").to_string());
        sketches.push(sketcher.sketch(&TokenSet::from_unsorted(parse_tokens(&v)))?);
    }
    eprintln!("sketched {} sets in {:.1}s", keys.len(), t.elapsed().as_secs_f64());
    let mut queries = Vec::new();
    for line in BufReader::new(std::fs::File::open(data.join("queries-100k.jsonl"))?).lines() {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        let s = sketcher.sketch(&TokenSet::from_unsorted(parse_tokens(&v)))?;
        queries.push((s, v["truth"].clone()));
    }
    let thresholds: Vec<f64> = std::env::var("SKETCHDB_T")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![0.5, 0.7, 0.8, 0.9]);
    for th in thresholds {
        let path = out.join(format!("lsh-{kind}-{th}.sketchdb"));
        let _ = std::fs::remove_file(&path);
        let db = Database::create(&path)?;
        // SKETCHDB_BANDS / SKETCHDB_ROWS give the banding explicitly (verification restores
        // precision, so a banding generous to recall pays only in candidates).
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
        let index = IndexConfig::Lsh { threshold: th, bands: env("SKETCHDB_BANDS"), rows: env("SKETCHDB_ROWS") };
        let c = db.create_collection("sets", CollectionConfig::new(params).with_index(index))?;
        let batch_size = env("SKETCHDB_BATCH").unwrap_or(10_000) as usize;
        let t0 = Instant::now();
        for (ks, ss) in keys.chunks(batch_size).zip(sketches.chunks(batch_size)) {
            let mut batch = Batch::with_capacity(ks.len());
            for (k, s) in ks.iter().zip(ss) {
                batch.insert(k, s.clone());
            }
            c.apply(&batch)?;
        }
        let build_s = t0.elapsed().as_secs_f64();
        let (lp, mean_hit) = testing::lsh_stats(&c, &db)?.ok_or("no lsh stats")?;
        let (mut tp, mut fp, mut fn_) = (0u64, 0u64, 0u64);
        let mut lat = Vec::new();
        let mut cands_total = 0usize;
        for (q, truth) in &queries {
            testing::lsh_candidates(&c, &db, q, u32::MAX)?; // warm-up
            let t = Instant::now();
            let cands = testing::lsh_candidates(&c, &db, q, u32::MAX)?;
            lat.push(t.elapsed().as_secs_f64() * 1e6);
            cands_total += cands.len();
            let snap = c.snapshot()?;
            let mut got = HashSet::new();
            for row in cands {
                if let Some(r) = snap.get_row(row)?
                    && r.sketch.similarity(q, 0.95)?.value >= th
                {
                    got.insert(String::from_utf8_lossy(&r.key).into_owned());
                }
            }
            let want: HashSet<String> = truth[format!("{th}").as_str()]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                .unwrap_or_default();
            tp += want.intersection(&got).count() as u64;
            fp += got.difference(&want).count() as u64;
            fn_ += want.difference(&got).count() as u64;
        }
        let recall = tp as f64 / (tp + fn_).max(1) as f64;
        let precision = tp as f64 / (tp + fp).max(1) as f64;
        let (p50, p99) = (pct(&mut lat.clone(), 0.5), pct(&mut lat, 0.99));
        println!(
            "{{\"workload\":\"lsh-query\",\"dataset\":\"sets-100k\",\"config\":{{\"sketch\":\"{kind}\",\"threshold\":{th},\"bands\":{},\"rows\":{},\"storage\":\"file\"}},\"metrics\":{{\"insert_per_s\":{:.0},\"build_s\":{build_s:.2},\"candidate_p50_us\":{p50:.2},\"candidate_p99_us\":{p99:.2},\"mean_candidates\":{:.1},\"mean_hit_bucket\":{mean_hit:.2},\"recall\":{recall:.4},\"precision\":{precision:.4},\"tp\":{tp},\"fp\":{fp},\"fn\":{fn_}}}}}",
            lp.bands,
            lp.rows,
            keys.len() as f64 / build_s,
            cands_total as f64 / queries.len() as f64
        );
        let report = sketchdb::admin::verify(&db)?;
        eprintln!("t = {th}: verify ok = {}", report.is_ok());
    }
    Ok(())
}

fn main() -> R<()> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("simhash");
    let data = PathBuf::from(args.get(2).map(String::as_str).unwrap_or("/work/data"));
    let out = PathBuf::from(args.get(3).map(String::as_str).unwrap_or("/tmp"));
    match mode {
        "simhash" => simhash(&data, &out, args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10_000_000)),
        _ => lsh(&data, &out, args.get(4).map(String::as_str).unwrap_or("mh128x32")),
    }
}
