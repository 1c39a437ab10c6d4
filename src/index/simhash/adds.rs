//! One table's share of a transaction's added SimHash rows: every `(permuted key, row)`
//! entry, sorted by key then row, handed to the bucket writer one bucket at a time.
//!
//! Two forms, one order. For fingerprints of at most 64 bits and many entries, an entry is
//! one `u128`, `key << 64 | row`, sorted by [`sort_packed`] (a radix sort by the key's
//! leading bits, then an insertion sort of each nearly sorted bucket); the bucket is implied
//! by position. Otherwise the entries are `(key, row)` pairs sorted by [`sort_pairs`]. A
//! comparison sort of pairs was 45% of a 10M-row rebuild.

use super::design::TablePermutation;
use super::format::Geometry;
use crate::index::radix::{radix_by_prefix, sort_nearly_sorted};

/// Widest bucket prefix whose buckets are counted (a table of `2^bits` counters).
const COUNTING_SORT_MAX_BITS: u32 = 24;
/// Fewest entries sorted by counting (below this a comparison sort is as fast).
const COUNTING_SORT_MIN_ENTRIES: usize = 1 << 12;

/// A table's added entries, sorted by (permuted key, row).
pub(crate) enum TableAdds {
    /// `key << 64 | row` (f <= 64); bucket b's entries are `entries[starts[b]..starts[b + 1]]`.
    Packed { entries: Vec<u128>, starts: Vec<usize> },
    /// `(permuted key, row)`.
    Pairs(Vec<(u128, u64)>),
}

impl TableAdds {
    /// Permutes `added` (`(row, fingerprint)`) into table `p` of geometry `g` and sorts it.
    /// `scratch` is working memory, kept by the caller across tables (fresh memory is paid
    /// for in page faults).
    pub(crate) fn build(
        added: &[(u64, u128)],
        p: &TablePermutation,
        g: Geometry,
        scratch: &mut Vec<u128>,
    ) -> TableAdds {
        let buckets = 1usize << g.bits.min(COUNTING_SORT_MAX_BITS);
        let countable = g.bits <= COUNTING_SORT_MAX_BITS && added.len() >= buckets.max(COUNTING_SORT_MIN_ENTRIES);
        if !countable || g.f > 64 {
            let mut pairs: Vec<(u128, u64)> = added.iter().map(|&(row, fp)| (p.apply(fp), row)).collect();
            sort_pairs(&mut pairs, g);
            return TableAdds::Pairs(pairs);
        }
        let (entries, starts) = sort_packed(added, p, g, scratch);
        TableAdds::Packed { entries, starts }
    }

    /// A cursor over the buckets, ascending.
    pub(crate) fn cursor(&self) -> AddsCursor<'_> {
        AddsCursor { adds: self, at: 0 }
    }
}

/// Walks a [`TableAdds`] bucket by bucket. `at` is the next bucket (packed) or the next
/// entry (pairs).
pub(crate) struct AddsCursor<'a> {
    adds: &'a TableAdds,
    at: usize,
}

impl AddsCursor<'_> {
    /// The next bucket holding entries, if any.
    pub(crate) fn peek(&mut self, g: Geometry) -> Option<u32> {
        match self.adds {
            TableAdds::Packed { starts, .. } => {
                while self.at + 1 < starts.len() && starts[self.at] == starts[self.at + 1] {
                    self.at += 1;
                }
                (self.at + 1 < starts.len()).then_some(self.at as u32)
            }
            TableAdds::Pairs(pairs) => pairs.get(self.at).map(|e| g.bucket(e.0)),
        }
    }

    /// Appends the entries of bucket `bucket` (which must be [`AddsCursor::peek`]'s answer)
    /// to `out` as `(key, row)`, in order, and moves past them.
    pub(crate) fn take_into(&mut self, g: Geometry, bucket: u32, out: &mut Vec<(u128, u64)>) {
        match self.adds {
            TableAdds::Packed { entries, starts } => {
                debug_assert_eq!(bucket as usize, self.at);
                let range = starts[self.at]..starts[self.at + 1];
                out.extend(entries[range].iter().map(|&e| (e >> 64, e as u64)));
                self.at += 1;
            }
            TableAdds::Pairs(pairs) => {
                while let Some(&e) = pairs.get(self.at).filter(|e| g.bucket(e.0) == bucket) {
                    out.push(e);
                    self.at += 1;
                }
            }
        }
    }
}

