//! SimHash permuted tables (Manku, Jain and Das Sarma, "Detecting near-duplicates for web
//! crawling", WWW 2007): the block layout, the per-table bit permutation and key prefixes.
//!
//! # Specification (persisted; changing any of it needs a new index format version)
//!
//! * **Bits.** A fingerprint of f bits (64 or 128) is an unsigned integer; bit i is
//!   `(value >> i) & 1`, so bit 0 is the least significant (for f = 128 this matches
//!   [`crate::SimHash::value`]: bits 0..64 are word 0).
//! * **Blocks.** The f bits are split into m contiguous blocks, numbered upwards from bit 0:
//!   block j covers bits `[start_j, start_j + len_j)`, `start_0 = 0`,
//!   `start_{j+1} = start_j + len_j`, and `len_j = ceil(f / m)` for `j < f mod m`, otherwise
//!   `floor(f / m)` (as equal as possible, the longer blocks first).
//! * **Tables.** One table per (m - k)-subset L of the blocks (its *leading* blocks), tables
//!   numbered in lexicographic order of L written as an ascending list (for m = 4, k = 3:
//!   `[0], [1], [2], [3]`; for m = 5, k = 3: `[0,1], [0,2], ..., [3,4]`).
//! * **Permutation.** Table t's block order is L in ascending order followed by the other
//!   blocks in ascending order. The permuted key is the f-bit integer that holds the blocks
//!   of this order from the most significant end down: the first block of the order occupies
//!   bits `[f - len, f)`, the next one the `len'` bits below it, and so on; within a block the
//!   bits keep their relative order. The permutation moves whole blocks, so it preserves
//!   Hamming distance: `popcount(P(x) ^ P(q)) == popcount(x ^ q)`.
//! * **Prefix.** Table t's prefix length `p_t` is the total length of its leading blocks,
//!   and a key's prefix is `key >> (f - p_t)`.
//!
//! **Pigeonhole guarantee.** If `popcount(x ^ q) <= k` the differing bits touch at most k
//! blocks, so at least m - k blocks agree exactly; the table whose leading blocks are those
//! has `prefix(P(x)) == prefix(P(q))`. Scanning every table's bucket of the query's prefix
//! therefore finds every fingerprint within distance k. The *canonical* table of a pair is
//! the lowest-numbered table whose leading blocks all agree; reporting a pair only from its
//! canonical table reports it exactly once.

use serde::{Deserialize, Serialize};

use crate::index::error::IndexError;
use crate::index::fingerprint::Fingerprint;

/// The radius k used when none is given.
pub const DEFAULT_SIMHASH_RADIUS: u32 = 3;
/// The most tables a design may have (C(m, k) grows fast; each table is a full copy of the
/// row ids and a probe per query).
pub const MAX_SIMHASH_TABLES: usize = 256;
/// The cost of probing one table (one B-tree lookup or cache miss) in units of one
/// candidate distance check in a packed bucket. Measured (`benches/index.rs`, in memory, 10M
/// rows, k = 3, p50 per query): four tables of 16-bit prefixes 4.0 us, 10 tables of 25-26
/// bits 7.4 us, 20 tables of 31-32 bits 13.3 us, although four tables check ~600 candidates
/// per query against ~2.
pub const SIMHASH_PROBE_COST: f64 = 256.0;

/// One block of a design: bits `[start, start + len)` of the fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimhashBlock {
    /// The first (least significant) bit of the block.
    pub start: u32,
    /// The number of bits, at least 1.
    pub len: u32,
}

impl SimhashBlock {
    #[inline]
    fn extract(self, fp: u128) -> u128 {
        (fp >> self.start) & low_mask(self.len)
    }
}

/// One table's permutation, precomputed: each block's (start, mask, destination shift).
#[derive(Clone, Debug)]
pub(crate) struct TablePermutation {
    moves: Vec<(u32, u128, u32)>,
}

impl TablePermutation {
    /// The permuted key of `fp` (bits at and above f are ignored).
    #[inline]
    pub(crate) fn apply(&self, fp: u128) -> u128 {
        self.moves.iter().fold(0u128, |key, &(start, mask, shift)| key | ((fp >> start) & mask) << shift)
    }

