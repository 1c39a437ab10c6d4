//! The OPH bin scan's CPU dispatch: [`scan_page_portable`] run through
//! [`crate::simd::run_byte_compare`], which compiles it again for AVX-512BW or AVX2 (each
//! with POPCNT for the empty-bin bitmaps) and calls the widest variant the CPU supports.
//! Measured with `cargo run --release --example query_figures`.

use crate::simd::{Features, Kernel, run_byte_compare};
use crate::sketch::error::SketchError;
use crate::sketch::estimate::Estimate;

use super::scan::{BinColumns, OphProbe, Pruning, ScanCounters, scan_page_portable};

/// One call of [`scan_page_portable`], as a kernel.
struct ScanPage<'a, C, E> {
    probe: &'a OphProbe,
    page: &'a C,
    prune: &'a Pruning,
    threshold: Option<f64>,
    level: f64,
    counters: &'a mut ScanCounters,
    emit: E,
}

impl<C: BinColumns, E: FnMut(usize, Estimate)> Kernel for ScanPage<'_, C, E> {
    type Output = Result<(), SketchError>;
    #[inline(always)]
    fn run(self) -> Self::Output {
        scan_page_portable(self.probe, self.page, self.prune, self.threshold, self.level, self.counters, self.emit)
    }
}

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
    run_byte_compare(Features::ALL, ScanPage { probe, page, prune, threshold, level, counters, emit })
}
