//! A stable LSD radix sort of packed `(key << 32) | position` words by their key half: what
//! the in-memory self-join sorts once per band. Fed words in ascending position, it leaves
//! them in (key, position) order, the order a comparison sort of the whole words gives, at
//! four counting passes over the data instead of ~n log n comparisons.

/// Bits per counting pass; four passes cover the 32-bit key.
const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;
const PASSES: u32 = 32 / DIGIT_BITS;

/// Sorts `words` by their top 32 bits, stably (words with equal keys keep their order),
/// using `scratch` (resized to `words.len()`) as the other buffer. A pass whose digit is the
/// same in every word is skipped.
pub(crate) fn sort_by_high_half(words: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    let n = words.len();
    if n < 2 {
        return;
    }
    // One read of the data counts every pass's digits.
    let mut counts = [[0usize; BUCKETS]; PASSES as usize];
    for &w in words.iter() {
        for (pass, c) in counts.iter_mut().enumerate() {
            c[digit(w, pass as u32)] += 1;
        }
    }
    scratch.clear();
    scratch.resize(n, 0);
    for (pass, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue;
        }
        let mut next = [0usize; BUCKETS];
        let mut at = 0;
        for (slot, &k) in next.iter_mut().zip(c) {
            *slot = at;
            at += k;
        }
        for &w in words.iter() {
            let d = digit(w, pass as u32);
            scratch[next[d]] = w;
            next[d] += 1;
        }
        std::mem::swap(words, scratch);
    }
}

/// Digit `pass` (0 = least significant) of the key half of `w`.
#[inline]
fn digit(w: u64, pass: u32) -> usize {
    ((w >> (32 + pass * DIGIT_BITS)) as usize) & (BUCKETS - 1)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Words built in ascending position come out exactly as a sort of the whole words
        /// (key, then position), for keys drawn from a few values (long runs of one key, passes
        /// skipped) or from all 32 bits.
        #[test]
        fn equals_a_sort_of_the_whole_words(
            keys in prop::collection::vec(any::<u32>(), 0..700),
            few in 1u32..6,
            narrow in any::<bool>(),
        ) {
            let mut words: Vec<u64> = keys
                .iter()
                .enumerate()
                .map(|(pos, &k)| (u64::from(if narrow { k % few } else { k }) << 32) | pos as u64)
                .collect();
            let mut want = words.clone();
            want.sort_unstable();
            let mut scratch = vec![7; 3];
            sort_by_high_half(&mut words, &mut scratch);
            prop_assert_eq!(words, want);
        }
    }

    /// Equal keys keep their input order whatever the positions say (stability, which the
    /// join's (key, position) order rests on when positions ascend).
    #[test]
    fn equal_keys_keep_their_order() {
        let mut words = vec![(5u64 << 32) | 9, (1 << 32) | 8, (5 << 32) | 2, (1 << 32) | 1, (5 << 32) | 3];
        sort_by_high_half(&mut words, &mut Vec::new());
        assert_eq!(words, [(1 << 32) | 8, (1 << 32) | 1, (5 << 32) | 9, (5 << 32) | 2, (5 << 32) | 3]);
    }
}