/// Permutes and sorts a table of f <= 64 bits, where an entry fits one `u128` as
/// `key << 64 | row`. Returns the entries and where each bucket starts (`2^bits + 1` values).
///
/// [`radix_by_prefix`] on the key's top `bits + 8` bits (its passes write to few output
/// streams, which stay in cache; one scatter over all `2^bits` buckets wrote each entry to a
/// different page), then an insertion sort of each bucket: entries sharing those top bits
/// are few, so buckets are nearly sorted.
fn sort_packed(
    added: &[(u64, u128)],
    p: &TablePermutation,
    g: Geometry,
    scratch: &mut Vec<u128>,
) -> (Vec<u128>, Vec<usize>) {
    debug_assert!(g.f <= 64 && g.bits <= COUNTING_SORT_MAX_BITS);
    let sort_bits = (g.bits + 8).min(g.f);
    // `apply64` keeps the low f bits, so a prefix is below 2^sort_bits and a bucket below 2^bits.
    let prefix = |e: &u128| ((e >> 64) as u64 >> (g.f - sort_bits)) as usize;
    let to_bucket = sort_bits - g.bits;
    let mut starts = vec![0usize; (1usize << g.bits) + 1];
    let mut entries: Vec<u128> = added
        .iter()
        .map(|&(row, fp)| {
            let e = u128::from(p.apply64(fp as u64)) << 64 | u128::from(row);
            starts[(prefix(&e) >> to_bucket) + 1] += 1;
            e
        })
        .collect();
    for b in 0..starts.len() - 1 {
        starts[b + 1] += starts[b];
    }
    radix_by_prefix(&mut entries, scratch, sort_bits, prefix);
    for w in starts.windows(2) {
        sort_nearly_sorted(&mut entries[w[0]..w[1]]);
    }
    (entries, starts)
}

