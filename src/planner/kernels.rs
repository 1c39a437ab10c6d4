//! Run-time CPU dispatch for the OPH bin scan.
//!
//! The default x86-64 target compiles the column compare with SSE2 only and `count_ones`
//! without POPCNT (a bit-twiddling sequence per word). The same portable body
//! (`scan_page_portable`) is compiled again inside `#[target_feature]` wrappers (AVX-512BW or
//! AVX2, each with POPCNT for the empty-bin bitmaps) and the widest variant the running CPU
//! supports is called. Calling a `#[target_feature]` function
//! is `unsafe`, hence this module's exception: every call is guarded by the matching
//! `is_x86_feature_detected!` check immediately before it; the wrapped body is safe Rust.
//! Measured with `cargo run --release --example query_figures`.
#![allow(unsafe_code)]

use crate::sketch::error::SketchError;
use crate::sketch::estimate::Estimate;

use super::scan::{BinColumns, OphProbe, Pruning, ScanCounters, scan_page_portable};

/// Scans one page: calls `emit(row index, estimate)` for every live row whose estimate is
/// `>= threshold` (every live row when `threshold` is None), running the widest vector
/// variant of [`scan_page_portable`] the CPU supports.
pub(crate) fn scan_page<C: BinColumns>(
    probe: &OphProbe,
    page: &C,
    prune: &Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &mut ScanCounters,
    emit: impl FnMut(usize, Estimate),
) -> Result<(), SketchError> {
    #[cfg(target_arch = "x86_64")]
    {
        let popcnt = std::arch::is_x86_feature_detected!("popcnt");
        if popcnt && std::arch::is_x86_feature_detected!("avx512bw") && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F, AVX-512BW and POPCNT are available on this CPU (checked above).
            return unsafe { scan_avx512(probe, page, prune, threshold, level, counters, emit) };
        }
        if popcnt && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 and POPCNT are available on this CPU (checked above).
            return unsafe { scan_avx2(probe, page, prune, threshold, level, counters, emit) };
        }
    }
    scan_page_portable(probe, page, prune, threshold, level, counters, emit)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
fn scan_avx512<C: BinColumns>(
    probe: &OphProbe,
    page: &C,
    prune: &Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &mut ScanCounters,
    emit: impl FnMut(usize, Estimate),
) -> Result<(), SketchError> {
    scan_page_portable(probe, page, prune, threshold, level, counters, emit)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn scan_avx2<C: BinColumns>(
    probe: &OphProbe,
    page: &C,
    prune: &Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &mut ScanCounters,
    emit: impl FnMut(usize, Estimate),
) -> Result<(), SketchError> {
    scan_page_portable(probe, page, prune, threshold, level, counters, emit)
}
