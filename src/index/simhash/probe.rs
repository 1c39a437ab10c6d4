//! Exact SimHash radius search over permuted tables, independent of where the tables live.
//!
//! A table is one or more [`RunView`]s: parallel slices of permuted keys and row ids, sorted
//! by key. [`filter_bucket`] is the unit the persisted index reuses: given the candidates of
//! one prefix bucket (any contiguous key range containing the query's full table prefix),
//! it keeps those within distance k of the query, reporting each row only from its
//! canonical table, so no set is needed to deduplicate rows across tables. Fingerprints are
//! never deduplicated: two rows with identical fingerprints are two results.

use super::design::SimhashTableDesign;
use crate::index::error::IndexError;
use crate::index::fingerprint::Fingerprint;

/// A row within the radius of a query. Orders by (distance, row).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimhashMatch {
    /// The Hamming distance to the query, <= k.
    pub distance: u32,
    /// The row id.
    pub row: u64,
}

/// A pair of rows within distance k of each other. Orders by (distance, a, b).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimhashPair {
    /// The Hamming distance between the two fingerprints, <= k.
    pub distance: u32,
    /// The smaller row id.
    pub a: u64,
    /// The larger row id.
    pub b: u64,
}

/// One sorted run of a table: `keys[i]` is the permuted key of row `rows[i]`.
///
/// Invariant: equal lengths and `keys` non-decreasing. A row id appears at most once over
/// all runs of one table (the caller's invariant; duplicates would be reported twice).
#[derive(Clone, Copy, Debug)]
pub struct RunView<'a, F> {
    pub(super) keys: &'a [F],
    pub(super) rows: &'a [u64],
}

impl<'a, F: Fingerprint> RunView<'a, F> {
    /// A run over `keys` and `rows`, checked in O(n): `SizeMismatch` for different
    /// lengths, `UnsortedRun` (table 0; see [`RunView::check_sorted`]) for unsorted keys.
    pub fn new(keys: &'a [F], rows: &'a [u64]) -> Result<Self, IndexError> {
        if keys.len() != rows.len() {
            return Err(IndexError::size("rows of run", keys.len(), rows.len()));
        }
        let run = RunView { keys, rows };
        run.check_sorted(0)?;
        Ok(run)
    }

    /// A run whose key order the caller guarantees (built sorted, or read back from a
    /// checked page); debug builds verify it. Lengths are always checked.
    pub fn from_sorted(keys: &'a [F], rows: &'a [u64]) -> Result<Self, IndexError> {
        if keys.len() != rows.len() {
            return Err(IndexError::size("rows of run", keys.len(), rows.len()));
        }
        let run = RunView { keys, rows };
        debug_assert!(run.check_sorted(0).is_ok(), "RunView::from_sorted given unsorted keys");
        Ok(run)
    }

    /// `UnsortedRun { table, position }` at the first key smaller than its predecessor.
    pub fn check_sorted(&self, table: usize) -> Result<(), IndexError> {
        match self.keys.windows(2).position(|w| w[1] < w[0]) {
            Some(i) => Err(IndexError::UnsortedRun { table, position: i + 1 }),
            None => Ok(()),
        }
    }

    /// The permuted keys.
    pub fn keys(&self) -> &'a [F] {
        self.keys
    }
    /// The row ids.
    pub fn rows(&self) -> &'a [u64] {
        self.rows
    }
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    /// Whether the run is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The sub-run of entries whose key has the given top `prefix_bits` bits (`prefix` is
    /// `key >> (F::BITS - prefix_bits)`), by binary search.
    pub fn bucket(&self, prefix_bits: u32, prefix: F) -> RunView<'a, F> {
        let shift = F::BITS - prefix_bits.min(F::BITS);
        let lo = self.keys.partition_point(|k| k.shr(shift) < prefix);
        let hi = lo + self.keys[lo..].partition_point(|k| k.shr(shift) <= prefix);
        RunView { keys: &self.keys[lo..hi], rows: &self.rows[lo..hi] }
    }

    /// The entries `[lo, hi)` (clamped).
    pub fn slice(&self, lo: usize, hi: usize) -> RunView<'a, F> {
        let hi = hi.min(self.len());
        let lo = lo.min(hi);
        RunView { keys: &self.keys[lo..hi], rows: &self.rows[lo..hi] }
    }
}

/// Reusable buffers for probes (avoids an allocation per bucket).
#[derive(Debug, Default)]
pub struct ProbeScratch {
    hits: Vec<(u32, usize)>,
}

