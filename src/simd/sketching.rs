//! Sketch-building kernels: MinHash's min over affine permutations (64-bit and 32-bit lanes)
//! and SimHash's signed bit counters, dispatched to AVX-512 / AVX2 builds.
//!
//! With SSE2 only, the 64-bit multiplies of the permutation family stay scalar; AVX-512DQ has
//! a vector 64-bit multiply and AVX2 at least wide adds and compares. 32-bit lanes multiply
//! in every tier (VPMULLD: sixteen lanes under AVX-512F, eight under AVX2). The token mixer
//! is the caller's (the sketch layer owns the hash family); it is inlined into every variant.

use super::dispatch::{Features, Kernel, run_avx2, run_mul32, run_mul64};

/// Tokens mixed per chunk; the chunk lives on the stack.
const CHUNK: usize = 256;
/// Permutation slots kept in registers while a chunk of tokens streams past.
const BLOCK: usize = 32;

struct MinhashUpdate<'a, M, R> {
    mins: &'a mut [u64],
    a: &'a [u64],
    b: &'a [u64],
    pre: u64,
    tokens: &'a [u64],
    mix: M,
    reduce: R,
}

impl<M: Fn(u64) -> u64, R: Fn(u64) -> u64> Kernel for MinhashUpdate<'_, M, R> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let Self { mins, a, b, pre, tokens, mix, reduce } = self;
        let k = mins.len().min(a.len()).min(b.len());
        let mut xs = [0u64; CHUNK];
        for chunk in tokens.chunks(CHUNK) {
            let xs = &mut xs[..chunk.len()];
            for (x, &h) in xs.iter_mut().zip(chunk) {
                *x = mix(h ^ pre);
            }
            let mut start = 0;
            while start + BLOCK <= k {
                let mut m = [0u64; BLOCK];
                let mut aa = [0u64; BLOCK];
                let mut bb = [0u64; BLOCK];
                m.copy_from_slice(&mins[start..start + BLOCK]);
                aa.copy_from_slice(&a[start..start + BLOCK]);
                bb.copy_from_slice(&b[start..start + BLOCK]);
                for &x in xs.iter() {
                    for j in 0..BLOCK {
                        m[j] = m[j].min(reduce(aa[j].wrapping_mul(x).wrapping_add(bb[j])));
                    }
                }
                mins[start..start + BLOCK].copy_from_slice(&m);
                start += BLOCK;
            }
            for j in start..k {
                let mut m = mins[j];
                for &x in xs.iter() {
                    m = m.min(reduce(a[j].wrapping_mul(x).wrapping_add(b[j])));
                }
                mins[j] = m;
            }
        }
    }
}

/// For every slot i below the shortest of the three lengths:
/// `mins[i] = min(mins[i], min over tokens h of a[i] * mix(h ^ pre) + b[i])` (mod 2^64).
#[inline]
pub(crate) fn minhash_update(
    mins: &mut [u64],
    a: &[u64],
    b: &[u64],
    pre: u64,
    tokens: &[u64],
    mix: impl Fn(u64) -> u64,
) {
    run_mul64(Features::ALL, MinhashUpdate { mins, a, b, pre, tokens, mix, reduce: |v| v });
}

/// [`minhash_update`] with `reduce` applied to each slot value before the minimum, for
/// families whose slot value is a function of a 64-bit affine map (no pre-mix key):
/// `mins[i] = min(mins[i], min over tokens h of reduce(a[i] * mix(h) + b[i]))` (mod 2^64).
#[inline]
pub(crate) fn minhash_update_reduced(
    mins: &mut [u64],
    a: &[u64],
    b: &[u64],
    tokens: &[u64],
    mix: impl Fn(u64) -> u64,
    reduce: impl Fn(u64) -> u64,
) {
    run_mul64(Features::ALL, MinhashUpdate { mins, a, b, pre: 0, tokens, mix, reduce });
}

/// Slots of the 32-bit kernel kept in registers while a chunk of tokens streams past.
const BLOCK32: usize = 64;

struct Minhash32Update<'a, M, R> {
    mins: &'a mut [u32],
    a: &'a [u32],
    b: &'a [u32],
    tokens: &'a [u64],
    mix: M,
    reduce: R,
}

