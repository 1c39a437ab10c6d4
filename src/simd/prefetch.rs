//! Software prefetch hints.
//!
//! An index probe visits many buckets, each a short chain of dependent cache misses. A plain
//! early load holds its place in the reorder buffer until its line arrives, so only a few
//! misses are ever in flight; a prefetch instruction retires at once, so the lines of many
//! buckets can be requested together and arrive while other work runs.
//!
//! `_mm_prefetch` never faults and never reads data into the program; it is `unsafe` only
//! because it takes a raw pointer and is a `#[target_feature(enable = "sse")]` function, and
//! SSE is part of the x86-64 baseline. Other targets get no hint (callers are correct either
//! way).

/// Hints the CPU to bring the cache line holding `bytes[at]` into all cache levels; nothing
/// when `at` is out of range.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is in the x86-64 baseline, and a prefetch of any address neither faults
        // nor changes memory; this one points into a live borrow anyway.
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
        // SAFETY: SSE is in the x86-64 baseline, and a prefetch of any address neither faults
        // nor changes memory; this one points into a live borrow anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(r).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_changes_nothing_at_any_index() {
        let bytes: Vec<u8> = (0..=255).collect();
        for at in [0, 1, 63, 64, 255, 256, usize::MAX] {
            prefetch(&bytes, at);
        }
        prefetch(&[], 0);
        prefetch_ref(&bytes);
        prefetch_ref(&0u64);
        assert_eq!(bytes, (0..=255).collect::<Vec<u8>>());
    }
}
