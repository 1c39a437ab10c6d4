//! The Hamming filter over a bucket held as plain 64-bit words: `n` keys, each 8 bytes
//! little-endian, one after another (any alignment). It compares whole vectors of keys at a
//! time and looks at single keys only where a lane is within the radius:
//!
//! * AVX-512 VPOPCNTDQ: eight keys per step (XOR, `vpopcntq`, an unsigned compare into a lane
//!   mask); the last partial step loads under a mask, so no key past the end is read.
//! * AVX2 with POPCNT: four keys per step, each byte's bits counted by a 16-entry table
//!   (`vpshufb` on the two nibbles) and summed per lane (`vpsadbw`); the last keys one by one.
//! * Otherwise the scalar loop under [`run_popcnt`] (POPCNT or the plain body).
//!
//! Every tier pushes exactly what the scalar definition pushes, in index order.

use super::dispatch::{Features, Kernel, detected, run_popcnt};

/// Key `i` of `words` (8 bytes LE at `8 * i`; the caller keeps `i` in range).
#[inline(always)]
fn word(words: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&words[8 * i..8 * i + 8]);
    u64::from_le_bytes(a)
}

/// Word `i` of 4-byte little-endian `words` (the caller keeps `i` in range).
#[inline(always)]
fn word32(words: &[u8], i: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&words[4 * i..4 * i + 4]);
    u32::from_le_bytes(a)
}

struct WithinWords32<'a> {
    query: u32,
    words: &'a [u8],
    k: u32,
    out: &'a mut Vec<(u32, usize)>,
}

impl Kernel for WithinWords32<'_> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (i, c) in self.words.chunks_exact(4).enumerate() {
            let mut a = [0u8; 4];
            a.copy_from_slice(c);
            let d = (u32::from_le_bytes(a) ^ self.query).count_ones();
            if d <= self.k {
                self.out.push((d, i));
            }
        }
    }
}

struct WithinWords<'a> {
    query: u64,
    words: &'a [u8],
    k: u32,
    out: &'a mut Vec<(u32, usize)>,
}

