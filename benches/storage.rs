//! Storage benchmarks (criterion, short measurement times): durable batched ingest, open,
//! warm column scan, record scan and point gets, on MinHash k = 128, 32-bit signatures.
//!
//! `cargo bench --bench storage`. The full-scale (1M-record) figures come from
//! `cargo run --release --example storage_figures`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use sketchdb::{Batch, Collection, CollectionConfig, Database, MinHash, Sketch, SketchParams};

const BATCH: u64 = 10_000;
const LOADED: u64 = 100_000;

fn params() -> SketchParams {
    SketchParams::minhash(128, 32, 42).unwrap()
}

fn sketch(i: u64) -> Sketch {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let values = (0..128)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> 32
        })
        .collect();
    Sketch::MinHash(MinHash::from_parts(params(), values, 100).unwrap())
}

fn load(c: &Collection, from: u64, n: u64) {
    for start in (from..from + n).step_by(BATCH as usize) {
        let mut b = Batch::with_capacity(BATCH as usize);
        for i in start..start + BATCH {
            b.insert(format!("doc-{i:010}"), sketch(i));
        }
        c.apply(&b).unwrap();
    }
}

fn bench(crit: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();

    let mut g = crit.benchmark_group("ingest");
    g.sample_size(10).measurement_time(Duration::from_secs(8)).throughput(Throughput::Elements(BATCH));
    let db = Database::create(dir.path().join("ingest")).unwrap();
    let c = db.create_collection("docs", CollectionConfig::new(params())).unwrap();
    let next = AtomicU64::new(0);
    let precomputed: Vec<Sketch> = (0..BATCH).map(sketch).collect();
    g.bench_function("durable_batch_10k_k128_32bit", |b| {
        b.iter_batched(
            || {
                let start = next.fetch_add(BATCH, Ordering::Relaxed);
                let mut batch = Batch::with_capacity(BATCH as usize);
                for (i, s) in precomputed.iter().enumerate() {
                    batch.insert(format!("doc-{:010}", start + i as u64), s.clone());
                }
                batch
            },
            |batch| c.apply(&batch).unwrap(),
            BatchSize::PerIteration,
        )
    });
    g.finish();
    drop((c, db));

    let path = dir.path().join("loaded");
    {
        let db = Database::create(&path).unwrap();
        let c = db.create_collection("docs", CollectionConfig::new(params())).unwrap();
        load(&c, 0, LOADED);
    }

    let mut g = crit.benchmark_group("open");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.bench_function("open_100k", |b| {
        b.iter(|| {
            let db = Database::open(&path).unwrap();
            db.collection("docs").unwrap()
        })
    });
    g.finish();

    let db = Database::open(&path).unwrap();
    let c = db.collection("docs").unwrap();
    let bytes = LOADED * 128 * 4;
    let mut g = crit.benchmark_group("scan");
    g.sample_size(10).measurement_time(Duration::from_secs(5)).throughput(Throughput::Bytes(bytes));
    g.bench_function("column_scan_warm_100k", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            c.for_each_page(|p| {
                for w in p.value_bytes().chunks_exact(8) {
                    acc ^= u64::from_le_bytes(w.try_into().unwrap());
                }
                true
            })
            .unwrap();
            acc
        })
    });
    g.throughput(Throughput::Elements(LOADED));
    g.bench_function("record_scan_warm_100k", |b| b.iter(|| c.scan().unwrap().count()));
    g.finish();

    let mut g = crit.benchmark_group("get");
    g.sample_size(20).measurement_time(Duration::from_secs(3)).throughput(Throughput::Elements(1000));
    g.bench_function("get_1000_random_keys", |b| {
        let mut x = 12345u64;
        b.iter(|| {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let i = (x >> 33) % LOADED;
                c.get(format!("doc-{i:010}")).unwrap().unwrap();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
