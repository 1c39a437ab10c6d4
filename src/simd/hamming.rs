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
/// order.
pub(crate) fn within_u64(query: u64, keys: &[u64], k: u32, out: &mut Vec<(u32, usize)>) {
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

/// A packed SimHash bucket's keys: `n` suffixes of `s <= 8` bytes at the start of `bytes`
/// (which may continue past them: the row ids follow), entry i's key being
/// `base | le_u64(bytes[i * s..i * s + s])`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PackedKeys<'a> {
    pub bytes: &'a [u8],
    pub n: usize,
    pub s: usize,
    pub base: u64,
}

struct WithinPacked<'a> {
    query: u64,
    keys: PackedKeys<'a>,
    k: u32,
    out: &'a mut Vec<(u32, usize)>,
}

impl Kernel for WithinPacked<'_> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let PackedKeys { bytes, n, s, base } = self.keys;
        if s == 0 || s > 8 || bytes.len() < n * s {
            return;
        }
        let mask = if s == 8 { u64::MAX } else { (1u64 << (8 * s)) - 1 };
        // Entries whose 8-byte load stays inside `bytes`.
        let fast = if bytes.len() >= 8 { n.min((bytes.len() - 8) / s + 1) } else { 0 };
        for i in 0..n {
            let mut a = [0u8; 8];
            if i < fast {
                a.copy_from_slice(&bytes[i * s..i * s + 8]);
            } else {
                a[..s].copy_from_slice(&bytes[i * s..i * s + s]);
            }
            let d = ((base | (u64::from_le_bytes(a) & mask)) ^ self.query).count_ones();
            if d <= self.k {
                self.out.push((d, i));
            }
        }
    }
}

/// Pushes `(distance, i)`, in order, for every entry of `keys` within distance `k` of
/// `query`, decoding and comparing in one pass (no key vector is written): every entry with
/// 8 bytes left is one unaligned load and a mask, the last few are copied. Nothing when the
/// shape is invalid (`s` not in 1..=8, or fewer than `n * s` bytes).
pub(crate) fn within_packed_u64(query: u64, keys: PackedKeys<'_>, k: u32, out: &mut Vec<(u32, usize)>) {
    run_popcnt(Features::ALL, WithinPacked { query, keys, k, out });
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

    #[test]
    fn packed_keys_equal_decoding_every_suffix_at_every_width_and_tier() {
        let mut rng = Rng(0xface);
        for n in [0usize, 1, 2, 9, 100, 333] {
            let all = keys(&mut rng, 0xff, n);
            for s in 1..=8usize {
                let mask = if s == 8 { u64::MAX } else { (1u64 << (8 * s)) - 1 };
                let base = !mask & 0xdead_beef_0000_0000;
                let packed: Vec<u8> = all.iter().flat_map(|&x| x.to_le_bytes()[..s].to_vec()).collect();
                let query = base | (all.get(n / 2).copied().unwrap_or(0) & mask);
                for extra in [0usize, 3, 16] {
                    let mut bytes = packed.clone();
                    bytes.extend(std::iter::repeat_n(0xa5, extra));
                    for k in [0, 2, 5, 64] {
                        let want: Vec<(u32, usize)> = all
                            .iter()
                            .enumerate()
                            .map(|(i, &x)| (((base | (x & mask)) ^ query).count_ones(), i))
                            .filter(|&(d, _)| d <= k)
                            .collect();
                        let keys = PackedKeys { bytes: &bytes, n, s, base };
                        for cap in TEST_CAPS {
                            let mut got = Vec::new();
                            run_popcnt(cap, WithinPacked { query, keys, k, out: &mut got });
                            assert_eq!(got, want, "n={n} s={s} extra={extra} k={k} cap={cap:?}");
                        }
                        let mut got = Vec::new();
                        within_packed_u64(query, keys, k, &mut got);
                        assert_eq!(got, want);
                    }
                }
            }
        }
    }

    #[test]
    fn packed_keys_of_an_invalid_shape_give_nothing() {
        let bytes = [0u8; 16];
        for (n, s) in [(2, 0), (2, 9), (5, 4)] {
            let mut got = Vec::new();
            within_packed_u64(0, PackedKeys { bytes: &bytes, n, s, base: 0 }, 64, &mut got);
            assert!(got.is_empty(), "n={n} s={s}");
        }
    }
}