    /// [`TablePermutation::apply`] in 64-bit arithmetic, for designs of f <= 64 (every
    /// block then starts and lands below bit 64).
    #[inline]
    pub(crate) fn apply64(&self, fp: u64) -> u64 {
        self.moves.iter().fold(0u64, |key, &(start, mask, shift)| key | ((fp >> start) & mask as u64) << shift)
    }
}

#[inline]
fn low_mask(len: u32) -> u128 {
    if len >= 128 { u128::MAX } else { (1u128 << len) - 1 }
}

/// A SimHash permuted-table layout for fingerprints of `f` bits and radius `k`, exactly as
/// specified in this module's documentation: `m` blocks and one table per choice of `m - k`
/// leading blocks.
///
/// Invariant: the value equals [`SimhashTableDesign::with_blocks`]`(f, k, m)`. A design decoded
/// from storage must be checked with [`SimhashTableDesign::validate`] before use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimhashTableDesign {
    f: u32,
    k: u32,
    m: u32,
    blocks: Vec<SimhashBlock>,
    tables: Vec<Vec<u32>>,
}

/// C(n, r) with saturation (only compared against small caps).
fn binomial(n: u32, r: u32) -> u64 {
    if r > n {
        return 0;
    }
    let r = r.min(n - r);
    let mut c: u64 = 1;
    for i in 0..u64::from(r) {
        c = c.saturating_mul(u64::from(n) - i) / (i + 1);
    }
    c
}

impl SimhashTableDesign {
    /// The design with `m` blocks for f-bit fingerprints and radius k.
    ///
    /// Requires f in {64, 128}, `k < m <= min(f, 64)` and at most [`MAX_SIMHASH_TABLES`]
    /// tables (C(m, k)).
    pub fn with_blocks(f: u32, k: u32, m: u32) -> Result<Self, IndexError> {
        check_f_k(f, k)?;
        if m <= k || m > f.min(64) {
            return Err(IndexError::invalid("m", m, "k < m <= min(f, 64) blocks"));
        }
        if binomial(m, k) > MAX_SIMHASH_TABLES as u64 {
            return Err(IndexError::invalid("m", m, "at most 256 tables (C(m, k))"));
        }
        let (base, extra) = (f / m, f % m);
        let mut blocks = Vec::with_capacity(m as usize);
        let mut start = 0;
        for j in 0..m {
            let len = base + u32::from(j < extra);
            blocks.push(SimhashBlock { start, len });
            start += len;
        }
        let lead = (m - k) as usize;
        let mut tables = Vec::new();
        let mut comb: Vec<u32> = (0..lead as u32).collect();
        loop {
            tables.push(comb.clone());
            // Next (m - k)-subset in lexicographic order.
            let Some(i) = (0..lead).rev().find(|&i| comb[i] < m - (lead - i) as u32) else { break };
            comb[i] += 1;
            for j in i + 1..lead {
                comb[j] = comb[j - 1] + 1;
            }
        }
        Ok(SimhashTableDesign { f, k, m, blocks, tables })
    }