/// Appends to `out` every entry of `bucket` (candidates from table `table`) whose key is
/// within distance k of `query_key` (the query's permuted key in that table) and for which
/// `table` is the canonical table. `bucket` may be any key range of the table that contains
/// every key sharing the query's full table prefix; extra entries are filtered out.
pub fn filter_bucket<F: Fingerprint>(
    design: &SimhashTableDesign,
    table: usize,
    query_key: F,
    bucket: RunView<'_, F>,
    scratch: &mut ProbeScratch,
    out: &mut Vec<SimhashMatch>,
) {
    scratch.hits.clear();
    F::within(query_key, bucket.keys, design.k(), &mut scratch.hits);
    for &(distance, i) in &scratch.hits {
        let xor = (bucket.keys[i].to_u128()) ^ query_key.to_u128();
        if design.is_canonical(table, xor) {
            out.push(SimhashMatch { distance, row: bucket.rows[i] });
        }
    }
}

fn check_tables<T>(design: &SimhashTableDesign, tables: &[T]) -> Result<(), IndexError> {
    if tables.len() != design.table_count() {
        return Err(IndexError::size("tables", design.table_count(), tables.len()));
    }
    Ok(())
}

fn check_width<F: Fingerprint>(design: &SimhashTableDesign) -> Result<(), IndexError> {
    if F::BITS != design.f() {
        return Err(IndexError::size("fingerprint bits", design.f(), F::BITS));
    }
    Ok(())
}

/// Every row within distance <= k of `query`, sorted by (distance, row), each row once.
/// `tables[t]` holds the runs of table t (in design order).
pub fn probe<F: Fingerprint>(
    design: &SimhashTableDesign,
    query: F,
    tables: &[&[RunView<'_, F>]],
) -> Result<Vec<SimhashMatch>, IndexError> {
    check_width::<F>(design)?;
    check_tables(design, tables)?;
    let mut scratch = ProbeScratch::default();
    let mut out = Vec::new();
    for (t, runs) in tables.iter().enumerate() {
        let key = design.permute(t, query);
        let (bits, prefix) = (design.prefix_bits(t), design.prefix(t, key));
        for run in runs.iter() {
            filter_bucket(design, t, key, run.bucket(bits, prefix), &mut scratch, &mut out);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Every pair of rows within distance <= k, each pair once, sorted by (distance, a, b),
/// from one run per table. Pairs are compared only inside their canonical table's buckets.
/// Work is quadratic in bucket size: about `tables * n^2 / 2^p` distance checks for n
/// random fingerprints with p-bit prefixes (plus the square of every duplicate cluster).
pub fn self_join<F: Fingerprint>(
    design: &SimhashTableDesign,
    tables: &[RunView<'_, F>],
) -> Result<Vec<SimhashPair>, IndexError> {
    check_width::<F>(design)?;
    check_tables(design, tables)?;
    let mut hits = Vec::new();
    let mut out = Vec::new();
    for (t, run) in tables.iter().enumerate() {
        join_prefix_runs(design, t, run.keys, run.rows, design.k(), &mut hits, |distance, a, b| {
            out.push(SimhashPair { distance, a, b });
        });
    }
    out.sort_unstable();
    Ok(out)
}

/// The pairs of table `t` within `radius` (<= k): for sorted permuted `keys` of that table
/// and their `rows`, calls `emit(distance, a, b)` (a < b) for every pair inside one run of
/// equal table prefixes whose canonical table is `t`, so a pair found in several tables is
/// emitted once over all of them.
pub(crate) fn join_prefix_runs<F: Fingerprint>(
    design: &SimhashTableDesign,
    t: usize,
    keys: &[F],
    rows: &[u64],
    radius: u32,
    hits: &mut Vec<(u32, usize)>,
    mut emit: impl FnMut(u32, u64, u64),
) {
    // The design's width, not F's: 64-bit fingerprints may be held in u128 keys.
    let shift = design.f() - design.prefix_bits(t);
    let mut lo = 0;
    while lo < keys.len() {
        let prefix = keys[lo].shr(shift);
        let hi = lo + keys[lo..].partition_point(|k| k.shr(shift) == prefix);
        for i in lo..hi {
            hits.clear();
            F::within(keys[i], &keys[i + 1..hi], radius, hits);
            for &(distance, j) in hits.iter() {
                let j = i + 1 + j;
                let (a, b) = (rows[i], rows[j]);
                if a != b && design.is_canonical(t, keys[i].to_u128() ^ keys[j].to_u128()) {
                    emit(distance, a.min(b), a.max(b));
                }
            }
        }
        lo = hi;
    }
}

/// The exact answer by scanning every fingerprint (the oracle and the baseline): rows of
/// `fps[i]` within distance <= k of `query`, sorted by (distance, row).
pub fn brute_force<F: Fingerprint>(query: F, fps: &[F], rows: &[u64], k: u32) -> Vec<SimhashMatch> {
    let mut hits = Vec::new();
    F::within(query, fps, k, &mut hits);
    let mut out: Vec<SimhashMatch> =
        hits.into_iter().filter_map(|(distance, i)| rows.get(i).map(|&row| SimhashMatch { distance, row })).collect();
    out.sort_unstable();
    out
}
