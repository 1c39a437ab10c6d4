//! The figures of issue #30: read-only open time at 1M records, query latency through a
//! read-only handle against a read-write one, aggregate queries/s of N reader processes, and
//! commit latency of the file-sharing modes (single writer, multi writer, exclusive).
//!
//! ```text
//! cargo run --release --example multi_figures -- build   <path> [records]
//! cargo run --release --example multi_figures -- open    <path>
//! cargo run --release --example multi_figures -- latency <path>
//! cargo run --release --example multi_figures -- readers <path> <processes> <seconds>
//! cargo run --release --example multi_figures -- commits <dir>
//! ```
//! The collection is MinHash k = 128 (32-bit) with an LSH index at 0.8; queries are threshold
//! queries (0.8) for stored records' signatures, answered through the index.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sketchdb::testing::{Sharing, with_sharing};
use sketchdb::{Batch, CollectionConfig, Database, IndexConfig, MinHash, Query, Sketch, SketchParams};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn params() -> Res<SketchParams> {
    Ok(SketchParams::minhash(128, 32, 42)?)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn sketch(&mut self, i: u64) -> Res<Sketch> {
        let values = (0..128).map(|_| self.next() >> 32).collect();
        Ok(Sketch::MinHash(MinHash::from_parts(params()?, values, 10 + i % 1000)?))
    }
}

fn build(path: &Path, n: u64) -> Res<()> {
    let _ = std::fs::remove_file(path);
    let db = Database::create(path)?;
    let mut config = CollectionConfig::new(params()?);
    config.index = IndexConfig::Lsh { threshold: 0.8, bands: None, rows: None };
    let c = db.create_collection("m", config)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let t = Instant::now();
    let mut i = 0;
    while i < n {
        let mut b = Batch::new();
        for _ in 0..10_000.min(n - i) {
            b.insert(format!("k{i}"), rng.sketch(i)?);
            i += 1;
        }
        c.apply(&b)?;
    }
    println!("built {n} records in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn open(path: &Path) -> Res<()> {
    let mut times = vec![];
    for _ in 0..31 {
        let t = Instant::now();
        let db = Database::open_read_only(path)?;
        let c = db.collection("m")?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        drop((c, db));
    }
    let n = Database::open_read_only(path)?.collection("m")?.len()?;
    println!(
        "read-only open + collection lookup at {n} records: median {:.3} ms, min {:.3} ms (31 opens)",
        median(times.clone()),
        times.iter().copied().fold(f64::MAX, f64::min)
    );
    Ok(())
}

/// Signatures of `count` stored records, chosen at random.
fn probes(db: &Database, count: usize, seed: u64) -> Res<Vec<Sketch>> {
    let c = db.collection("m")?;
    let n = c.len()?;
    let mut rng = Rng(seed);
    (0..count).map(|_| Ok(c.sketch_of(format!("k{}", rng.next() % n))?)).collect()
}

/// Per-query latencies in microseconds.
fn run_queries(db: &Database, probes: &[Sketch]) -> Res<Vec<f64>> {
    let c = db.collection("m")?;
    let mut out = Vec::with_capacity(probes.len());
    for p in probes {
        let t = Instant::now();
        let hits = c.query(&Query::threshold(p.clone(), 0.8))?.hits;
        out.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(!hits.is_empty());
    }
    Ok(out)
}

fn latency(path: &Path) -> Res<()> {
    let ro = Database::open_read_only(path)?;
    let ps = probes(&ro, 5000, 7)?;
    let (mut r, mut w) = (vec![], vec![]);
    for round in 0..6 {
        // Alternate which handle goes first; each handle opened fresh.
        for which in [round % 2, 1 - round % 2] {
            if which == 0 {
                let db = Database::open_read_only(path)?;
                run_queries(&db, &ps[..500])?; // warm
                r.push(median(run_queries(&db, &ps)?));
            } else {
                let db = Database::builder().busy_timeout(Duration::from_secs(30)).open(path)?;
                run_queries(&db, &ps[..500])?;
                w.push(median(run_queries(&db, &ps)?));
            }
        }
    }
    println!("threshold-query p50 per round (us): read-only {r:.2?}, read-write {w:.2?}");
    println!("median of rounds: read-only {:.2} us, read-write {:.2} us", median(r), median(w));
    Ok(())
}

fn reader(path: &Path, secs: f64, seed: u64) -> Res<()> {
    let db = Database::open_read_only(path)?;
    let ps = probes(&db, 2000, seed)?;
    let c = db.collection("m")?;
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut n = 0u64;
    while Instant::now() < deadline {
        c.query(&Query::threshold(ps[n as usize % ps.len()].clone(), 0.8))?;
        n += 1;
    }
    println!("{n}");
    Ok(())
}

fn readers(path: &Path, procs: u64, secs: f64) -> Res<()> {
    let exe = std::env::current_exe()?;
    let children: Vec<_> = (0..procs)
        .map(|i| {
            Command::new(&exe)
                .args(["reader".as_ref(), path.as_os_str(), secs.to_string().as_ref(), (i + 1).to_string().as_ref()])
                .stdout(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut total = 0u64;
    for c in children {
        let out = c.wait_with_output()?;
        total += String::from_utf8_lossy(&out.stdout).trim().parse::<u64>()?;
    }
    println!("{procs} reader processes, {secs} s: {:.0} queries/s in aggregate", total as f64 / secs);
    Ok(())
}

fn commits(dir: &Path) -> Res<()> {
    let modes = [
        ("single-writer", Sharing::SingleWriter),
        ("multi-writer", Sharing::MultiWriter),
        ("exclusive", Sharing::Exclusive),
    ];
    let mut rng = Rng(99);
    for round in 0..2 {
        for (name, mode) in modes {
            let path = dir.join(format!("commits-{name}-{round}.sketchdb"));
            let _ = std::fs::remove_file(&path);
            let db = with_sharing(Database::builder(), mode).create(&path)?;
            let mut config = CollectionConfig::new(params()?);
            config.index = IndexConfig::Lsh { threshold: 0.8, bands: None, rows: None };
            let c = db.create_collection("m", config)?;
            let mut one = vec![];
            for i in 0..300u64 {
                let s = rng.sketch(i)?;
                let t = Instant::now();
                c.insert(format!("one{i}"), &s)?;
                one.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let t = Instant::now();
            for b in 0..20u64 {
                let mut batch = Batch::new();
                for i in 0..1000 {
                    batch.insert(format!("b{b}-{i}"), rng.sketch(i)?);
                }
                c.apply(&batch)?;
            }
            let rate = 20_000.0 / t.elapsed().as_secs_f64();
            println!(
                "{name:>13} round {round}: 1-record commit p50 {:.3} ms; 1000-record batches {rate:.0} records/s",
                median(one)
            );
            drop((c, db));
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let path = Path::new(arg(1));
    match arg(0) {
        "build" => build(path, arg(2).parse().unwrap_or(1_000_000)),
        "open" => open(path),
        "latency" => latency(path),
        "readers" => readers(path, arg(2).parse()?, arg(3).parse()?),
        "reader" => reader(path, arg(2).parse()?, arg(3).parse()?),
        "commits" => commits(path),
        other => Err(format!("unknown mode `{other}`: build | open | latency | readers | commits").into()),
    }
}
