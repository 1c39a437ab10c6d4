//! Memory hints: transparent huge pages for long-lived buffers that probes read at random.
//!
//! A warm probe reads a few lines each from buffers spread over tens to hundreds of MiB (the
//! probe cache's slabs). Backed by 4 KiB pages, nearly every such read also misses the TLB
//! and walks the page table; backed by 2 MiB pages, a few hundred TLB entries cover them all.
//! Linux backs anonymous memory with huge pages only where asked when its transparent huge
//! pages are set to `madvise` (the default of many distributions); `always` needs no advice,
//! `never` ignores it. The advice changes how the kernel backs the pages, never what they
//! hold, so callers are correct whether it is taken or not.
//!
//! `madvise` is `unsafe` only because it takes a raw address range; the range given here
//! lies inside a buffer the caller borrows mutably, that is memory the process owns.

use std::mem::MaybeUninit;

/// The size (and alignment) of an x86-64 or AArch64 (4 KiB granule) transparent huge page.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// The largest `HUGE_PAGE`-aligned range inside `[addr, addr + len)`, as (start, length);
/// the length is 0 when the range holds no whole huge page.
fn aligned_inside(addr: usize, len: usize) -> (usize, usize) {
    let Some(start) = addr.checked_next_multiple_of(HUGE_PAGE) else { return (addr, 0) };
    let end = addr.saturating_add(len) / HUGE_PAGE * HUGE_PAGE;
    (start, end.saturating_sub(start))
}

/// Asks the kernel to back the whole huge pages inside `buf` with transparent huge pages,
/// best done before the pages are first written (a page already faulted in as small pages
/// waits for the kernel's background collapse). Returns the bytes advised: 0 when `buf`
/// holds no whole huge page, the kernel refused, or the target is not Linux.
pub(crate) fn advise_huge_pages(buf: &mut [MaybeUninit<u8>]) -> usize {
    let (start, len) = aligned_inside(buf.as_mut_ptr() as usize, buf.len());
    if len == 0 {
        return 0;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: [start, start + len) lies inside `buf` (aligned_inside only shrinks the
        // range), which is mutably borrowed, so owned by this process and used by nothing
        // else now; MADV_HUGEPAGE changes only how the kernel backs these pages, never their
        // contents, and the call reads and writes no memory of the program.
        let rc = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        if rc == 0 { len } else { 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = start;
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_inside_keeps_whole_huge_pages_only() {
        let h = HUGE_PAGE;
        assert_eq!(aligned_inside(0, h), (0, h));
        assert_eq!(aligned_inside(1, h), (h, 0));
        assert_eq!(aligned_inside(1, 2 * h), (h, h));
        assert_eq!(aligned_inside(1, 2 * h - 1), (h, h));
        assert_eq!(aligned_inside(1, 2 * h - 2), (h, 0));
        assert_eq!(aligned_inside(h - 4096, 2 * h + 4096), (h, 2 * h));
        assert_eq!(aligned_inside(3 * h, 5 * h + 7), (3 * h, 5 * h));
        assert_eq!(aligned_inside(usize::MAX - 10, 5), (usize::MAX - 10, 0));
        assert_eq!(aligned_inside(h, usize::MAX), (h, (usize::MAX / h * h) - h));
    }

    #[test]
    fn advice_keeps_contents_and_reports_at_most_the_buffer() {
        let mut v: Vec<u8> = Vec::with_capacity(3 * HUGE_PAGE);
        let advised = advise_huge_pages(v.spare_capacity_mut());
        assert!(advised <= 3 * HUGE_PAGE && advised.is_multiple_of(HUGE_PAGE));
        // Three huge pages' bytes hold at least two whole ones wherever they start; a kernel
        // with transparent huge pages takes the advice whatever its setting.
        if cfg!(target_os = "linux") && std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            assert!(advised >= 2 * HUGE_PAGE, "advised {advised}");
        }
        v.extend((0..3 * HUGE_PAGE).map(|i| (i % 251) as u8));
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        let mut small = [MaybeUninit::<u8>::uninit(); 64];
        assert_eq!(advise_huge_pages(&mut small), 0);
    }
}
