//! [`SimhashMemIndex`]: SimHash permuted tables held in memory, one sorted run per table with
//! a direct-address bucket directory. The reference the persisted index is tested against,
//! and the in-memory half of `benches/index.rs`.

use rayon::prelude::*;

use super::design::SimhashTableDesign;
use super::probe::{ProbeScratch, RunView, SimhashMatch, SimhashPair, filter_bucket, self_join};
use crate::index::error::IndexError;
use crate::index::fingerprint::Fingerprint;

/// The most directory bits per table (2^24 + 1 offsets of 4 bytes = 64 MiB).
const MAX_DIR_BITS: u32 = 24;

/// One table: keys sorted ascending (ties by row), and `dir[p]..dir[p + 1]` the entries whose
/// top `dir_bits` key bits equal p.
#[derive(Debug, Clone)]
struct MemTable<F> {
    keys: Vec<F>,
    rows: Vec<u64>,
    dir_bits: u32,
    dir: Vec<u32>,
}

/// SimHash tables in memory: build once from (row id, fingerprint) pairs, then probe.
///
/// Invariants: one table per design table; each holds every row exactly once, sorted by
/// (permuted key, row); `dir` has `2^dir_bits + 1` non-decreasing offsets ending at the
/// table length, with `dir_bits <= prefix_bits(t)`.
#[derive(Debug, Clone)]
pub struct SimhashMemIndex<F> {
    design: SimhashTableDesign,
    tables: Vec<MemTable<F>>,
}

impl<F: Fingerprint> SimhashMemIndex<F> {
    /// Builds every table (in parallel on the rayon pool). Fails when the design's width is
    /// not `F::BITS`, a row id repeats, or there are 2^32 rows or more.
    pub fn build(design: SimhashTableDesign, items: &[(u64, F)]) -> Result<Self, IndexError> {
        design.validate()?;
        if F::BITS != design.f() {
            return Err(IndexError::size("fingerprint bits", design.f(), F::BITS));
        }
        if u32::try_from(items.len()).is_err() {
            return Err(IndexError::size("rows (at most 2^32 - 1 in memory)", u64::from(u32::MAX), items.len()));
        }
        let mut ids: Vec<u64> = items.iter().map(|&(r, _)| r).collect();
        ids.par_sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(IndexError::DuplicateRow { row: w[0] });
        }
        drop(ids);
        let dir_bits_cap = (usize::BITS - items.len().leading_zeros()).clamp(1, MAX_DIR_BITS);
        let tables = (0..design.table_count())
            .into_par_iter()
            .map(|t| {
                let mut entries: Vec<(F, u64)> = items.iter().map(|&(row, fp)| (design.permute(t, fp), row)).collect();
                entries.par_sort_unstable();
                let (keys, rows): (Vec<F>, Vec<u64>) = entries.into_iter().unzip();
                let dir_bits = design.prefix_bits(t).min(dir_bits_cap);
                let dir = directory(&keys, dir_bits);
                MemTable { keys, rows, dir_bits, dir }
            })
            .collect();
        Ok(SimhashMemIndex { design, tables })
    }

    /// The design.
    pub fn design(&self) -> &SimhashTableDesign {
        &self.design
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.tables.first().map_or(0, |t| t.keys.len())
    }

    /// Whether the index holds no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Table t as one sorted run.
    pub fn run(&self, table: usize) -> Option<RunView<'_, F>> {
        let t = self.tables.get(table)?;
        RunView::from_sorted(&t.keys, &t.rows).ok()
    }

    /// The entries of table t whose key has the query key's full table prefix.
    fn bucket(&self, table: usize, key: F) -> RunView<'_, F> {
        let Some(t) = self.tables.get(table) else { return RunView { keys: &[], rows: &[] } };
        let d = key.shr(F::BITS - t.dir_bits).to_u128() as usize;
        let (lo, hi) = (t.dir[d] as usize, t.dir[d + 1] as usize);
        let run = RunView { keys: &t.keys[lo..hi], rows: &t.rows[lo..hi] };
        let bits = self.design.prefix_bits(table);
        if bits > t.dir_bits { run.bucket(bits, self.design.prefix(table, key)) } else { run }
    }

    /// Every row within distance <= k of `query`, sorted by (distance, row), appended to
    /// `out` (which is cleared first).
    pub fn probe_into(&self, query: F, scratch: &mut ProbeScratch, out: &mut Vec<SimhashMatch>) {
        out.clear();
        for t in 0..self.tables.len() {
            let key = self.design.permute(t, query);
            filter_bucket(&self.design, t, key, self.bucket(t, key), scratch, out);
        }
        out.sort_unstable();
    }

    /// Every row within distance <= k of `query`, sorted by (distance, row).
    pub fn probe(&self, query: F) -> Vec<SimhashMatch> {
        let mut out = Vec::new();
        self.probe_into(query, &mut ProbeScratch::default(), &mut out);
        out
    }

    /// Every pair of rows within distance <= k, each once, sorted by (distance, a, b).
    pub fn self_join(&self) -> Result<Vec<SimhashPair>, IndexError> {
        let runs: Vec<RunView<'_, F>> = (0..self.tables.len()).filter_map(|t| self.run(t)).collect();
        self_join(&self.design, &runs)
    }
}

/// The `2^bits + 1` bucket offsets of sorted `keys` by their top `bits` bits.
fn directory<F: Fingerprint>(keys: &[F], bits: u32) -> Vec<u32> {
    let n = 1usize << bits;
    let mut dir = vec![0u32; n + 1];
    for k in keys {
        dir[k.shr(F::BITS - bits).to_u128() as usize + 1] += 1;
    }
    let mut acc = 0u32;
    for d in dir.iter_mut() {
        acc += *d;
        *d = acc;
    }
    dir
}
