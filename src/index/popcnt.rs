//! Hamming-distance kernels with run-time POPCNT dispatch.
//!
//! The default x86-64 target (SSE2 only) has no POPCNT instruction, so `count_ones` compiles
//! to a shift-and-add bit trick that makes distance scans about 2.5x slower. Each kernel is
//! written once as portable Rust (`*_portable`, `#[inline(always)]`) and compiled a second
//! time inside a `#[target_feature(enable = "popcnt")]` wrapper, where `count_ones` becomes
//! one instruction. Calling a `#[target_feature]` function is `unsafe`, which is why this one
//! module of the index layer allows unsafe code: each call is guarded by an
//! `is_x86_feature_detected!("popcnt")` check just before it (a cached atomic load, amortised
//! over a whole slice), and the wrapped bodies are safe Rust. Kernels work on slices so the
//! dispatch is paid once per bucket or scan, not once per fingerprint.
#![allow(unsafe_code)]

/// Generates the dispatcher, the POPCNT wrapper and the portable body of one kernel that,
/// for every `keys[i]` within Hamming distance `k` of `query`, pushes `(distance, i)` onto
/// `out` in increasing `i`.
macro_rules! within_kernel {
    ($name:ident, $popcnt:ident, $portable:ident, $t:ty) => {
        /// Pushes `(distance, index)` for every key within Hamming distance `k` of `query`,
        /// in index order. Dispatches to a POPCNT build when the CPU has it.
        pub(crate) fn $name(query: $t, keys: &[$t], k: u32, out: &mut Vec<(u32, usize)>) {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("popcnt") {
                    // SAFETY: POPCNT is available on this CPU (checked just above).
                    unsafe { $popcnt(query, keys, k, out) };
                    return;
                }
            }
            $portable(query, keys, k, out);
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "popcnt")]
        fn $popcnt(query: $t, keys: &[$t], k: u32, out: &mut Vec<(u32, usize)>) {
            $portable(query, keys, k, out);
        }

        #[inline(always)]
        fn $portable(query: $t, keys: &[$t], k: u32, out: &mut Vec<(u32, usize)>) {
            for (i, &key) in keys.iter().enumerate() {
                let d = (key ^ query).count_ones();
                if d <= k {
                    out.push((d, i));
                }
            }
        }
    };
}

/// Generates a batch distance kernel: `out[i] = popcount(keys[i] ^ query)`.
macro_rules! distances_kernel {
    ($name:ident, $popcnt:ident, $portable:ident, $t:ty) => {
        /// Writes the Hamming distance of every key to `query` into `out` (the shorter of
        /// the two lengths is used). Dispatches to a POPCNT build when the CPU has it.
        pub(crate) fn $name(query: $t, keys: &[$t], out: &mut [u32]) {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("popcnt") {
                    // SAFETY: POPCNT is available on this CPU (checked just above).
                    unsafe { $popcnt(query, keys, out) };
                    return;
                }
            }
            $portable(query, keys, out);
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "popcnt")]
        fn $popcnt(query: $t, keys: &[$t], out: &mut [u32]) {
            $portable(query, keys, out);
        }

        #[inline(always)]
        fn $portable(query: $t, keys: &[$t], out: &mut [u32]) {
            for (o, &key) in out.iter_mut().zip(keys) {
                *o = (key ^ query).count_ones();
            }
        }
    };
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

