//! The probe cache's places, pages, slabs and kept keys.

use super::*;
use crate::index::simhash::SimhashTableDesign;

fn cache() -> ProbeCache {
    let design = SimhashTableDesign::design(0, 3, 64).expect("design");
    let spec = IndexSpec::Simhash { design, bucket_bits: 16, next_run: 0, runs: Vec::new() };
    let def = Arc::new(IndexDef { spec, entries: 0, sum_sq: 0 });
    ProbeCache::empty(ProbeCaches::default().budget, (0, 0), Vec::new(), 0, def, 4)
}

/// Values kept one after another lie one after another in a slab, are read back as
/// kept, and a value larger than a slab gets a slab of its own; a place is one cache line.
#[test]
fn kept_values_are_packed_in_slabs() {
    assert_eq!((std::mem::size_of::<Slot>(), std::mem::align_of::<Slot>()), (64, 64));
    let c = cache();
    let a = c.value(0, 16, 5, || Ok(Some(vec![1u8; 100]))).expect("read").expect("some");
    let b = c.value(3, 16, 9, || Ok(Some(vec![2u8; 50]))).expect("read").expect("some");
    assert_eq!((&a[..], &b[..]), (&[1u8; 100][..], &[2u8; 50][..]));
    assert_eq!(b.as_ptr(), a.as_ptr().wrapping_add(100), "packed");
    let again = c.value(0, 16, 5, || panic!("kept")).expect("read").expect("some");
    assert_eq!(again.as_ptr(), a.as_ptr());
    assert!(c.value(1, 16, 7, || Ok(None)).expect("read").is_none());
    assert!(c.value(1, 16, 7, || panic!("kept as absent")).expect("read").is_none());
    let big = c.value(2, 16, 1, || Ok(Some(vec![3u8; SLAB + 1]))).expect("read").expect("some");
    assert_eq!(big.len(), SLAB + 1);
    assert!(c.held.load(Ordering::Relaxed) >= 2 * SLAB, "both slabs are counted whole");
}

/// A first probe of a wide shelf makes the page of places it reads, not the shelf (2^18
/// places, 16 MiB); a slot of another page makes that page; values read back as kept.
/// Pages are as small as the shelf's page table allows.
#[test]
fn a_first_probe_makes_one_page_of_places() {
    let c = cache();
    let page = (1usize << page_bits(18)) * std::mem::size_of::<Slot>();
    let table = (1usize << (18 - page_bits(18))) * std::mem::size_of::<OnceLock<Page>>();
    c.value(0, 18, 5 << page_bits(18), || Ok(Some(vec![1u8; 8]))).expect("read");
    assert_eq!((page_bits(18), page_bits(13), page_bits(30)), (9, 6, PAGE_BITS));
    let first = c.held.load(Ordering::Relaxed);
    let slab = (DEFAULT_BUDGET / 64).clamp(4 << 10, SLAB);
    assert_eq!(first, table + page + slab + VALUE_OVERHEAD, "one page, not {} bytes", (1usize << 18) * 64);
    c.value(0, 18, (5 << page_bits(18)) + 1, || Ok(None)).expect("read");
    assert_eq!(c.held.load(Ordering::Relaxed), first + VALUE_OVERHEAD, "the same page");
    c.value(0, 18, 7 << page_bits(18), || Ok(None)).expect("read");
    assert_eq!(c.held.load(Ordering::Relaxed), first + VALUE_OVERHEAD * 2 + page, "another page");
    let v = c.value(0, 18, 5 << page_bits(18), || panic!("kept")).expect("read").expect("some");
    assert_eq!(&v[..], &[1u8; 8]);
    assert!(c.value(0, 18, 7 << page_bits(18), || panic!("kept as absent")).expect("read").is_none());
}

/// A key's row is read once and then kept (absent keys too), each counted against the budget;
/// past the budget it is read every time and not kept.
#[test]
fn key_rows_are_kept_within_the_budget() {
    let c = cache();
    let reads = std::cell::Cell::new(0);
    let read = |row: Option<u64>| {
        reads.set(reads.get() + 1);
        Ok::<_, ()>(row)
    };
    assert_eq!(c.row_of_key(b"a", || read(Some(7))), Ok(Some(7)));
    assert_eq!(c.row_of_key(b"gone", || read(None)), Ok(None));
    assert_eq!(c.row_of_key(b"a", || read(Some(99))), Ok(Some(7)), "kept");
    assert_eq!(c.row_of_key(b"gone", || read(Some(99))), Ok(None), "kept as absent");
    assert_eq!(reads.get(), 2);
    assert_eq!(c.held.load(Ordering::Relaxed), 2 * VALUE_OVERHEAD + 1 + 4);
    assert_eq!(c.row_of_key(b"b", || Err(())), Err(()), "a failed read keeps nothing");
    c.budget.bytes.store(c.held.load(Ordering::Relaxed), Ordering::Relaxed);
    assert_eq!(c.row_of_key(b"c", || read(Some(3))), Ok(Some(3)));
    assert_eq!(c.row_of_key(b"c", || read(Some(4))), Ok(Some(4)), "past the budget: read again");
    assert_eq!(c.held.load(Ordering::Relaxed), 2 * VALUE_OVERHEAD + 1 + 4);
}
