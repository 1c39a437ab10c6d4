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
