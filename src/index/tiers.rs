//! Size-tiered merging of runs, shared by the LSH index and the SimHash tables: each write
//! transaction adds one run, and when at least [`MERGE_WIDTH`] of the newest runs each are
//! at most as large as all newer runs of that span together, the span merges into one. An
//! index built in batches of B rows keeps tiers of about `B * 4^i` rows, at most
//! `MERGE_WIDTH - 1` runs per tier, and an entry is rewritten about once per tier,
//! `log_4(N / B)` times. Past [`MAX_RUNS`] runs the neighbouring pair that is smallest
//! together merges, which bounds the work of a probe.

use std::ops::Range;

/// The fewest runs of one size tier that merge (the tiers' growth factor).
pub(crate) const MERGE_WIDTH: usize = 4;

/// The most runs an index keeps after a write: every probe reads each table or band in
/// every run it has not cached merged.
pub(crate) const MAX_RUNS: usize = 10;

/// The neighbouring runs to merge next, if any (`runs`: their sizes, oldest first):
///
/// * the size tier: the longest span of newest runs in which each run is at most as large
///   as all newer runs of the span together, when it has at least [`MERGE_WIDTH`]
///   runs;
/// * else, past [`MAX_RUNS`] runs, the neighbouring pair smallest together
///   (the newest such pair).
pub(crate) fn merge_span(runs: &[u64]) -> Option<Range<usize>> {
    let n = runs.len();
    let mut start = n.checked_sub(1)?;
    let mut newer = runs[start];
    while start > 0 && runs[start - 1] <= newer {
        start -= 1;
        newer = newer.saturating_add(runs[start]);
    }
    if n - start >= MERGE_WIDTH {
        return Some(start..n);
    }
    if n <= MAX_RUNS {
        return None;
    }
    let pair = |j: usize| runs[j].saturating_add(runs[j + 1]);
    let j = (0..n - 1).rev().min_by_key(|&j| pair(j))?;
    Some(j..j + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_span_takes_a_full_size_tier_or_the_smallest_pair_past_the_cap() {
        assert_eq!(merge_span(&[]), None);
        assert_eq!(merge_span(&([10])), None);
        assert_eq!(merge_span(&([10, 10, 10])), None);
        assert_eq!(merge_span(&([10, 10, 10, 10])), Some(0..4));
        // 41 > 10 + 10 + 10: the tier is the three newest runs only, then the four.
        assert_eq!(merge_span(&([41, 10, 10, 10])), None);
        assert_eq!(merge_span(&([41, 10, 10, 10, 10])), Some(1..5));
        // 30 <= 10 + 10 + 10: an older run joins once the newer ones outweigh it.
        assert_eq!(merge_span(&([500, 30, 10, 10, 10])), Some(1..5));
        // Past the cap without a full tier: the pair with the fewest entries, newest first.
        let mut many: Vec<u64> = (0..=MAX_RUNS as u64).map(|i| 1 << (2 * (MAX_RUNS as u64 - i) + 4)).collect();
        many[3] = 5;
        many[4] = 5;
        let span = merge_span(&many).expect("over the cap");
        assert_eq!(span.len(), 2);
        let least = (0..many.len() - 1).map(|j| many[j] + many[j + 1]).min().unwrap();
        assert_eq!(many[span.start] + many[span.start + 1], least);
    }

    /// Simulated growth in equal batches: runs stay few and each entry is rewritten a
    /// logarithmic number of times.
    #[test]
    fn growth_in_batches_keeps_few_runs_and_bounded_rewrites() {
        for (batches, most_runs, most_writes) in [(100, 7, 4.0), (1000, MAX_RUNS, 5.5), (10_000, MAX_RUNS, 8.0)] {
            let (mut runs, mut written, mut peak) = (Vec::<u64>::new(), 0u64, 0);
            for _ in 0..batches {
                runs.push(1);
                written += 1;
                while let Some(span) = merge_span(&runs) {
                    let e = runs[span.clone()].iter().sum();
                    written += e;
                    runs.splice(span, [e]);
                }
                peak = peak.max(runs.len());
            }
            assert!(peak <= most_runs, "{batches} batches: {peak} runs");
            // 3.8, 5.1 and 7.4 here; the earlier pairwise rule (merge while the older held at
            // most 4 times the newer) rewrote 8.4 and 12.8 times at 100 and 1000 batches.
            let per_entry = written as f64 / batches as f64;
            assert!(per_entry < most_writes, "{batches} batches: {per_entry} writes per entry");
        }
    }
}
