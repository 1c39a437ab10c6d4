//! Query figures at scale (issue 5): the OPH bin-matching scan's throughput against the
//! machine's read bandwidth, and p50/p99 of threshold and top-k queries.
//!
//! Run: `cargo run --release --example query_figures -- [ROWS] [DB_PATH]`
//! (default 1,000,000 rows in a temporary directory; an existing DB_PATH is reused).

use std::time::Instant;

use sketchdb::plan::PlanKind;
use sketchdb::*;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Sets of ~200 tokens in families of 5 near-duplicates (J about 0.6-0.95).
fn set(i: u64) -> TokenSet {
    let family = i / 5;
    let mut s = family.wrapping_mul(0x1234_5678_9abc_def1);
    let base: Vec<u64> = (0..200).map(|_| splitmix(&mut s)).collect();
    let mut r = i ^ 0xfeed;
    let keep = 60 + (i % 5) * 10; // percent of the family's tokens kept
    let mut t: Vec<u64> = base.into_iter().filter(|_| splitmix(&mut r) % 100 < keep).collect();
    t.extend((0..20).map(|_| splitmix(&mut r)));
    TokenSet::from_unsorted(t)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn read_bandwidth() -> f64 {
    // Sum 2 GiB of u64 (one thread, like the scan): bytes per second.
    let v: Vec<u64> = (0..(256u64 << 20)).collect();
    // (Filled before timing: page faults and the fill are not part of the figure.)
    let mut best = 0.0f64;
    for _ in 0..3 {
        let start = Instant::now();
        let s: u64 = v.iter().fold(0u64, |a, &x| a.wrapping_add(x));
        std::hint::black_box(s);
        best = best.max((v.len() * 8) as f64 / start.elapsed().as_secs_f64());
    }
    best
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let rows: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let tmp = tempfile::tempdir()?;
    let path = std::env::args().nth(2).map(std::path::PathBuf::from).unwrap_or_else(|| tmp.path().join("q.db"));
    let db = if path.exists() { Database::open(&path)? } else { Database::create(&path)? };
    let coll = match db.collection("oph") {
        Ok(c) => c,
        Err(_) => {
            let c = db.create_collection("oph", CollectionConfig::new(SketchParams::oph(128, 8, 1)?))?;
            let start = Instant::now();
            let sk = c.sketcher().clone();
            for chunk in (0..rows).collect::<Vec<_>>().chunks(20_000) {
                let sets: Vec<TokenSet> = chunk.iter().map(|&i| set(i)).collect();
                let mut batch = Batch::with_capacity(chunk.len());
                for (i, s) in chunk.iter().zip(sk.sketch_batch(&sets)) {
                    batch.insert(format!("r{i}"), s?);
                }
                c.apply(&batch)?;
            }
            eprintln!("built {rows} OPH rows in {:.1}s", start.elapsed().as_secs_f64());
            c
        }
    };
    let bw = read_bandwidth();
    println!("machine read bandwidth (one thread, summing u64): {:.2} GB/s", bw / 1e9);
    let n = coll.len()? as f64;
    let queries: Vec<Sketch> =
        (0..50u64).map(|i| coll.sketcher().sketch(&set(i * 7919 % rows))).collect::<std::result::Result<_, _>>()?;
    let bin_bytes = n * 128.0;
    // QF_ONLY=substring runs only the matching reports (for profiling one of them).
    let only = std::env::var("QF_ONLY").ok();
    let report = |name: &str, kind: QueryKind, options: QueryOptions| -> Result<()> {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            return Ok(());
        }
        let mut times = Vec::new();
        let mut results = 0;
        // One warm-up pass (the shared bench convention), then the timed one.
        for q in &queries {
            coll.query(&Query { sketch: q.clone(), kind, options })?;
        }
        for q in &queries {
            let r = coll.query(&Query { sketch: q.clone(), kind, options })?;
            times.push(r.analyze.elapsed.as_secs_f64());
            results += r.hits.len();
        }
        let p50 = percentile(&mut times, 0.5);
        let p99 = percentile(&mut times, 0.99);
        println!(
            "{name:<48} p50 {:>8.2} ms  p99 {:>8.2} ms  {:>7.1}M rows/s  {:>6.2} GB/s of bin columns ({:>4.0}% of read bandwidth)  avg results {:.1}",
            p50 * 1e3,
            p99 * 1e3,
            n / p50 / 1e6,
            bin_bytes / p50 / 1e9,
            100.0 * bin_bytes / p50 / bw,
            results as f64 / queries.len() as f64
        );
        Ok(())
    };
    let force = |k: PlanKind, exact: bool| QueryOptions { force: Some(k), exact, ..QueryOptions::default() };
    // Early termination off: every bin of every row is compared (the plain scan rate).
    for t in [0.5, 0.9] {
        let plain = QueryOptions { early_termination: false, ..force(PlanKind::OphBinScan, true) };
        report(&format!("oph-bin-scan, no early termination, t={t}"), QueryKind::Threshold(t), plain)?;
    }
    for t in [0.3, 0.5, 0.7, 0.9] {
        report(
            &format!("oph-bin-scan exact bound, t={t}"),
            QueryKind::Threshold(t),
            force(PlanKind::OphBinScan, true),
        )?;
        report(
            &format!("oph-bin-scan confidence stop, t={t}"),
            QueryKind::Threshold(t),
            force(PlanKind::OphBinScan, false),
        )?;
    }
    report("top-k 10 (planner's choice)", QueryKind::TopK(10), QueryOptions::default())?;
    report("threshold 0.5 (planner's choice)", QueryKind::Threshold(0.5), QueryOptions::default())?;
    // The decoding full scan is far slower; five queries are enough to show it.
    if only.as_deref().is_some_and(|o| !"full-scan".contains(o)) {
        return Ok(());
    }
    let few = &queries[..5];
    let mut times = Vec::new();
    for q in few {
        let options = force(PlanKind::FullScan, true);
        times.push(
            coll.query(&Query { sketch: q.clone(), kind: QueryKind::Threshold(0.5), options })?
                .analyze
                .elapsed
                .as_secs_f64(),
        );
    }
    println!(
        "full-scan (decode every row), t=0.5: p50 {:.1} ms over {} queries",
        percentile(&mut times, 0.5) * 1e3,
        few.len()
    );
    Ok(())
}
