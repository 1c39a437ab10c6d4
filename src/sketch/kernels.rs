//! Hot loops, with run-time CPU feature dispatch.
//!
//! The default x86-64 target enables only SSE2, which leaves the 64-bit multiplies of the
//! permutation family unvectorised. Each kernel here is written once as portable Rust
//! (`*_portable`) and compiled a second time inside a `#[target_feature]` wrapper; the
//! dispatcher picks the widest variant the running CPU supports. Calling a
//! `#[target_feature]` function is `unsafe`, which is why this one module allows unsafe code:
//! each call is guarded by the matching `is_x86_feature_detected!` check just before it, and
//! the wrapped bodies themselves are safe Rust. Measured gain: see `benches/sketch.rs`.
#![allow(unsafe_code)]

use super::hash::fmix64;

/// Tokens pre-mixed per chunk; the chunk lives on the stack.
const CHUNK: usize = 256;
/// Permutation slots kept in registers while a chunk of tokens streams past.
const BLOCK: usize = 32;

/// For every slot i: `mins[i] = min(mins[i], min over tokens of a[i] * fmix64(h ^ pre) + b[i])`.
pub(crate) fn minhash_update(mins: &mut [u64], a: &[u64], b: &[u64], pre: u64, tokens: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") {
            // SAFETY: AVX-512F and AVX-512DQ are available on this CPU (checked above).
            unsafe { minhash_update_avx512(mins, a, b, pre, tokens) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available on this CPU (checked above).
            unsafe { minhash_update_avx2(mins, a, b, pre, tokens) };
            return;
        }
    }
    minhash_update_portable(mins, a, b, pre, tokens);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
fn minhash_update_avx512(mins: &mut [u64], a: &[u64], b: &[u64], pre: u64, tokens: &[u64]) {
    minhash_update_portable(mins, a, b, pre, tokens);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn minhash_update_avx2(mins: &mut [u64], a: &[u64], b: &[u64], pre: u64, tokens: &[u64]) {
    minhash_update_portable(mins, a, b, pre, tokens);
}

#[inline(always)]
fn minhash_update_portable(mins: &mut [u64], a: &[u64], b: &[u64], pre: u64, tokens: &[u64]) {
    let k = mins.len().min(a.len()).min(b.len());
    let mut xs = [0u64; CHUNK];
    for chunk in tokens.chunks(CHUNK) {
        let xs = &mut xs[..chunk.len()];
        for (x, &h) in xs.iter_mut().zip(chunk) {
            *x = fmix64(h ^ pre);
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
                    m[j] = m[j].min(aa[j].wrapping_mul(x).wrapping_add(bb[j]));
                }
            }
            mins[start..start + BLOCK].copy_from_slice(&m);
            start += BLOCK;
        }
        for j in start..k {
            let mut m = mins[j];
            for &x in xs.iter() {
                m = m.min(a[j].wrapping_mul(x).wrapping_add(b[j]));
            }
            mins[j] = m;
        }
    }
}

/// Signed per-bit counters for SimHash: `counters[64 * w + j] += +1` when bit j of
/// `fmix64(h ^ keys[w])` is set and `-1` when it is clear, for every token h (with repeats).
pub(crate) fn simhash_accumulate(counters: &mut [i64], keys: &[u64], tokens: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available on this CPU (checked above).
            unsafe { simhash_accumulate_avx2(counters, keys, tokens) };
            return;
        }
    }
    simhash_accumulate_portable(counters, keys, tokens);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn simhash_accumulate_avx2(counters: &mut [i64], keys: &[u64], tokens: &[u64]) {
    simhash_accumulate_portable(counters, keys, tokens);
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

#[inline(always)]
fn simhash_accumulate_portable(counters: &mut [i64], keys: &[u64], tokens: &[u64]) {
    // i32 lanes vectorise twice as wide as i64; flush before they could overflow.
    const FLUSH: usize = 1 << 30;
    for (w, &key) in keys.iter().enumerate() {
        for part in tokens.chunks(FLUSH) {
            let mut acc = [[0i32; 8]; 8];
            for &h in part {
                let g = fmix64(h ^ key).to_le_bytes();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatched_minhash_equals_scalar_reference() {
        let k = 75; // two full blocks plus a remainder
        let a: Vec<u64> = (0..k as u64).map(|i| fmix64(i + 1) | 1).collect();
        let b: Vec<u64> = (0..k as u64).map(|i| fmix64(i + 1000)).collect();
        let tokens: Vec<u64> = (0..1000u64).map(|i| fmix64(i ^ 0xabc)).collect();
        let mut mins = vec![u64::MAX; k];
        minhash_update(&mut mins, &a, &b, 99, &tokens);
        for j in 0..k {
            let want = tokens.iter().map(|&h| a[j].wrapping_mul(fmix64(h ^ 99)).wrapping_add(b[j])).min();
            assert_eq!(Some(mins[j]), want);
        }
    }

    #[test]
    fn dispatched_simhash_equals_scalar_reference() {
        let tokens: Vec<u64> = (0..500u64).map(|i| fmix64(i) % 97).collect();
        let keys = [5u64, 6u64];
        let mut c = vec![0i64; 128];
        simhash_accumulate(&mut c, &keys, &tokens);
        for w in 0..2 {
            for j in 0..64 {
                let want: i64 = tokens.iter().map(|&h| if (fmix64(h ^ keys[w]) >> j) & 1 == 1 { 1 } else { -1 }).sum();
                assert_eq!(c[64 * w + j], want);
            }
        }
    }
}