/// Pushes `(distance, i)`, in order, for every entry of `keys` within distance `k` of
/// `query`, decoding and comparing in one pass (no key vector is written): every entry with
/// 8 bytes left is one unaligned load and a mask, the last few are copied.
pub(crate) fn within_packed_u64(query: u64, keys: PackedKeys<'_>, k: u32, out: &mut Vec<(u32, usize)>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: POPCNT is available on this CPU (checked just above).
            unsafe { within_packed_u64_popcnt(query, keys, k, out) };
            return;
        }
    }
    within_packed_u64_portable(query, keys, k, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn within_packed_u64_popcnt(query: u64, keys: PackedKeys<'_>, k: u32, out: &mut Vec<(u32, usize)>) {
    within_packed_u64_portable(query, keys, k, out);
}

#[inline(always)]
fn within_packed_u64_portable(query: u64, keys: PackedKeys<'_>, k: u32, out: &mut Vec<(u32, usize)>) {
    let PackedKeys { bytes, n, s, base } = keys;
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
        let d = ((base | (u64::from_le_bytes(a) & mask)) ^ query).count_ones();
        if d <= k {
            out.push((d, i));
        }
    }
}

within_kernel!(within_u64, within_u64_popcnt, within_u64_portable, u64);
within_kernel!(within_u128, within_u128_popcnt, within_u128_portable, u128);
distances_kernel!(distances_u64, distances_u64_popcnt, distances_u64_portable, u64);
distances_kernel!(distances_u128, distances_u128_popcnt, distances_u128_portable, u128);

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn dispatched_kernels_equal_portable() {
        let keys: Vec<u64> = (0..1000).map(|i| if i % 7 == 0 { 0xff ^ (1 << (i % 64)) } else { mix(i) }).collect();
        let wide: Vec<u128> = keys.iter().map(|&x| u128::from(x) << 64 | u128::from(mix(x))).collect();
        for k in [0, 1, 3, 32, 64, 128] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            within_u64(0xff, &keys, k, &mut a);
            within_u64_portable(0xff, &keys, k, &mut b);
            assert_eq!(a, b);
            let want: Vec<(u32, usize)> = keys
                .iter()
                .enumerate()
                .filter_map(|(i, &x)| Some(((x ^ 0xff).count_ones(), i)).filter(|(d, _)| *d <= k))
                .collect();
            assert_eq!(a, want);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            within_u128(wide[3], &wide, k, &mut a);
            within_u128_portable(wide[3], &wide, k, &mut b);
            assert_eq!(a, b);
        }
        // The packed kernel equals decoding every suffix and filtering, at every suffix
        // width, with and without bytes after the suffixes.
        for s in 1..=8usize {
            let mask = if s == 8 { u64::MAX } else { (1u64 << (8 * s)) - 1 };
            let base = !mask & 0xdead_beef_0000_0000;
            let packed: Vec<u8> = keys.iter().flat_map(|&x| x.to_le_bytes()[..s].to_vec()).collect();
            let query = base | (keys[5] & mask);
            for extra in [0usize, 3, 16] {
                let mut bytes = packed.clone();
                bytes.extend(std::iter::repeat_n(0xa5, extra));
                for k in [0, 2, 5, 64] {
                    let mut got = Vec::new();
                    within_packed_u64(query, PackedKeys { bytes: &bytes, n: keys.len(), s, base }, k, &mut got);
                    let mut portable = Vec::new();
                    within_packed_u64_portable(
                        query,
                        PackedKeys { bytes: &bytes, n: keys.len(), s, base },
                        k,
                        &mut portable,
                    );
                    let want: Vec<(u32, usize)> = keys
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| (((base | (x & mask)) ^ query).count_ones(), i))
                        .filter(|&(d, _)| d <= k)
                        .collect();
                    assert!(!want.is_empty());
                    assert_eq!(got, want, "s={s} extra={extra} k={k}");
                    assert_eq!(portable, want);
                }
            }
        }
        let mut d = vec![0u32; keys.len()];
        distances_u64(7, &keys, &mut d);
        assert!(d.iter().zip(&keys).all(|(&d, &x)| d == (x ^ 7).count_ones()));
        let mut d = vec![0u32; wide.len()];
        distances_u128(7, &wide, &mut d);
        assert!(d.iter().zip(&wide).all(|(&d, &x)| d == (x ^ 7).count_ones()));
    }
}