impl<M: Fn(u64) -> u32, R: Fn(u32) -> u32> Kernel for Minhash32Update<'_, M, R> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let Self { mins, a, b, tokens, mix, reduce } = self;
        let k = mins.len().min(a.len()).min(b.len());
        let mut xs = [0u32; CHUNK];
        for chunk in tokens.chunks(CHUNK) {
            let xs = &mut xs[..chunk.len()];
            for (x, &h) in xs.iter_mut().zip(chunk) {
                *x = mix(h);
            }
            let mut start = 0;
            while start + BLOCK32 <= k {
                let mut m = [0u32; BLOCK32];
                let mut aa = [0u32; BLOCK32];
                let mut bb = [0u32; BLOCK32];
                m.copy_from_slice(&mins[start..start + BLOCK32]);
                aa.copy_from_slice(&a[start..start + BLOCK32]);
                bb.copy_from_slice(&b[start..start + BLOCK32]);
                for &x in xs.iter() {
                    for j in 0..BLOCK32 {
                        m[j] = m[j].min(reduce(aa[j].wrapping_mul(x).wrapping_add(bb[j])));
                    }
                }
                mins[start..start + BLOCK32].copy_from_slice(&m);
                start += BLOCK32;
            }
            for j in start..k {
                let mut m = mins[j];
                for &x in xs.iter() {
                    m = m.min(reduce(a[j].wrapping_mul(x).wrapping_add(b[j])));
                }
                mins[j] = m;
            }
        }
    }
}

/// The 32-bit lane form of [`minhash_update`], for families whose slot value is a function
/// of a 32-bit affine map: for every slot i below the shortest of the three lengths,
/// `mins[i] = min(mins[i], min over tokens h of reduce(a[i] * mix(h) + b[i]))` (mod 2^32).
#[inline]
pub(crate) fn minhash32_update(
    mins: &mut [u32],
    a: &[u32],
    b: &[u32],
    tokens: &[u64],
    mix: impl Fn(u64) -> u32,
    reduce: impl Fn(u32) -> u32,
) {
    run_mul32(Features::ALL, Minhash32Update { mins, a, b, tokens, mix, reduce });
}

struct AffineMix<'a, M> {
    out: &'a mut [u64],
    tokens: &'a [u64],
    pre: u64,
    a: u64,
    b: u64,
    mix: M,
}

impl<M: Fn(u64) -> u64> Kernel for AffineMix<'_, M> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let Self { out, tokens, pre, a, b, mix } = self;
        for (o, &h) in out.iter_mut().zip(tokens) {
            *o = a.wrapping_mul(mix(h ^ pre)).wrapping_add(b);
        }
    }
}

/// One affine permutation of every token, for sketches that hash each token once (OPH):
/// `out[i] = a * mix(tokens[i] ^ pre) + b` (mod 2^64) for i below the shorter length.
#[inline]
pub(crate) fn affine_mix(out: &mut [u64], tokens: &[u64], pre: u64, a: u64, b: u64, mix: impl Fn(u64) -> u64) {
    run_mul64(Features::ALL, AffineMix { out, tokens, pre, a, b, mix });
}

/// `SIGN_LUT[byte][j]` is +1 when bit j of `byte` is set, else -1.
static SIGN_LUT: [[i32; 8]; 256] = {
    let mut t = [[0i32; 8]; 256];
    let mut v = 0;
    while v < 256 {
        let mut j = 0;
        while j < 8 {
            t[v][j] = if (v >> j) & 1 == 1 { 1 } else { -1 };
            j += 1;
        }
        v += 1;
    }
    t
};

struct SimhashAccumulate<'a, M> {
    counters: &'a mut [i64],
    keys: &'a [u64],
    tokens: &'a [u64],
    mix: M,
}

