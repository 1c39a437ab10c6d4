//! Hamming-distance kernels over slices of fingerprints, dispatched to a POPCNT build.
//!
//! Without POPCNT, `count_ones` compiles to a shift-and-add sequence that makes distance
//! scans about 2.5x slower; with it, one instruction. Each call dispatches once for a whole
//! slice (a bucket or a scan), not once per fingerprint.

use std::ops::BitXor;

use super::dispatch::{Features, Kernel, run_popcnt};

/// A fingerprint word the kernels compare.
trait Word: Copy + BitXor<Output = Self> {
    fn ones(self) -> u32;
}

impl Word for u64 {
    #[inline(always)]
    fn ones(self) -> u32 {
        self.count_ones()
    }
}

impl Word for u128 {
    #[inline(always)]
    fn ones(self) -> u32 {
        self.count_ones()
    }
}

struct Within<'a, T> {
    query: T,
    keys: &'a [T],
    k: u32,
    out: &'a mut Vec<(u32, usize)>,
}

impl<T: Word> Kernel for Within<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (i, &key) in self.keys.iter().enumerate() {
            let d = (key ^ self.query).ones();
            if d <= self.k {
                self.out.push((d, i));
            }
        }
    }
}

struct Distances<'a, T> {
    query: T,
    keys: &'a [T],
    out: &'a mut [u32],
}

impl<T: Word> Kernel for Distances<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (o, &key) in self.out.iter_mut().zip(self.keys) {
            *o = (key ^ self.query).ones();
        }
    }
}

/// Pushes `(distance, index)` for every key within Hamming distance `k` of `query`, in index
/// order. On little-endian targets the keys' bytes go to the vector kernels of
/// [`super::hamming_words`] (the same answers).
pub(crate) fn within_u64(query: u64, keys: &[u64], k: u32, out: &mut Vec<(u32, usize)>) {
    #[cfg(target_endian = "little")]
    super::hamming_words::within_words_u64(query, zerocopy::IntoBytes::as_bytes(keys), k, out);
    #[cfg(not(target_endian = "little"))]
    run_popcnt(Features::ALL, Within { query, keys, k, out });
}

/// [`within_u64`] for 128-bit fingerprints.
pub(crate) fn within_u128(query: u128, keys: &[u128], k: u32, out: &mut Vec<(u32, usize)>) {
    run_popcnt(Features::ALL, Within { query, keys, k, out });
}

/// Writes the Hamming distance of every key to `query` into `out` (over the shorter of the
/// two lengths).
pub(crate) fn distances_u64(query: u64, keys: &[u64], out: &mut [u32]) {
    run_popcnt(Features::ALL, Distances { query, keys, out });
}

/// [`distances_u64`] for 128-bit fingerprints.
pub(crate) fn distances_u128(query: u128, keys: &[u128], out: &mut [u32]) {
    run_popcnt(Features::ALL, Distances { query, keys, out });
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::TEST_CAPS;
    use super::super::test_rng::Rng;
    use super::*;

    /// Keys at every distance from `query`: random ones plus flips of a few bits.
    fn keys(rng: &mut Rng, query: u64, n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    query ^ (1 << rng.below(64)) ^ (rng.next() & rng.next() & rng.next())
                } else {
                    rng.next()
                }
            })
            .collect()
    }

    #[test]
    fn every_tier_equals_the_reference_on_random_slices() {
        let mut rng = Rng(0x5eed);
        for n in [0usize, 1, 3, 7, 8, 15, 16, 17, 63, 65, 1000, 1001] {
            let query = rng.next();
            let narrow = keys(&mut rng, query, n);
            let wide: Vec<u128> = narrow.iter().map(|&x| u128::from(x) << 64 | u128::from(rng.next())).collect();
            let wq = u128::from(query) << 64 | u128::from(rng.next());
            for k in [0u32, 1, 3, 32, 64, 128] {
                let want: Vec<(u32, usize)> = narrow
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| ((x ^ query).count_ones(), i))
                    .filter(|&(d, _)| d <= k)
                    .collect();
                let want_wide: Vec<(u32, usize)> = wide
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| ((x ^ wq).count_ones(), i))
                    .filter(|&(d, _)| d <= k)
                    .collect();
                for cap in TEST_CAPS {
                    let mut got = Vec::new();
                    run_popcnt(cap, Within { query, keys: &narrow, k, out: &mut got });
                    assert_eq!(got, want, "n={n} k={k} cap={cap:?}");
                    let mut got = Vec::new();
                    run_popcnt(cap, Within { query: wq, keys: &wide, k, out: &mut got });
                    assert_eq!(got, want_wide, "n={n} k={k} cap={cap:?}");
                }
                let mut got = Vec::new();
                within_u64(query, &narrow, k, &mut got);
                assert_eq!(got, want);
                let mut got = Vec::new();
                within_u128(wq, &wide, k, &mut got);
                assert_eq!(got, want_wide);
            }
            for cap in TEST_CAPS {
                let mut d = vec![u32::MAX; n];
                run_popcnt(cap, Distances { query, keys: &narrow, out: &mut d });
                assert!(d.iter().zip(&narrow).all(|(&d, &x)| d == (x ^ query).count_ones()));
                let mut d = vec![u32::MAX; n + 2];
                run_popcnt(cap, Distances { query: wq, keys: &wide, out: &mut d });
                assert!(d[..n].iter().zip(&wide).all(|(&d, &x)| d == (x ^ wq).count_ones()));
                assert!(d[n..].iter().all(|&d| d == u32::MAX), "only the shorter length is written");
            }
            let mut d = vec![0u32; n];
            distances_u64(query, &narrow, &mut d);
            assert!(d.iter().zip(&narrow).all(|(&d, &x)| d == (x ^ query).count_ones()));
            let mut d = vec![0u32; n];
            distances_u128(wq, &wide, &mut d);
            assert!(d.iter().zip(&wide).all(|(&d, &x)| d == (x ^ wq).count_ones()));
        }
    }
}
