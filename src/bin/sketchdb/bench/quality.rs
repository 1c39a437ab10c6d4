//! Cluster quality of a dedup run against a documents truth file: pair recall and precision
//! (every pair inside a reported cluster counts as a reported pair) and purity against the
//! planted families.
//!
//! The truth file lists every pair inside each planted family, whatever its Jaccard, and no
//! pair across families; the families are therefore the connected components of all listed
//! pairs. A document in no listed pair is its own family.

use std::collections::HashMap;

use super::truth::{Truth, doc_number};

/// What `measure` finds for one set of clusters.
pub struct Quality {
    /// Pairs inside reported clusters.
    pub reported: u64,
    /// Of those, pairs whose true Jaccard reaches the threshold.
    pub right: u64,
    /// Sum over clusters of the largest number of members from one family, over the sum of
    /// cluster sizes: 1.0 when no cluster mixes families.
    pub purity: f64,
    /// Clusters whose members all come from one family.
    pub pure_clusters: usize,
}

/// Of `verified` pairs (row ids), how many are true pairs at `t`: `(verified, right)`. Rows are
/// named through `clusters` (row ids and keys in the same order), which hold every row of a
/// verified pair; a row no cluster names counts as a wrong pair.
pub fn verified_right<'a>(
    verified: &[(u64, u64)],
    clusters: impl IntoIterator<Item = (&'a [u64], &'a [Vec<u8>])>,
    truth: &Truth,
    t: f64,
) -> (u64, u64) {
    let mut doc: HashMap<u64, u32> = HashMap::new();
    for (rows, keys) in clusters {
        for (&row, key) in rows.iter().zip(keys) {
            if let Some(d) = doc_number(key) {
                doc.insert(row, d);
            }
        }
    }
    let right = verified
        .iter()
        .filter(|(a, b)| matches!((doc.get(a), doc.get(b)), (Some(&x), Some(&y)) if truth.holds(x, y, t)))
        .count();
    (verified.len() as u64, right as u64)
}

/// Each listed document's family: the smallest document number of its component.
pub fn families(truth: &Truth) -> HashMap<u32, u32> {
    let mut parent: HashMap<u32, u32> = HashMap::new();
    fn find(parent: &mut HashMap<u32, u32>, x: u32) -> u32 {
        let mut root = x;
        while let Some(&p) = parent.get(&root).filter(|&&p| p != root) {
            root = p;
        }
        let mut cur = x;
        while cur != root {
            let next = parent[&cur];
            parent.insert(cur, root);
            cur = next;
        }
        root
    }
    for (a, b) in truth.pair_ids() {
        parent.entry(a).or_insert(a);
        parent.entry(b).or_insert(b);
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        if ra != rb {
            parent.insert(ra.max(rb), ra.min(rb));
        }
    }
    let docs: Vec<u32> = parent.keys().copied().collect();
    docs.into_iter().map(|d| (d, find(&mut parent, d))).collect()
}

/// Pair counts and purity of `clusters` (lists of stored keys `d<number>`) at threshold `t`.
/// A key that is not a document number is its own family.
pub fn measure<'a>(
    clusters: impl IntoIterator<Item = &'a [Vec<u8>]>,
    truth: &Truth,
    family: &HashMap<u32, u32>,
    t: f64,
) -> Quality {
    let (mut reported, mut right, mut dominant, mut members, mut pure_clusters) = (0u64, 0u64, 0u64, 0u64, 0usize);
    for keys in clusters {
        let ids: Vec<Option<u32>> = keys.iter().map(|k| doc_number(k)).collect();
        for i in 0..ids.len() {
            for j in i + 1..ids.len() {
                reported += 1;
                if let (Some(a), Some(b)) = (ids[i], ids[j]) {
                    right += u64::from(truth.holds(a, b, t));
                }
            }
        }
        let mut count: HashMap<Option<u32>, u64> = HashMap::new();
        let mut unnamed = 0u64;
        for id in &ids {
            match id {
                Some(d) => *count.entry(Some(family.get(d).copied().unwrap_or(*d))).or_default() += 1,
                None => unnamed += 1,
            }
        }
        let best = count.values().copied().max().unwrap_or(0).max(u64::from(unnamed > 0));
        dominant += best;
        members += ids.len() as u64;
        pure_clusters += usize::from(best == ids.len() as u64);
    }
    let purity = if members == 0 { 1.0 } else { dominant as f64 / members as f64 };
    Quality { reported, right, purity, pure_clusters }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truth(pairs: &[(u32, u32, f64)]) -> Truth {
        Truth::from_pairs(pairs.iter().map(|&(a, b, j)| ((a, b), j)).collect(), "t")
    }

    fn keys(ids: &[u32]) -> Vec<Vec<u8>> {
        ids.iter().map(|i| format!("d{i:06}").into_bytes()).collect()
    }

    #[test]
    fn verified_pairs_are_named_through_the_clusters() {
        let t = truth(&[(1, 2, 0.9), (2, 3, 0.6)]);
        let (rows, k) = (vec![10u64, 20, 30], keys(&[1, 2, 3]));
        let got = verified_right(&[(10, 20), (20, 30), (10, 99)], [(rows.as_slice(), k.as_slice())], &t, 0.8);
        assert_eq!(got, (3, 1));
    }

    #[test]
    fn families_are_components_of_all_pairs() {
        let t = truth(&[(1, 2, 0.9), (2, 3, 0.2), (7, 8, 0.5)]);
        let f = families(&t);
        assert_eq!((f[&1], f[&2], f[&3]), (1, 1, 1));
        assert_eq!((f[&7], f[&8]), (7, 7));
    }

    #[test]
    fn purity_counts_the_dominant_family() {
        let t = truth(&[(1, 2, 0.9), (2, 3, 0.85), (1, 3, 0.7), (7, 8, 0.9)]);
        let f = families(&t);
        // One pure cluster {1,2,3}; one mixed {7,8,1}: dominant 2 of 3.
        let clusters = [keys(&[1, 2, 3]), keys(&[7, 8, 1])];
        let q = measure(clusters.iter().map(|c| c.as_slice()), &t, &f, 0.8);
        assert_eq!(q.pure_clusters, 1);
        assert!((q.purity - 5.0 / 6.0).abs() < 1e-12);
        // Pairs: 3 + 3 reported; right at 0.8: (1,2), (2,3), (7,8).
        assert_eq!((q.reported, q.right), (6, 3));
    }
}
