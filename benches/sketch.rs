//! Sketch construction throughput from pre-hashed u64 tokens (issue 2's targets):
//! MinHash k = 128 >= 60M tokens/s, OPH t = 128 >= 100M tokens/s, SimHash 64-bit >= 50M
//! tokens/s, one core; plus the rayon batch API on all cores.
//!
//! Run: `cargo bench --bench sketch`. Throughput is reported in tokens (elements) per second.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sketchdb::{HashFamily, SketchParams, Sketcher, TokenSet};
use std::hint::black_box;
use std::time::Duration;

fn tokens(n: usize, seed: u64) -> TokenSet {
    let mut s = seed;
    TokenSet::from_unsorted(
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let z = (s ^ (s >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z ^ (z >> 31)
            })
            .collect(),
    )
}

fn single_core(c: &mut Criterion) {
    let mut g = c.benchmark_group("sketch_one_core");
    g.measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    let cases = [
        ("minhash_k128_32bit", SketchParams::minhash(128, 32, 1).unwrap()),
        ("minhash_k128_32bit_lanes32", SketchParams::minhash(128, 32, 1).unwrap().with_family(LANES32).unwrap()),
        ("minhash_k128_64bit", SketchParams::minhash(128, 64, 1).unwrap()),
        ("bbit_k128_b8", SketchParams::bbit(128, 8, 1).unwrap()),
        ("bbit_k128_b8_lanes32", SketchParams::bbit(128, 8, 1).unwrap().with_family(LANES32).unwrap()),
        ("bbit_k512_b8_lanes32", SketchParams::bbit(512, 8, 1).unwrap().with_family(LANES32).unwrap()),
        ("oph_t128_32bit", SketchParams::oph(128, 32, 1).unwrap()),
        ("oph_t128_8bit", SketchParams::oph(128, 8, 1).unwrap()),
        ("simhash_64", SketchParams::simhash(64, 1).unwrap()),
        ("simhash_128", SketchParams::simhash(128, 1).unwrap()),
    ];
    for n in [200usize, 5000] {
        let set = tokens(n, n as u64);
        for (name, p) in &cases {
            let sk = Sketcher::new(*p).unwrap();
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(*name, n), &set, |b, set| {
                b.iter(|| sk.sketch(black_box(set)).unwrap())
            });
        }
    }
    g.finish();
}

/// The 32-bit lane family: the default of MinHash with 32-bit values and b-bit MinHash.
const LANES32: HashFamily = HashFamily::MixMultiplyShift32;

fn batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("sketch_batch_all_cores");
    g.measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    let sets: Vec<TokenSet> = (0..2000).map(|i| tokens(200, i)).collect();
    let total: usize = sets.iter().map(TokenSet::len).sum();
    for (name, p) in [
        ("minhash_k128_32bit", SketchParams::minhash(128, 32, 1).unwrap()),
        ("oph_t128_32bit", SketchParams::oph(128, 32, 1).unwrap()),
    ] {
        let sk = Sketcher::new(p).unwrap();
        g.throughput(Throughput::Elements(total as u64));
        g.bench_function(format!("{name}/threads={}", rayon::current_num_threads()), |b| {
            b.iter(|| sk.sketch_batch(black_box(&sets)))
        });
        g.bench_function(format!("{name}/threads=1"), |b| {
            b.iter(|| sets.iter().map(|s| sk.sketch(black_box(s))).collect::<Vec<_>>())
        });
    }
    g.finish();
}

criterion_group!(benches, single_core, batch);
criterion_main!(benches);
