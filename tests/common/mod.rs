//! Shared helpers for the integration tests: a seeded PRNG, set-pair generators and the
//! LSH run-shape check.
#![allow(dead_code)]

use sketchdb::TokenSet;

pub mod child;
#[cfg(feature = "cli")]
pub mod cli;
pub mod simhash;

/// The files of a fuzz corpus folder (seeds or regressions), sorted by path, as
/// (path, bytes); none when the folder is missing.
pub fn fuzz_inputs(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    let mut out: Vec<_> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| (e.path().display().to_string(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// splitmix64: a tiny, fully specified PRNG so tests are deterministic without extra crates.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi] (inclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// A standard normal variate (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.f64().max(1e-300);
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Two random sets with a union of `union` tokens of which round(j * union) are shared, the
/// rest split at random between the two sides (each side keeps at least one token when it
/// can). Returns the sets; their exact Jaccard is computed by the caller with a merge.
pub fn set_pair(rng: &mut Rng, union: usize, j: f64) -> (TokenSet, TokenSet) {
    let shared = ((j * union as f64).round() as usize).min(union);
    let rest = union - shared;
    let a_only = if rest == 0 { 0 } else { rng.range(0, rest as u64) as usize };
    let fresh = |rng: &mut Rng, n: usize| (0..n).map(|_| rng.next_u64()).collect::<Vec<_>>();
    let common = fresh(rng, shared);
    let mut a = common.clone();
    a.extend(fresh(rng, a_only));
    let mut b = common;
    b.extend(fresh(rng, rest - a_only));
    if a.is_empty() {
        a.push(rng.next_u64());
    }
    if b.is_empty() {
        b.push(rng.next_u64());
    }
    (TokenSet::from_unsorted(a), TokenSet::from_unsorted(b))
}

/// A pair spanning the whole range: J uniform in [0, 1], union log-uniform in [lo, hi].
pub fn spanning_pair(rng: &mut Rng, lo: f64, hi: f64) -> (TokenSet, TokenSet) {
    let union = (lo.ln() + rng.f64() * (hi.ln() - lo.ln())).exp().round() as usize;
    let j = rng.f64();
    set_pair(rng, union.max(2), j)
}

/// The shape every write leaves an LSH index's runs in (`runs` oldest first): row ranges
/// ascending and disjoint, at most 10 runs, and no size tier of 4 or more left unmerged (the
/// newest runs each holding at most the entries of all newer ones together). `Err` says how
/// the shape is broken.
pub fn lsh_runs_settled(runs: &[sketchdb::testing::LshRunInfo]) -> Result<(), String> {
    if !runs.windows(2).all(|w| w[0].end_row <= w[1].first_row) {
        return Err(format!("row ranges overlap or descend: {runs:?}"));
    }
    if runs.len() > 10 {
        return Err(format!("{} runs", runs.len()));
    }
    let mut tier = runs.len().min(1);
    let mut newer = runs.last().map_or(0, |r| r.entries);
    while tier < runs.len() && runs[runs.len() - 1 - tier].entries <= newer {
        newer += runs[runs.len() - 1 - tier].entries;
        tier += 1;
    }
    if tier >= 4 {
        return Err(format!("a tier of {tier} runs left unmerged: {runs:?}"));
    }
    Ok(())
}
