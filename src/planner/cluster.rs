//! Grouping a dedup's verified pairs into clusters: connected components, or star clusters
//! around representatives that never chain through weak links.

use std::collections::HashMap;

/// How dedup groups its verified pairs (pairs whose similarity reaches the threshold, or
/// fingerprints within the radius) into clusters.
///
/// ```
/// use sketchdb::Clustering;
///
/// assert_eq!(Clustering::default(), Clustering::Components);
/// assert_eq!(Clustering::from_name("representative"), Some(Clustering::Representative));
/// assert_eq!(Clustering::Representative.name(), "representative");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Clustering {
    /// Connected components of the verified pairs: two records share a cluster when a chain
    /// of verified pairs joins them, so pairs near the threshold can merge two groups whose
    /// members are far apart.
    #[default]
    Components,
    /// Star clusters: records are taken in order of most verified partners first (then
    /// lowest row id); a record not yet clustered becomes a representative, and its verified
    /// partners not yet clustered join its cluster. Invariant: every member of a cluster is a
    /// verified pair with the cluster's representative, so no member is more than one link
    /// from it; each record is in at most one cluster, and a record whose partners were all
    /// taken by other clusters stays alone.
    Representative,
}

impl Clustering {
    /// Every clustering, in declaration order.
    pub const ALL: [Clustering; 2] = [Clustering::Components, Clustering::Representative];

    /// Its name: `components` or `representative`.
    pub fn name(self) -> &'static str {
        match self {
            Clustering::Components => "components",
            Clustering::Representative => "representative",
        }
    }

    /// The clustering named `name` ([`Clustering::name`]).
    pub fn from_name(name: &str) -> Option<Clustering> {
        Clustering::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for Clustering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A group of two or more rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    /// Row ids, ascending.
    pub rows: Vec<u64>,
    /// The representative (star clusters only).
    pub representative: Option<u64>,
}

/// Groups the rows of `edges` (unordered pairs, each once) by `clustering`; groups of one row
/// are left out.
pub(crate) fn group(edges: &[(u64, u64)], clustering: Clustering) -> Vec<Group> {
    match clustering {
        Clustering::Components => components(edges),
        Clustering::Representative => stars(edges),
    }
}

/// Connected components by union-find over the positions of the edges' rows in their sorted
/// list (a flat array, not a map keyed by row id). A root is the smallest position of its
/// component (a union links the greater root under the smaller), so members are pushed in
/// ascending order and each component starts at its root.
fn components(edges: &[(u64, u64)]) -> Vec<Group> {
    let mut ids: Vec<u64> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    ids.sort_unstable();
    ids.dedup();
    // Every row of an edge is in `ids`: its position is where it sorts.
    let at = |r: u64| ids.partition_point(|&x| x < r);
    let mut parent: Vec<usize> = (0..ids.len()).collect();
    for &(a, b) in edges {
        let (ra, rb) = (root(&mut parent, at(a)), root(&mut parent, at(b)));
        parent[ra.max(rb)] = ra.min(rb);
    }
    // Component of each root, by its position in `groups`.
    let mut slot = vec![usize::MAX; ids.len()];
    let mut groups: Vec<Vec<u64>> = Vec::new();
    for (p, &row) in ids.iter().enumerate() {
        let r = root(&mut parent, p);
        if r == p {
            slot[p] = groups.len();
            groups.push(Vec::new());
        }
        groups[slot[r]].push(row);
    }
    groups.into_iter().filter(|g| g.len() > 1).map(|rows| Group { rows, representative: None }).collect()
}