impl<M: Fn(u64) -> u64> Kernel for SimhashAccumulate<'_, M> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let Self { counters, keys, tokens, mix } = self;
        // i32 lanes vectorise twice as wide as i64; flush before they could overflow.
        const FLUSH: usize = 1 << 30;
        for (w, &key) in keys.iter().enumerate() {
            for part in tokens.chunks(FLUSH) {
                let mut acc = [[0i32; 8]; 8];
                for &h in part {
                    let g = mix(h ^ key).to_le_bytes();
                    for (byte, lane) in g.iter().zip(acc.iter_mut()) {
                        let s = &SIGN_LUT[usize::from(*byte)];
                        for j in 0..8 {
                            lane[j] += s[j];
                        }
                    }
                }
                for (i, lane) in acc.iter().enumerate() {
                    for (j, v) in lane.iter().enumerate() {
                        counters[64 * w + 8 * i + j] += i64::from(*v);
                    }
                }
            }
        }
    }
}

/// Signed per-bit counters for SimHash: `counters[64 * w + j] += +1` when bit j of
/// `mix(h ^ keys[w])` is set and `-1` when it is clear, for every token h (with repeats).
/// `counters` must hold at least `64 * keys.len()` entries.
#[inline]
pub(crate) fn simhash_accumulate(counters: &mut [i64], keys: &[u64], tokens: &[u64], mix: impl Fn(u64) -> u64) {
    run_avx2(Features::ALL, SimhashAccumulate { counters, keys, tokens, mix });
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::TEST_CAPS;
    use super::super::test_rng::{Rng, mix};
    use super::*;

    #[test]
    fn minhash_every_tier_equals_the_scalar_reference() {
        let mut rng = Rng(1);
        // Slot counts around the block width, token counts around the chunk length.
        for k in [0usize, 1, 31, 32, 33, 75, 128] {
            for n in [0usize, 1, 255, 256, 257, 1000] {
                let a: Vec<u64> = (0..k).map(|_| rng.next() | 1).collect();
                let b: Vec<u64> = (0..k).map(|_| rng.next()).collect();
                let tokens: Vec<u64> = (0..n).map(|_| rng.next()).collect();
                let pre = rng.next();
                let start: Vec<u64> = (0..k).map(|i| if i % 4 == 0 { rng.next() } else { u64::MAX }).collect();
                let want: Vec<u64> = (0..k)
                    .map(|j| {
                        let m = tokens.iter().map(|&h| a[j].wrapping_mul(mix(h ^ pre)).wrapping_add(b[j])).min();
                        m.map_or(start[j], |m| m.min(start[j]))
                    })
                    .collect();
                for cap in TEST_CAPS {
                    let mut mins = start.clone();
                    let reduce = |v| v;
                    run_mul64(cap, MinhashUpdate { mins: &mut mins, a: &a, b: &b, pre, tokens: &tokens, mix, reduce });
                    assert_eq!(mins, want, "k={k} n={n} cap={cap:?}");
                }
                // A reduction that is not monotone (the minimum must be taken after it).
                let reduce = |v: u64| v.rotate_left(7) & 0xFFFF_FFFF;
                let want_reduced: Vec<u64> = (0..k)
                    .map(|j| {
                        let m = tokens.iter().map(|&h| reduce(a[j].wrapping_mul(mix(h)).wrapping_add(b[j]))).min();
                        m.map_or(start[j], |m| m.min(start[j]))
                    })
                    .collect();
                for cap in TEST_CAPS {
                    let mut mins = start.clone();
                    run_mul64(
                        cap,
                        MinhashUpdate { mins: &mut mins, a: &a, b: &b, pre: 0, tokens: &tokens, mix, reduce },
                    );
                    assert_eq!(mins, want_reduced, "reduced k={k} n={n} cap={cap:?}");
                }
                let mut mins = start.clone();
                minhash_update_reduced(&mut mins, &a, &b, &tokens, mix, reduce);
                assert_eq!(mins, want_reduced);
                let mut mins = start.clone();
                minhash_update(&mut mins, &a, &b, pre, &tokens, mix);
                assert_eq!(mins, want);
            }
        }
    }

    #[test]
    fn minhash32_every_tier_equals_the_scalar_reference() {
        let mut rng = Rng(4);
        let mix32 = |h: u64| (mix(h) >> 32) as u32;
        // Mod 2^32 - 5 as one compare-free step (a reduction that is not the identity).
        let reduce = |v: u32| v.min(v.wrapping_sub(u32::MAX - 4));
        for k in [0usize, 1, 63, 64, 65, 128, 250] {
            for n in [0usize, 1, 255, 256, 257, 1000] {
                let a: Vec<u32> = (0..k).map(|_| rng.next() as u32 | 1).collect();
                let b: Vec<u32> = (0..k).map(|_| rng.next() as u32).collect();
                let tokens: Vec<u64> = (0..n).map(|_| rng.next()).collect();
                let start: Vec<u32> = (0..k).map(|i| if i % 4 == 0 { rng.next() as u32 } else { u32::MAX }).collect();
                let want: Vec<u32> = (0..k)
                    .map(|j| {
                        let m = tokens.iter().map(|&h| reduce(a[j].wrapping_mul(mix32(h)).wrapping_add(b[j]))).min();
                        m.map_or(start[j], |m| m.min(start[j]))
                    })
                    .collect();
                for cap in TEST_CAPS {
                    let mut mins = start.clone();
                    run_mul32(
                        cap,
                        Minhash32Update { mins: &mut mins, a: &a, b: &b, tokens: &tokens, mix: mix32, reduce },
                    );
                    assert_eq!(mins, want, "k={k} n={n} cap={cap:?}");
                }
                let mut mins = start.clone();
                minhash32_update(&mut mins, &a, &b, &tokens, mix32, reduce);
                assert_eq!(mins, want);
            }
        }
    }

    #[test]
    fn affine_mix_every_tier_equals_the_scalar_reference() {
        let mut rng = Rng(3);
        for n in [0usize, 1, 7, 8, 9, 255, 256, 1000] {
            let tokens: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            let (pre, a, b) = (rng.next(), rng.next() | 1, rng.next());
            let want: Vec<u64> = tokens.iter().map(|&h| a.wrapping_mul(mix(h ^ pre)).wrapping_add(b)).collect();
            for cap in TEST_CAPS {
                let mut out = vec![0; n];
                run_mul64(cap, AffineMix { out: &mut out, tokens: &tokens, pre, a, b, mix });
                assert_eq!(out, want, "n={n} cap={cap:?}");
            }
            let mut out = vec![0; n];
            affine_mix(&mut out, &tokens, pre, a, b, mix);
            assert_eq!(out, want);
        }
    }

    #[test]
    fn minhash_uses_the_shortest_length() {
        let mut mins = vec![u64::MAX; 40];
        minhash_update(&mut mins, &[3; 35], &[5; 33], 0, &[7, 8], |x| x);
        assert!(mins[..33].iter().all(|&m| m == 3 * 7 + 5));
        assert!(mins[33..].iter().all(|&m| m == u64::MAX));
    }

    #[test]
    fn simhash_every_tier_equals_the_scalar_reference() {
        let mut rng = Rng(2);
        for words in [1usize, 2] {
            for n in [0usize, 1, 7, 8, 9, 500] {
                // Few distinct values: repeats must count once each.
                let tokens: Vec<u64> = (0..n).map(|_| rng.next() % 97).collect();
                let keys: Vec<u64> = (0..words).map(|_| rng.next()).collect();
                let start: Vec<i64> = (0..64 * words).map(|_| (rng.next() % 11) as i64 - 5).collect();
                let want: Vec<i64> = (0..64 * words)
                    .map(|i| {
                        let (w, j) = (i / 64, i % 64);
                        let sum: i64 =
                            tokens.iter().map(|&h| if (mix(h ^ keys[w]) >> j) & 1 == 1 { 1 } else { -1 }).sum();
                        start[i] + sum
                    })
                    .collect();
                for cap in TEST_CAPS {
                    let mut c = start.clone();
                    run_avx2(cap, SimhashAccumulate { counters: &mut c, keys: &keys, tokens: &tokens, mix });
                    assert_eq!(c, want, "words={words} n={n} cap={cap:?}");
                }
                let mut c = start.clone();
                simhash_accumulate(&mut c, &keys, &tokens, mix);
                assert_eq!(c, want);
            }
        }
    }
}