    /// Chooses m for a collection of about `n_rows` fingerprints of `f` bits and radius `k`:
    /// the m in `k + 1 ..= min(f, 64)` (at most [`MAX_SIMHASH_TABLES`] tables) minimising
    /// [`SimhashTableDesign::probe_cost`]`(n_rows)`, the smaller m on ties. With k = 3 and
    /// f = 64 this gives four tables (16-bit prefixes) up to about 25M rows.
    pub fn design(n_rows: u64, k: u32, f: u32) -> Result<Self, IndexError> {
        check_f_k(f, k)?;
        let mut best: Option<(f64, SimhashTableDesign)> = None;
        for m in k + 1..=f.min(64) {
            if binomial(m, k) > MAX_SIMHASH_TABLES as u64 {
                break;
            }
            let d = SimhashTableDesign::with_blocks(f, k, m)?;
            let cost = d.probe_cost(n_rows);
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, d));
            }
        }
        best.map(|(_, d)| d).ok_or_else(|| IndexError::invalid("k", k, "a radius with a design of <= 256 tables"))
    }

    /// Checks a (decoded) design against its invariant: it must equal
    /// `with_blocks(f, k, m)`.
    pub fn validate(&self) -> Result<(), IndexError> {
        let want = SimhashTableDesign::with_blocks(self.f, self.k, self.m)
            .map_err(|e| IndexError::inconsistent("simhash table design", e))?;
        if *self != want {
            return Err(IndexError::inconsistent(
                "simhash table design",
                format!(
                    "blocks or tables differ from the canonical layout for f = {}, k = {}, m = {}",
                    self.f, self.k, self.m
                ),
            ));
        }
        Ok(())
    }

    /// The fingerprint width f.
    pub fn f(&self) -> u32 {
        self.f
    }
    /// The radius k: every fingerprint within distance <= k is found.
    pub fn k(&self) -> u32 {
        self.k
    }
    /// The number of blocks m.
    pub fn m(&self) -> u32 {
        self.m
    }
    /// The blocks, in order from bit 0.
    pub fn blocks(&self) -> &[SimhashBlock] {
        &self.blocks
    }
    /// Each table's leading blocks (ascending block numbers), in table order.
    pub fn tables(&self) -> &[Vec<u32>] {
        &self.tables
    }
    /// The number of tables, C(m, k).
    pub fn table_count(&self) -> usize {
        self.tables.len()
    }

    /// Table t's prefix length p_t in bits (0 if t is out of range).
    pub fn prefix_bits(&self, table: usize) -> u32 {
        self.tables.get(table).map_or(0, |l| l.iter().map(|&b| self.blocks[b as usize].len).sum())
    }

    /// The shortest prefix over all tables.
    pub fn min_prefix_bits(&self) -> u32 {
        (0..self.table_count()).map(|t| self.prefix_bits(t)).min().unwrap_or(0)
    }

    /// The expected number of unrelated candidates per query over all tables for `n_rows`
    /// uniformly random fingerprints: sum over tables of n / 2^p_t.
    pub fn expected_candidates(&self, n_rows: u64) -> f64 {
        (0..self.table_count()).map(|t| n_rows as f64 * (-f64::from(self.prefix_bits(t))).exp2()).sum()
    }

    /// The cost model `design` minimises, in candidate checks per query:
    /// `tables * SIMHASH_PROBE_COST + expected_candidates(n_rows)`.
    pub fn probe_cost(&self, n_rows: u64) -> f64 {
        self.table_count() as f64 * SIMHASH_PROBE_COST + self.expected_candidates(n_rows)
    }

    /// The leading-block bitmask of table t (bit j set when block j leads).
    fn leading_mask(&self, table: usize) -> u64 {
        self.tables.get(table).map_or(0, |l| l.iter().fold(0u64, |m, &b| m | 1u64 << b))
    }

    /// Calls `visit(block, shift)` for table t's blocks in permuted order, where `shift` is
    /// the bit position of the block's lowest bit in the permuted key.
    #[inline]
    fn for_each_placement(&self, table: usize, mut visit: impl FnMut(SimhashBlock, u32, u32)) {
        let lead = self.leading_mask(table);
        let mut top = self.f;
        let leading = self.tables.get(table).map_or(&[][..], |l| &l[..]);
        let rest = (0..self.m).filter(|&b| lead >> b & 1 == 0);
        for b in leading.iter().copied().chain(rest) {
            let block = self.blocks[b as usize];
            top -= block.len;
            visit(block, b, top);
        }
    }

    /// Table t's permuted key of a fingerprint given as `u128` (bits at and above f are
    /// ignored), as specified in the module docs. Out-of-range tables give 0.
    pub fn permute_u128(&self, table: usize, fp: u128) -> u128 {
        let mut key = 0u128;
        self.for_each_placement(table, |block, _, shift| key |= block.extract(fp) << shift);
        key
    }

    /// Table t's permutation as a list of block moves, for permuting many fingerprints:
    /// [`TablePermutation::apply`] equals [`SimhashTableDesign::permute_u128`].
    pub(crate) fn table_permutation(&self, table: usize) -> TablePermutation {
        let mut moves = Vec::with_capacity(self.blocks.len());
        self.for_each_placement(table, |block, _, shift| moves.push((block.start, low_mask(block.len), shift)));
        TablePermutation { moves }
    }

    /// The inverse of [`SimhashTableDesign::permute_u128`].
    pub fn unpermute_u128(&self, table: usize, key: u128) -> u128 {
        let mut fp = 0u128;
        self.for_each_placement(table, |block, _, shift| fp |= ((key >> shift) & low_mask(block.len)) << block.start);
        fp
    }

    /// Table t's permuted key of a fingerprint of the design's width.
    #[inline]
    pub fn permute<F: Fingerprint>(&self, table: usize, fp: F) -> F {
        F::from_u128_truncating(self.permute_u128(table, fp.to_u128()))
    }

    /// The prefix of a permuted key in table t: `key >> (f - p_t)`.
    #[inline]
    pub fn prefix<F: Fingerprint>(&self, table: usize, key: F) -> F {
        key.shr(self.f - self.prefix_bits(table))
    }

    /// Every table's permuted key of `fp`, in table order.
    pub fn permuted_keys<F: Fingerprint>(&self, fp: F) -> Vec<F> {
        (0..self.table_count()).map(|t| self.permute(t, fp)).collect()
    }

    /// Whether table t is the canonical table of a pair whose permuted keys in table t
    /// differ by `key_xor` (`P_t(x) ^ P_t(q)`): the lowest-numbered table whose leading
    /// blocks all agree. Exactly one table is canonical for a pair within distance k.
    pub fn is_canonical(&self, table: usize, key_xor: u128) -> bool {
        let mut differing = 0u64;
        self.for_each_placement(table, |block, b, shift| {
            if (key_xor >> shift) & low_mask(block.len) != 0 {
                differing |= 1u64 << b;
            }
        });
        (0..self.table_count()).find(|&t| self.leading_mask(t) & differing == 0) == Some(table)
    }
}