/// The root of `x` in the forest `parent`, halving the path on the way.
fn root(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

fn stars(edges: &[(u64, u64)]) -> Vec<Group> {
    let mut partners: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(a, b) in edges {
        partners.entry(a).or_default().push(b);
        partners.entry(b).or_default().push(a);
    }
    let mut order: Vec<(u64, usize)> = partners.iter().map(|(&r, p)| (r, p.len())).collect();
    order.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut taken: HashMap<u64, ()> = HashMap::with_capacity(partners.len());
    let mut out = Vec::new();
    for (rep, _) in order {
        if taken.contains_key(&rep) {
            continue;
        }
        taken.insert(rep, ());
        let mut rows = vec![rep];
        for &p in &partners[&rep] {
            if taken.insert(p, ()).is_none() {
                rows.push(p);
            }
        }
        if rows.len() > 1 {
            rows.sort_unstable();
            out.push(Group { rows, representative: Some(rep) });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::hash::splitmix64;

    fn sorted(mut g: Vec<Group>) -> Vec<Group> {
        g.sort_by_key(|g| g.rows[0]);
        g
    }

    #[test]
    fn a_chain_is_one_component_but_stars_do_not_chain() {
        // 0-1-2-3 is a path: one component; stars take 1 (two partners, lower id) with 0
        // and 2, and leave 3 alone (its only partner is taken).
        let edges = [(0, 1), (1, 2), (2, 3), (7, 8)];
        let c = sorted(group(&edges, Clustering::Components));
        assert_eq!(c.iter().map(|g| g.rows.clone()).collect::<Vec<_>>(), vec![vec![0, 1, 2, 3], vec![7, 8]]);
        let s = sorted(group(&edges, Clustering::Representative));
        assert_eq!(
            s,
            vec![
                Group { rows: vec![0, 1, 2], representative: Some(1) },
                Group { rows: vec![7, 8], representative: Some(7) },
            ]
        );
    }

    #[test]
    fn components_equal_a_breadth_first_search_of_the_graph() {
        // Sparse rows (far apart, not from 0) of a pseudo-random graph (splitmix64 stream,
        // fixed seed) with chains and repeated edges.
        let mut x = 0x9e37_79b9_u64;
        let mut next = || splitmix64(&mut x);
        let rows: Vec<u64> = (0..300u64).map(|i| 1_000_000_007 * i + 3).collect();
        let edges: Vec<(u64, u64)> = (0..150)
            .map(|_| (rows[(next() % 300) as usize], rows[(next() % 300) as usize]))
            .filter(|(a, b)| a != b)
            .collect();
        let mut want: Vec<Vec<u64>> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &start in &rows {
            if !edges.iter().any(|&(a, b)| a == start || b == start) || !seen.insert(start) {
                continue;
            }
            let mut comp = vec![start];
            let mut i = 0;
            while i < comp.len() {
                let r = comp[i];
                for &(a, b) in &edges {
                    let other = if a == r {
                        b
                    } else if b == r {
                        a
                    } else {
                        continue;
                    };
                    if seen.insert(other) {
                        comp.push(other);
                    }
                }
                i += 1;
            }
            comp.sort_unstable();
            want.push(comp);
        }
        want.sort();
        let got: Vec<Vec<u64>> = sorted(group(&edges, Clustering::Components)).into_iter().map(|g| g.rows).collect();
        assert!(want.len() > 10 && want.iter().any(|c| c.len() > 3), "{want:?}");
        assert_eq!(got, want);
    }

    #[test]
    fn every_star_member_is_a_pair_with_its_representative() {
        // A pseudo-random graph (splitmix64 stream, fixed seed) over 200 rows.
        let mut x = 0x5eed_u64;
        let mut next = || splitmix64(&mut x);
        let mut edges: Vec<(u64, u64)> =
            (0..400).map(|_| (next() % 200, next() % 200)).filter(|(a, b)| a < b).collect();
        edges.sort_unstable();
        edges.dedup();
        let has = |a: u64, b: u64| edges.binary_search(&(a.min(b), a.max(b))).is_ok();
        let stars = group(&edges, Clustering::Representative);
        let mut seen = std::collections::HashSet::new();
        for g in &stars {
            let rep = g.representative.unwrap();
            assert!(g.rows.contains(&rep) && g.rows.len() > 1);
            for &m in g.rows.iter().filter(|&&m| m != rep) {
                assert!(has(rep, m), "member {m} is not a pair with representative {rep}");
            }
            for &m in &g.rows {
                assert!(seen.insert(m), "row {m} in two clusters");
            }
        }
        // Each star lies inside one connected component.
        let comps = group(&edges, Clustering::Components);
        for g in &stars {
            assert!(comps.iter().any(|c| g.rows.iter().all(|r| c.rows.contains(r))));
        }
    }
}