/// Sorts `(key, row)` pairs: one counting pass over the buckets (the keys' leading bits) and
/// a sort of each bucket's few entries when there are many, else a plain sort. A key wider
/// than f (not a permuted key: its bucket would wrap) makes it fall back to the plain sort.
pub(crate) fn sort_pairs(adds: &mut Vec<(u128, u64)>, g: Geometry) {
    let buckets = 1usize << g.bits.min(COUNTING_SORT_MAX_BITS);
    if g.bits > COUNTING_SORT_MAX_BITS || adds.len() < buckets.max(COUNTING_SORT_MIN_ENTRIES) {
        adds.sort_unstable();
        return;
    }
    // start[b]: where bucket b's entries begin in the output.
    let wide = |k: u128| g.f < 128 && k >> g.f != 0;
    let mut start = vec![0usize; buckets + 1];
    for a in adds.iter() {
        match start.get_mut(g.bucket(a.0) as usize + 1) {
            Some(n) if !wide(a.0) => *n += 1,
            _ => return adds.sort_unstable(),
        }
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    let mut out = vec![(0u128, 0u64); adds.len()];
    let mut next = start.clone();
    for &a in adds.iter() {
        let at = &mut next[g.bucket(a.0) as usize];
        out[*at] = a;
        *at += 1;
    }
    for w in start.windows(2) {
        out[w[0]..w[1]].sort_unstable();
    }
    *adds = out;
}

#[cfg(test)]
mod tests {
    use super::{Geometry, TableAdds, sort_pairs};
    use crate::index::radix::tests::xorshift;
    use crate::index::simhash::SimhashTableDesign;

    /// The counting sort gives exactly the plain sort's order: small and large inputs, few
    /// and many buckets, equal keys with different rows, the fallbacks (too few entries,
    /// buckets too wide, a key wider than f).
    #[test]
    fn sort_pairs_equals_a_plain_sort() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let cases = [(10, 64, 4, 0), (5_000, 64, 4, 0), (20_000, 64, 12, 0), (70_000, 64, 16, 3), (5_000, 64, 30, 0)];
        for (n, f, bits, skew) in cases.into_iter().chain([(30_000, 128, 16, 0), (9_000, 64, 8, 1)]) {
            let g = Geometry { f, bits, suffix_bytes: (f - bits).div_ceil(8) as usize };
            let entries: Vec<(u128, u64)> = (0..n)
                .map(|i| {
                    let wide = u128::from(next()) << 64 | u128::from(next());
                    // skew 1: one key wider than f; skew 3: many repeated keys.
                    let key = match skew {
                        1 if i == n / 2 => 1u128 << 100,
                        3 => (u128::from(next() % 97) << (f - bits)) | 5,
                        _ => wide >> (128 - f),
                    };
                    (key, next() % 1_000)
                })
                .collect();
            let mut want = entries.clone();
            want.sort_unstable();
            let mut got = entries;
            sort_pairs(&mut got, g);
            assert!(got == want, "n = {n}, f = {f}, bits = {bits}: the orders differ");
        }
    }

    /// Both forms hand out, bucket by bucket, exactly the sorted `(permuted key, row)` list:
    /// 64- and 128-bit designs, bucket widths below and at the prefix, few and many entries,
    /// repeated fingerprints (equal keys, rows in any order), fingerprint bits above f, and
    /// huge buckets of one key.
    #[test]
    fn buckets_hand_out_the_sorted_entries() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let cases = [
            (64, 3, 4, 16, 70_000),
            (64, 3, 4, 8, 9_000),
            (64, 6, 8, 12, 5_000),
            (64, 3, 4, 16, 100),
            (64, 3, 4, 12, 20_000),
        ];
        for (f, k, m, bits, n) in cases.into_iter().chain([(128, 3, 4, 16, 70_000), (128, 4, 7, 12, 5_000)]) {
            let d = SimhashTableDesign::with_blocks(f, k, m).expect("design");
            // n = 20,000: only three distinct fingerprints, so buckets of thousands of equal
            // keys in random row order (the insertion sort gives up and sorts).
            let few: Vec<u128> = (0..3).map(|_| u128::from(next()) << 64 | u128::from(next())).collect();
            let mut added: Vec<(u64, u128)> = Vec::with_capacity(n);
            for i in 0..n {
                let fp = if n == 20_000 { few[i % 3] } else { u128::from(next()) << 64 | u128::from(next()) };
                added.push((next() % 1_000_000, fp));
                if i % 7 == 0 {
                    added.push((next() % 1_000_000, fp));
                }
            }
            for t in 0..d.table_count() {
                let g = Geometry::of(&d, bits, t);
                let p = d.table_permutation(t);
                let mut want: Vec<(u128, u64)> = added.iter().map(|&(r, fp)| (d.permute_u128(t, fp), r)).collect();
                want.sort_unstable();
                let adds = TableAdds::build(&added, &p, g, &mut Vec::new());
                let (mut got, mut cur, mut last) = (Vec::new(), adds.cursor(), None);
                while let Some(b) = cur.peek(g) {
                    assert!(last < Some(b), "f = {f}, table {t}: bucket {b} after {last:?}");
                    let from = got.len();
                    cur.take_into(g, b, &mut got);
                    assert!(got.len() > from && got[from..].iter().all(|e| g.bucket(e.0) == b));
                    last = Some(b);
                }
                assert!(got == want, "f = {f}, m = {m}, bits = {bits}, n = {n}, table {t}: the entries differ");
            }
        }
    }
}
