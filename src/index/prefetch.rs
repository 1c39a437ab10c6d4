//! Software prefetch for index probes.
//!
//! An LSH probe at t = 0.8 visits 39 bands, and each visit is a short chain of dependent
//! cache misses (the group's slot, the chunk's header, the guessed entry). The probe walks
//! the bands in passes so the misses of different bands are independent, but a plain early
//! load still holds its place in the reorder buffer until the line arrives, so only a few
//! bands' misses were ever in flight. A prefetch instruction retires at once: the lines of
//! all bands are requested together and arrive while the next pass runs.
//!
//! `_mm_prefetch` never faults and never reads data into the program; it is `unsafe` only
//! because it is a `#[target_feature(enable = "sse")]` function, and SSE is part of the
//! x86-64 baseline. Those calls are the only unsafe lines of this module. Other targets get no
//! hint (the probe is correct either way).
#![allow(unsafe_code)]

/// Hints the CPU to bring the cache line holding `bytes[at]` into all cache levels; nothing
/// when `at` is out of range.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is in the x86-64 baseline; a prefetch has no effect on memory.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(b).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// Hints the CPU to bring the cache line holding `*r` into all cache levels.
#[inline(always)]
pub(crate) fn prefetch_ref<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is in the x86-64 baseline; a prefetch has no effect on memory.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(r).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