impl Kernel for WithinWords<'_> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (i, c) in self.words.chunks_exact(8).enumerate() {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            let d = (u64::from_le_bytes(a) ^ self.query).count_ones();
            if d <= self.k {
                self.out.push((d, i));
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{word, word32};

    /// [`within_avx512`] over 4-byte words: sixteen per step.
    #[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
    pub(super) fn within32_avx512(query: u32, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
        let n = words.len() / 4;
        let q = _mm512_set1_epi32(query as i32);
        let radius = _mm512_set1_epi32(k.min(32) as i32);
        let mut i = 0;
        while i < n {
            let left = n - i;
            let lanes: __mmask16 = if left >= 16 { 0xffff } else { (1u16 << left) - 1 };
            // SAFETY: lane j is loaded only when i + j < n, and word i + j lies at bytes
            // 4(i + j)..4(i + j) + 4 <= 4n <= words.len(); masked-off lanes are not accessed
            // (AVX-512 masked loads suppress their faults). The load is unaligned.
            let v = unsafe { _mm512_maskz_loadu_epi32(lanes, words.as_ptr().add(4 * i).cast::<i32>()) };
            let d = _mm512_popcnt_epi32(_mm512_xor_si512(v, q));
            let mut m = _mm512_mask_cmple_epu32_mask(lanes, d, radius);
            while m != 0 {
                let j = i + m.trailing_zeros() as usize;
                out.push(((word32(words, j) ^ query).count_ones(), j));
                m &= m - 1;
            }
            i += 16;
        }
    }

    /// [`within_avx2`] over 4-byte words: eight per step, each lane's byte counts summed by
    /// two multiply-adds, then the last words one by one.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) fn within32_avx2(query: u32, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
        let n = words.len() / 4;
        let table = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let q = _mm256_set1_epi32(query as i32);
        let radius = _mm256_set1_epi32(k.min(32) as i32);
        let (ones8, ones16) = (_mm256_set1_epi8(1), _mm256_set1_epi16(1));
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n, so bytes 4i..4i + 32 lie within words (4n <= its length);
            // the load is unaligned.
            let v = unsafe { _mm256_loadu_si256(words.as_ptr().add(4 * i).cast::<__m256i>()) };
            let x = _mm256_xor_si256(v, q);
            let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(x, low));
            let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16::<4>(x), low));
            let d = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_add_epi8(lo, hi), ones8), ones16);
            let over = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(d, radius)));
            let mut m = !over as u32 & 0xff;
            while m != 0 {
                let j = i + m.trailing_zeros() as usize;
                out.push(((word32(words, j) ^ query).count_ones(), j));
                m &= m - 1;
            }
            i += 8;
        }
        for j in i..n {
            let d = (word32(words, j) ^ query).count_ones();
            if d <= k {
                out.push((d, j));
            }
        }
    }

    /// Eight keys per step; the tail step's lanes past the end are neither loaded nor kept.
    #[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
    pub(super) fn within_avx512(query: u64, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
        let n = words.len() / 8;
        let q = _mm512_set1_epi64(query as i64);
        let radius = _mm512_set1_epi64(i64::from(k));
        let mut i = 0;
        while i < n {
            let left = n - i;
            let lanes: __mmask8 = if left >= 8 { 0xff } else { (1u8 << left) - 1 };
            // SAFETY: lane j is loaded only when i + j < n, and key i + j lies at bytes
            // 8(i + j)..8(i + j) + 8 <= 8n <= words.len(); masked-off lanes are not accessed
            // (AVX-512 masked loads suppress their faults). The load is unaligned.
            let v = unsafe { _mm512_maskz_loadu_epi64(lanes, words.as_ptr().add(8 * i).cast::<i64>()) };
            let d = _mm512_popcnt_epi64(_mm512_xor_si512(v, q));
            let mut m = _mm512_mask_cmple_epu64_mask(lanes, d, radius);
            while m != 0 {
                let j = i + m.trailing_zeros() as usize;
                out.push(((word(words, j) ^ query).count_ones(), j));
                m &= m - 1;
            }
            i += 8;
        }
    }

    /// Four keys per step by nibble table, then the last keys one by one.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) fn within_avx2(query: u64, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
        let n = words.len() / 8;
        let table = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let q = _mm256_set1_epi64x(query as i64);
        let radius = _mm256_set1_epi64x(i64::from(k));
        let zero = _mm256_setzero_si256();
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: i + 4 <= n, so bytes 8i..8i + 32 lie within words (8n <= its length);
            // the load is unaligned.
            let v = unsafe { _mm256_loadu_si256(words.as_ptr().add(8 * i).cast::<__m256i>()) };
            let x = _mm256_xor_si256(v, q);
            let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(x, low));
            let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16::<4>(x), low));
            let d = _mm256_sad_epu8(_mm256_add_epi8(lo, hi), zero);
            let over = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(d, radius)));
            let mut m = !over as u32 & 0xf;
            while m != 0 {
                let j = i + m.trailing_zeros() as usize;
                out.push(((word(words, j) ^ query).count_ones(), j));
                m &= m - 1;
            }
            i += 4;
        }
        for j in i..n {
            let d = (word(words, j) ^ query).count_ones();
            if d <= k {
                out.push((d, j));
            }
        }
    }
}

/// The AVX-512 tier's features.
#[cfg(target_arch = "x86_64")]
const WIDE: Features = Features::parse("avx512f,avx512vpopcntdq,popcnt");
/// The AVX2 tier's features.
#[cfg(target_arch = "x86_64")]
const NARROW: Features = Features::parse("avx2,popcnt");

