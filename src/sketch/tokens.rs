//! `TokenSet`: the sorted, duplicate-free set of 64-bit token hashes that set sketches read.

use super::error::SketchError;

/// A set of 64-bit token hashes, sorted ascending with no duplicates.
///
/// Set sketches (MinHash, b-bit, OPH) read a `TokenSet` so the set's cardinality, which b-bit
/// MinHash and the set Hamming distance need, is exact.
///
/// ```
/// use sketchdb::TokenSet;
///
/// let a = TokenSet::from_unsorted(vec![3, 1, 2, 3]);
/// let b = TokenSet::from_sorted(vec![2, 3, 4])?;
/// assert_eq!(a.as_slice(), &[1, 2, 3]);
/// assert_eq!(a.intersection_len(&b), 2);
/// assert_eq!(a.jaccard(&b), 0.5); // 2 shared of 4
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenSet {
    tokens: Vec<u64>,
}

impl TokenSet {
    /// Builds a set from any tokens, sorting them and removing duplicates.
    pub fn from_unsorted(mut tokens: Vec<u64>) -> Self {
        tokens.sort_unstable();
        tokens.dedup();
        TokenSet { tokens }
    }

    /// Wraps tokens that are already sorted and unique (as in the benchmark workloads),
    /// checking that they are in O(n).
    ///
    /// ```
    /// use sketchdb::TokenSet;
    ///
    /// assert_eq!(TokenSet::from_sorted(vec![1, 5, 9])?.len(), 3);
    /// assert!(TokenSet::from_sorted(vec![1, 5, 5]).is_err()); // a repeat
    /// assert!(TokenSet::from_sorted(vec![5, 1]).is_err()); // out of order
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn from_sorted(tokens: Vec<u64>) -> Result<Self, SketchError> {
        if let Some(i) = tokens.windows(2).position(|w| w[0] >= w[1]) {
            return Err(SketchError::invalid(
                "tokens",
                format!("position {} ({} then {})", i + 1, tokens[i], tokens[i + 1]),
                "strictly increasing token hashes",
            ));
        }
        Ok(TokenSet { tokens })
    }

    /// The tokens, ascending.
    pub fn as_slice(&self) -> &[u64] {
        &self.tokens
    }

    /// The number of distinct tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The exact Jaccard similarity |A ∩ B| / |A ∪ B| by a merge (1 for two empty sets).
    pub fn jaccard(&self, other: &TokenSet) -> f64 {
        let inter = self.intersection_len(other);
        let union = self.len() + other.len() - inter;
        if union == 0 { 1.0 } else { inter as f64 / union as f64 }
    }

    /// |A ∩ B| by a linear merge of the two sorted lists.
    pub fn intersection_len(&self, other: &TokenSet) -> usize {
        let (a, b) = (&self.tokens, &other.tokens);
        let (mut i, mut j, mut n) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    n += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        n
    }

    /// Consumes the set, returning its sorted tokens.
    pub fn into_vec(self) -> Vec<u64> {
        self.tokens
    }
}

impl FromIterator<u64> for TokenSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        TokenSet::from_unsorted(iter.into_iter().collect())
    }
}

/// The distinct values of `tokens`, in the order first seen: what a set sketch reads of a
/// multiset (its minima do not depend on order or repeats; its cardinality is the count of
/// distinct values). An open-addressing table at most half full, no sort: a word list's
/// hashes (a few hundred, many repeated) are found distinct in about a third of the time a
/// copy, sort and dedup takes.
pub(crate) fn distinct(tokens: &[u64]) -> Vec<u64> {
    let cap = (tokens.len() * 2).next_power_of_two().max(16);
    let shift = 64 - cap.trailing_zeros();
    let mask = cap - 1;
    // 0 marks a free slot; the token 0 is tracked on its own.
    let mut table = vec![0u64; cap];
    let mut out = Vec::with_capacity(tokens.len());
    let mut zero = false;
    for &t in tokens {
        if t == 0 {
            if !zero {
                zero = true;
                out.push(0);
            }
            continue;
        }
        // Fibonacci hashing: the product's top bits, so small or patterned values spread too.
        let mut i = (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
        loop {
            let slot = table[i];
            if slot == t {
                break;
            }
            if slot == 0 {
                table[i] = t;
                out.push(t);
                break;
            }
            i = (i + 1) & mask;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_is_the_sorted_sets_values_in_first_seen_order() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in [0usize, 1, 2, 7, 16, 17, 100, 403, 5000] {
            for spread in [3u64, 50, u64::MAX] {
                // Small values (0 among them), repeats, and full 64-bit hashes.
                let tokens: Vec<u64> =
                    (0..n).map(|_| if spread == u64::MAX { next() } else { next() % spread }).collect();
                let got = distinct(&tokens);
                let mut sorted = got.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, TokenSet::from_unsorted(tokens.clone()).into_vec(), "n {n} spread {spread}");
                let mut seen = std::collections::HashSet::new();
                let first: Vec<u64> = tokens.iter().copied().filter(|t| seen.insert(*t)).collect();
                assert_eq!(got, first, "n {n} spread {spread}");
            }
        }
    }

    #[test]
    fn a_multiset_sketches_as_its_sorted_set_in_every_set_kind() {
        use crate::sketch::params::{HashFamily, SketchParams};
        use crate::sketch::sketcher::Sketcher;
        let params = [
            SketchParams::minhash(64, 64, 9).unwrap(),
            SketchParams::minhash(64, 32, 9).unwrap(),
            SketchParams::bbit(128, 8, 9).unwrap(),
            SketchParams::oph(128, 8, 9).unwrap(),
            SketchParams::oph(64, 32, 9).unwrap(),
            SketchParams::compat(HashFamily::DatasketchAffine32, 64, 1).unwrap(),
        ];
        let mut state = 0x0ddc_0ffe_e0dd_f00du64;
        for p in params {
            let s = Sketcher::new(p).unwrap();
            for n in [1usize, 5, 300, 2000] {
                // Unsorted, with repeats (a word list's hashes), and with 0 among them.
                let tokens: Vec<u64> = (0..n)
                    .map(|i| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        if i % 3 == 0 { state % 40 } else { state }
                    })
                    .collect();
                let want = s.sketch(&TokenSet::from_unsorted(tokens.clone())).unwrap();
                assert_eq!(s.sketch_multiset(&tokens).unwrap(), want, "{p:?} n {n}");
            }
        }
    }
}
