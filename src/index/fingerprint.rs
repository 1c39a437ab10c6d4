//! [`Fingerprint`]: the two SimHash widths (u64, u128) behind one small sealed trait, so the
//! table design and the probes are written once.

use std::fmt::Debug;

use crate::simd;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for u128 {}
}

/// A SimHash fingerprint or permuted key of `BITS` bits: `u64` for f = 64, `u128` for
/// f = 128. Sealed: only these two types implement it.
pub trait Fingerprint: Copy + Ord + Eq + Debug + Default + Send + Sync + 'static + sealed::Sealed {
    /// The width f in bits.
    const BITS: u32;
    /// The value widened to `u128` (zero-extended).
    fn to_u128(self) -> u128;
    /// The low `BITS` bits of `v`.
    fn from_u128_truncating(v: u128) -> Self;
    /// The Hamming distance popcount(self ^ other).
    fn distance(self, other: Self) -> u32;
    /// The key shifted right by `shift` bits (`shift` < `BITS`; `BITS` gives 0).
    fn shr(self, shift: u32) -> Self;
    /// Pushes `(distance, index)` for every `keys[i]` within distance `k` of `query`, in
    /// index order, through the POPCNT-dispatched kernel.
    fn within(query: Self, keys: &[Self], k: u32, out: &mut Vec<(u32, usize)>);
    /// Writes `distance(query, keys[i])` into `out[i]` (over the shorter length), through
    /// the POPCNT-dispatched kernel: the building block of a ranked full scan.
    fn distances(query: Self, keys: &[Self], out: &mut [u32]);
}

impl Fingerprint for u64 {
    const BITS: u32 = 64;
    #[inline]
    fn to_u128(self) -> u128 {
        u128::from(self)
    }
    #[inline]
    fn from_u128_truncating(v: u128) -> Self {
        v as u64
    }
    #[inline]
    fn distance(self, other: Self) -> u32 {
        (self ^ other).count_ones()
    }
    #[inline]
    fn shr(self, shift: u32) -> Self {
        self.checked_shr(shift).unwrap_or(0)
    }
    #[inline]
    fn within(query: Self, keys: &[Self], k: u32, out: &mut Vec<(u32, usize)>) {
        simd::within_u64(query, keys, k, out);
    }
    #[inline]
    fn distances(query: Self, keys: &[Self], out: &mut [u32]) {
        simd::distances_u64(query, keys, out);
    }
}

impl Fingerprint for u128 {
    const BITS: u32 = 128;
    #[inline]
    fn to_u128(self) -> u128 {
        self
    }
    #[inline]
    fn from_u128_truncating(v: u128) -> Self {
        v
    }
    #[inline]
    fn distance(self, other: Self) -> u32 {
        (self ^ other).count_ones()
    }
    #[inline]
    fn shr(self, shift: u32) -> Self {
        self.checked_shr(shift).unwrap_or(0)
    }
    #[inline]
    fn within(query: Self, keys: &[Self], k: u32, out: &mut Vec<(u32, usize)>) {
        simd::within_u128(query, keys, k, out);
    }
    #[inline]
    fn distances(query: Self, keys: &[Self], out: &mut [u32]) {
        simd::distances_u128(query, keys, out);
    }
}