/// [`within_words_u64`] with the tiers limited to `cap` (tests reach each tier by it).
fn within_words_capped(cap: Features, query: u64, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
    #[cfg(target_arch = "x86_64")]
    {
        let have = detected().intersection(cap);
        if have.contains(WIDE) {
            // SAFETY: `have` is within `detected()`, so the CPU has every feature of WIDE,
            // which is the feature string `within_avx512` is compiled with.
            return unsafe { x86::within_avx512(query, words, k, out) };
        }
        if have.contains(NARROW) {
            // SAFETY: as above, for NARROW and `within_avx2`.
            return unsafe { x86::within_avx2(query, words, k, out) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = detected;
    run_popcnt(cap, WithinWords { query, words, k, out });
}

/// [`within_words_u32`] with the tiers limited to `cap`.
fn within_words32_capped(cap: Features, query: u32, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
    #[cfg(target_arch = "x86_64")]
    {
        let have = detected().intersection(cap);
        if have.contains(WIDE) {
            // SAFETY: `have` is within `detected()`, so the CPU has every feature of WIDE,
            // which is the feature string `within32_avx512` is compiled with.
            return unsafe { x86::within32_avx512(query, words, k, out) };
        }
        if have.contains(NARROW) {
            // SAFETY: as above, for NARROW and `within32_avx2`.
            return unsafe { x86::within32_avx2(query, words, k, out) };
        }
    }
    run_popcnt(cap, WithinWords32 { query, words, k, out });
}

/// [`within_words_u64`] over 4-byte little-endian words (a trailing part of fewer than 4
/// bytes is ignored).
pub(crate) fn within_words_u32(query: u32, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
    within_words32_capped(Features::ALL, query, words, k, out);
}

/// Pushes `(distance, i)`, in order, for every key `i` of `words` (8-byte little-endian
/// keys; a trailing part of fewer than 8 bytes is ignored) within Hamming distance `k` of
/// `query`, on the widest tier the CPU has.
pub(crate) fn within_words_u64(query: u64, words: &[u8], k: u32, out: &mut Vec<(u32, usize)>) {
    within_words_capped(Features::ALL, query, words, k, out);
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::TEST_CAPS;
    use super::super::test_rng::Rng;
    use super::*;

    /// Every tier equals the scalar definition for every length 0..=67 (each vector width's
    /// full steps and every tail), at radii from 0 to 64, with keys at every distance.
    #[test]
    fn every_tier_equals_the_definition_at_every_length() {
        let mut rng = Rng(0x3377);
        for n in 0..=67usize {
            for round in 0..4 {
                let query = rng.next();
                let keys: Vec<u64> = (0..n)
                    .map(|i| match (i + round) % 4 {
                        0 => query ^ (1 << rng.below(64)) ^ (rng.next() & rng.next() & rng.next() & rng.next()),
                        1 => query,
                        2 => !query,
                        _ => rng.next(),
                    })
                    .collect();
                let mut words: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
                // A ragged end (fewer than 8 bytes) is not a key.
                words.extend(std::iter::repeat_n(0u8, round));
                for k in [0u32, 1, 3, 5, 31, 63, 64] {
                    let want: Vec<(u32, usize)> = keys
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| ((x ^ query).count_ones(), i))
                        .filter(|&(d, _)| d <= k)
                        .collect();
                    for cap in TEST_CAPS {
                        let mut got = vec![(99, 99)];
                        within_words_capped(cap, query, &words, k, &mut got);
                        assert_eq!(got[0], (99, 99), "appends");
                        assert_eq!(&got[1..], &want[..], "n={n} k={k} cap={cap:?}");
                    }
                    // The same keys as pairs of 4-byte words, each half on its own.
                    for half in 0..2 {
                        let narrow: Vec<u8> =
                            words[..8 * n].chunks_exact(4).skip(half).step_by(2).flatten().copied().collect();
                        let q32 = (query >> (32 * half)) as u32;
                        let want32: Vec<(u32, usize)> = keys
                            .iter()
                            .enumerate()
                            .map(|(i, &x)| (((x >> (32 * half)) as u32 ^ q32).count_ones(), i))
                            .filter(|&(d, _)| d <= k)
                            .collect();
                        for cap in TEST_CAPS {
                            let mut got = vec![(99, 99)];
                            within_words32_capped(cap, q32, &narrow, k, &mut got);
                            assert_eq!(&got[1..], &want32[..], "u32 half {half} n={n} k={k} cap={cap:?}");
                        }
                    }
                    // From an odd start: the kernels do not assume alignment.
                    let mut shifted = vec![0xa5u8];
                    shifted.extend_from_slice(&words);
                    let mut got = Vec::new();
                    within_words_u64(query, &shifted[1..], k, &mut got);
                    assert_eq!(got, want, "n={n} k={k} unaligned");
                }
            }
        }
    }
}
