//! Index benchmarks: SimHash radius-3 probes over 10M random 64-bit fingerprints (permuted
//! tables in memory vs a brute-force POPCNT scan) and LSH band-key hashing throughput.
//!
//! `cargo bench --bench index`. Before the criterion groups it prints p50/p99 per-query
//! latencies measured with `Instant` over 20 000 queries per design.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sketchdb::{
    SketchParams, Sketcher, TokenSet,
    lsh::LshParams,
    simhash::SimhashTableDesign,
    testing::{
        BandKeyScheme, LshRows, ProbeScratch, RowWidth, SimhashMemIndex, band_key_u32, lsh_rows, simhash_brute_force,
    },
};

const N: usize = 10_000_000;
const K: u32 = 3;
const QUERIES: usize = 20_000;

/// splitmix64 with a fixed seed: the same data on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Random fingerprints, and queries: half planted (a stored fingerprint with 0..=3 bits
/// flipped, so at least one true neighbour), half uniformly random.
fn data() -> (Vec<(u64, u64)>, Vec<u64>) {
    let mut rng = Rng(0x5eed);
    let items: Vec<(u64, u64)> = (0..N as u64).map(|r| (r, rng.next())).collect();
    let queries = (0..QUERIES)
        .map(|i| {
            if i % 2 == 0 {
                let mut q = items[(rng.next() % N as u64) as usize].1;
                for _ in 0..rng.next() % u64::from(K + 1) {
                    q ^= 1 << (rng.next() % 64);
                }
                q
            } else {
                rng.next()
            }
        })
        .collect();
    (items, queries)
}

fn percentiles(index: &SimhashMemIndex<u64>, queries: &[u64]) -> (Duration, Duration, f64) {
    let mut scratch = ProbeScratch::default();
    let mut out = Vec::new();
    let mut found = 0usize;
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|&q| {
            let t = Instant::now();
            index.probe_into(q, &mut scratch, &mut out);
            let e = t.elapsed();
            found += out.len();
            e
        })
        .collect();
    times.sort_unstable();
    (times[times.len() / 2], times[times.len() * 99 / 100], found as f64 / queries.len() as f64)
}

fn simhash(c: &mut Criterion) {
    let (items, queries) = data();
    let (rows, fps): (Vec<u64>, Vec<u64>) = items.iter().copied().unzip();
    let mut group = c.benchmark_group("simhash_radius3_10M");
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    let chosen = SimhashTableDesign::design(N as u64, K, 64).expect("design");
    for m in [4u32, 5, 6] {
        let design = SimhashTableDesign::with_blocks(64, K, m).expect("design");
        let t = Instant::now();
        let index = SimhashMemIndex::build(design.clone(), &items).expect("build");
        let built = t.elapsed();
        let (p50, p99, hits) = percentiles(&index, &queries);
        eprintln!(
            "m = {m}: {} tables, prefix {} bits{}, built in {built:.1?}; per query p50 {p50:.2?}, p99 {p99:.2?}, {hits:.2} hits/query",
            design.table_count(),
            design.min_prefix_bits(),
            if design == chosen { " (design() choice)" } else { "" },
        );
        let mut scratch = ProbeScratch::default();
        let mut out = Vec::new();
        let mut i = 0;
        group.bench_function(format!("probe_m{m}_{}tables", design.table_count()), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                index.probe_into(black_box(queries[i]), &mut scratch, &mut out);
                out.len()
            })
        });
        // Sanity: the probe is exact on a few queries.
        for &q in queries.iter().take(3) {
            assert_eq!(index.probe(q), simhash_brute_force(q, &fps, &rows, K));
        }
    }
    let mut i = 0;
    group.bench_function("brute_force_popcnt_scan", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            simhash_brute_force(black_box(queries[i]), &fps, &rows, K).len()
        })
    });
    group.finish();
}

fn band_keys(c: &mut Criterion) {
    let mut rng = Rng(7);
    let sigs: Vec<LshRows> = (0..1000).map(|_| LshRows::U32((0..128).map(|_| rng.next() as u32).collect())).collect();
    let mut group = c.benchmark_group("band_keys");
    group.sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(300));
    for params in [LshParams { bands: 32, rows: 4 }, LshParams { bands: 16, rows: 8 }] {
        group.throughput(Throughput::Elements(u64::from(params.bands) * sigs.len() as u64));
        let mut out = Vec::with_capacity(64);
        group.bench_function(format!("{}x{}_u32_per_1000_sigs", params.bands, params.rows), |b| {
            b.iter(|| {
                let mut acc = 0u64;
                for s in &sigs {
                    out.clear();
                    s.band_keys_into(params, 42, &mut out).expect("keys");
                    acc ^= out[0];
                }
                acc
            })
        });
    }
    let values: Vec<u32> = (0..8).collect();
    group.throughput(Throughput::Elements(1));
    group.bench_function("single_band_key_u32_r8", |b| b.iter(|| band_key_u32(black_box(3), black_box(&values), 42)));
    // A query's whole band-key step at the 1M workload's banding: rows of a b-bit 512 x 8
    // sketch, then 39 bands of 13 rows.
    let sketcher = Sketcher::new(SketchParams::bbit(512, 8, 1).expect("params")).expect("sketcher");
    let sketch = sketcher.sketch(&TokenSet::from_unsorted((0..300).collect())).expect("sketch");
    let v3 = BandKeyScheme::new(42, LshParams { bands: 39, rows: 13 }, RowWidth::for_bits(8));
    let v2 = BandKeyScheme { version: 2, ..v3 };
    group.throughput(Throughput::Elements(39));
    group.bench_function("bbit512x8_rows_and_39x13_keys_v2", |b| {
        b.iter(|| v2.keys(&lsh_rows(black_box(&sketch)).expect("rows")).expect("keys"))
    });
    // The same keys straight from the packed words (what the index computes), under band-hash
    // version 2 (4 + 4 * 13 bytes a band) and version 3 (the band's 13 packed bytes in place).
    group.bench_function("bbit512x8_39x13_sketch_keys_v2", |b| {
        b.iter(|| v2.sketch_keys(black_box(&sketch)).expect("keys"))
    });
    group.bench_function("bbit512x8_39x13_sketch_keys_v3", |b| {
        b.iter(|| v3.sketch_keys(black_box(&sketch)).expect("keys"))
    });
    group.finish();
}

criterion_group!(benches, band_keys, simhash);
criterion_main!(benches);