fn check_f_k(f: u32, k: u32) -> Result<(), IndexError> {
    if f != 64 && f != 128 {
        return Err(IndexError::invalid("f", f, "64 or 128 fingerprint bits"));
    }
    if k >= 64 {
        return Err(IndexError::invalid("k", k, "a radius below 64"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The precomputed permutation equals `permute_u128` on every table of several designs,
    /// bits above f included in the input.
    #[test]
    fn table_permutation_equals_permute() {
        let mut x = 0x9e37_79b9_7f4a_7c15u128 << 64 | 0x2545_f491_4f6c_dd1d;
        for (f, k, m) in [(64, 3, 4), (64, 3, 5), (64, 6, 8), (128, 3, 4), (128, 4, 7)] {
            let d = SimhashTableDesign::with_blocks(f, k, m).expect("design");
            for t in 0..d.table_count() {
                let p = d.table_permutation(t);
                for _ in 0..200 {
                    x = x.wrapping_mul(0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645).wrapping_add(1);
                    assert_eq!(p.apply(x), d.permute_u128(t, x), "f = {f}, m = {m}, table {t}");
                    if f <= 64 {
                        assert_eq!(u128::from(p.apply64(x as u64)), p.apply(x), "f = {f}, m = {m}, table {t}");
                    }
                }
            }
        }
    }

    #[test]
    fn four_block_layout_is_as_specified() {
        let d = SimhashTableDesign::with_blocks(64, 3, 4).expect("design");
        assert_eq!(
            d.blocks().iter().map(|b| (b.start, b.len)).collect::<Vec<_>>(),
            [(0, 16), (16, 16), (32, 16), (48, 16)]
        );
        assert_eq!(d.tables(), [vec![0], vec![1], vec![2], vec![3]]);
        assert!((0..4).all(|t| d.prefix_bits(t) == 16));
        let x: u64 = 0x4444_3333_2222_1111;
        // Table 2: block 2 leads, then blocks 0, 1, 3.
        assert_eq!(d.permute(2, x), 0x3333_1111_2222_4444);
        assert_eq!(d.permute(0, x), 0x1111_2222_3333_4444);
        assert_eq!(d.permute(3, x), 0x4444_1111_2222_3333);
        assert_eq!(d.prefix(2, d.permute(2, x)), 0x3333);
    }

    #[test]
    fn unequal_blocks_put_the_longer_ones_first() {
        let d = SimhashTableDesign::with_blocks(64, 3, 5).expect("design");
        assert_eq!(d.blocks().iter().map(|b| b.len).collect::<Vec<_>>(), [13, 13, 13, 13, 12]);
        assert_eq!(d.table_count(), 10);
        assert_eq!(d.tables()[0], [0, 1]);
        assert_eq!(d.tables()[4], [1, 2]);
        assert_eq!(d.tables()[9], [3, 4]);
        assert_eq!((d.prefix_bits(0), d.prefix_bits(9), d.min_prefix_bits()), (26, 25, 25));
        // Table [1, 3]: order 1, 3, 0, 2, 4.
        let t = d.tables().iter().position(|l| l == &[1, 3]).expect("table");
        let x: u64 = 0x0123_4567_89ab_cdef;
        let b = |j: usize| (x >> d.blocks()[j].start) & ((1 << d.blocks()[j].len) - 1);
        let want = b(1) << 51 | b(3) << 38 | b(0) << 25 | b(2) << 12 | b(4);
        assert_eq!(d.permute(t, x), want);
        let d = SimhashTableDesign::with_blocks(128, 3, 4).expect("design");
        assert!((0..4).all(|t| d.prefix_bits(t) == 32));
        assert_eq!(SimhashTableDesign::with_blocks(64, 6, 8).expect("design").table_count(), 28);
    }

    #[test]
    fn design_picks_four_tables_for_radius_three_at_ten_million() {
        let d = SimhashTableDesign::design(10_000_000, 3, 64).expect("design");
        assert_eq!((d.m(), d.table_count(), d.min_prefix_bits()), (4, 4, 16));
        assert!((d.expected_candidates(10_000_000) - 4.0 * 10_000_000.0 / 65536.0).abs() < 1e-6);
        assert_eq!(SimhashTableDesign::design(1000, 3, 64).expect("design").m(), 4);
        assert_eq!(SimhashTableDesign::design(10_000_000, 3, 128).expect("design").m(), 4);
        // Larger collections move to longer prefixes.
        assert!(SimhashTableDesign::design(1_000_000_000, 3, 64).expect("design").m() > 4);
        let d = SimhashTableDesign::design(10_000_000, 0, 64).expect("design");
        assert_eq!((d.table_count(), d.prefix_bits(0)), (1, 64));
        for k in 0..8 {
            let d = SimhashTableDesign::design(10_000_000, k, 64).expect("design");
            assert!(d.m() > k && d.table_count() <= MAX_SIMHASH_TABLES);
        }
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        let bad = |r: Result<SimhashTableDesign, IndexError>, p: &str| {
            assert!(matches!(r, Err(IndexError::InvalidParam { param, .. }) if param == p), "{p}");
        };
        bad(SimhashTableDesign::with_blocks(32, 3, 4), "f");
        bad(SimhashTableDesign::with_blocks(64, 3, 3), "m");
        bad(SimhashTableDesign::with_blocks(64, 3, 65), "m");
        bad(SimhashTableDesign::with_blocks(64, 20, 40), "m");
        bad(SimhashTableDesign::design(10, 64, 64), "k");
    }

    #[test]
    fn serde_round_trip_and_validate() {
        let d = SimhashTableDesign::with_blocks(128, 4, 6).expect("design");
        let bytes = postcard::to_allocvec(&d).expect("encode");
        let back: SimhashTableDesign = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(back, d);
        back.validate().expect("valid");
        let mut tampered = d.clone();
        tampered.tables.swap(0, 1);
        assert!(matches!(tampered.validate(), Err(IndexError::Inconsistent { .. })));
        let mut tampered = d;
        tampered.m = 3;
        assert!(matches!(tampered.validate(), Err(IndexError::Inconsistent { .. })));
    }
}
