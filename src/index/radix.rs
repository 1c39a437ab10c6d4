//! Sorting index entries whose keys are (nearly) uniform: a radix pass or two over the
//! keys' leading bits leaves them nearly sorted, and an insertion sort finishes the job.
//! Index builds sort tens of millions of entries; a comparison sort was the largest part of
//! both the SimHash table build and the LSH run build.

/// Widest radix digit: the 2^12 output streams of a pass still fit the L2 cache.
const RADIX_MAX_BITS: u32 = 12;
/// Fewest entries worth a radix sort (below this a comparison sort is as fast).
pub(crate) const RADIX_MIN_ENTRIES: usize = 1 << 12;

/// Sorts `(key, row)` pairs whose keys are hashes (uniform over u64): see [`sort_hashed`].
pub(crate) fn sort_hashed_pairs(v: &mut Vec<(u64, u64)>, scratch: &mut Vec<(u64, u64)>) {
    sort_hashed(v, scratch, |e| e.0);
}

/// Sorts values whose order is led by a hash `hash(e)` (uniform over u64): a least-
/// significant-digit radix sort on the hashes' top `log2(n) + 1` bits, then
/// [`sort_nearly_sorted`]. Any input ends sorted; skewed hashes only cost time. `scratch` is
/// working memory the caller may keep across calls.
pub(crate) fn sort_hashed<T: Copy + Default + Ord>(v: &mut Vec<T>, scratch: &mut Vec<T>, hash: impl Fn(&T) -> u64) {
    if v.len() < RADIX_MIN_ENTRIES {
        v.sort_unstable();
        return;
    }
    let bits = (usize::BITS - v.len().leading_zeros() + 1).min(24);
    radix_by_prefix(v, scratch, bits, |e| (hash(e) >> (64 - bits)) as usize);
    sort_nearly_sorted(v);
}

/// Orders `v` stably by `prefix(e)`, which must be below `2^bits`: least significant digit
/// first, at most [`RADIX_MAX_BITS`] a pass.
pub(crate) fn radix_by_prefix<T: Copy + Default>(
    v: &mut Vec<T>,
    scratch: &mut Vec<T>,
    bits: u32,
    prefix: impl Fn(&T) -> usize,
) {
    let passes = bits.div_ceil(RADIX_MAX_BITS).max(1);
    let digit_bits = bits.div_ceil(passes);
    let radix = 1usize << digit_bits;
    let mut hist = vec![vec![0usize; radix + 1]; passes as usize];
    for e in v.iter() {
        let p = prefix(e);
        for (d, h) in hist.iter_mut().enumerate() {
            h[((p >> (digit_bits as usize * d)) & (radix - 1)) + 1] += 1;
        }
    }
    let (mut from, mut to) = (std::mem::take(v), std::mem::take(scratch));
    to.resize(from.len(), T::default());
    for (d, at) in hist.iter_mut().enumerate() {
        for i in 0..radix {
            at[i + 1] += at[i];
        }
        for e in &from {
            let slot = &mut at[(prefix(e) >> (digit_bits as usize * d)) & (radix - 1)];
            to[*slot] = *e;
            *slot += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *v = from;
    *scratch = to;
}

/// Sorts a nearly sorted slice: an insertion sort, or `sort_unstable` once that has moved
/// more than a few places per entry (many entries arriving out of order).
pub(crate) fn sort_nearly_sorted<T: Ord + Copy>(v: &mut [T]) {
    let budget = 8 * v.len() + 64;
    let mut moved = 0;
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
        moved += i - j;
        if moved > budget {
            v.sort_unstable();
            return;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{radix_by_prefix, sort_hashed, sort_hashed_pairs, sort_nearly_sorted};

    /// A xorshift64 generator for the sort tests (a nonzero seed).
    pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Uniform keys, repeated keys with rows in any order, keys all sharing their top bits
    /// (the insertion sort gives up), descending input, small inputs: always the plain sort.
    #[test]
    fn hashed_pairs_sort_like_a_plain_sort() {
        let mut next = xorshift(0x853c_49e6_748f_ea9b);
        for (n, shape) in [(10, 0), (5_000, 0), (100_000, 0), (50_000, 1), (30_000, 2), (20_000, 3)] {
            let mut v: Vec<(u64, u64)> = (0..n as u64)
                .map(|i| match shape {
                    1 => (next() % 300, next() % 1000),
                    2 => (0xabcd_0000_0000_0000 | next() >> 40, i),
                    3 => (u64::MAX - i * 7_919, i),
                    _ => (next(), i),
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            // The same entries packed in one word each (key's top 32 bits over the row's low
            // 32) sort to the same order.
            let mut words: Vec<u64> = v.iter().map(|e| e.0 & !0xffff_ffff | e.1 & 0xffff_ffff).collect();
            let mut want_words = words.clone();
            want_words.sort_unstable();
            sort_hashed_pairs(&mut v, &mut Vec::new());
            assert!(v == want, "n = {n}, shape {shape}: the orders differ");
            sort_hashed(&mut words, &mut Vec::new(), |&w| w);
            assert!(words == want_words, "n = {n}, shape {shape}: the words' orders differ");
        }
    }

    /// The radix passes order by prefix and keep equal prefixes in input order.
    #[test]
    fn radix_is_stable_by_prefix() {
        let mut next = xorshift(7);
        for bits in [1, 8, 12, 13, 24] {
            let mut v: Vec<(u32, u32)> = (0..20_000).map(|i| ((next() % (1 << bits)) as u32, i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            radix_by_prefix(&mut v, &mut Vec::new(), bits, |e| e.0 as usize);
            assert_eq!(v, want, "bits = {bits}");
        }
    }

    #[test]
    fn nearly_sorted_and_reversed_slices_sort() {
        let mut v: Vec<u32> = (0..10_000).rev().collect();
        sort_nearly_sorted(&mut v);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        let mut v: Vec<u32> = (0..10_000).map(|i| i ^ 3).collect();
        sort_nearly_sorted(&mut v);
        assert_eq!(v, (0..10_000).collect::<Vec<u32>>());
    }
}
