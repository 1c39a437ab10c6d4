//! Counting equal slots of two signatures (MinHash verification and estimates).

use super::dispatch::{Features, Kernel, run_avx2};

/// The equal positions of two slices (over the shorter length).
struct EqualCount<'a> {
    a: &'a [u64],
    b: &'a [u64],
}

impl Kernel for EqualCount<'_> {
    type Output = usize;
    #[inline(always)]
    fn run(self) -> usize {
        // A sum of 0/1 (not `filter().count()`) so that the loop vectorizes: one 64-bit
        // lane compare and subtract per slot.
        self.a.iter().zip(self.b).map(|(x, y)| u64::from(x == y)).sum::<u64>() as usize
    }
}

/// How many positions `i` have `a[i] == b[i]`, over the shorter length.
pub(crate) fn equal_count(a: &[u64], b: &[u64]) -> usize {
    run_avx2(Features::ALL, EqualCount { a, b })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::TEST_CAPS;
    use crate::simd::test_rng::Rng;

    /// Every tier counts what the slot-by-slot definition counts, for lengths around the
    /// vector widths and every share of equal slots.
    #[test]
    fn equal_count_equals_the_definition_under_every_tier() {
        let mut rng = Rng(17);
        for n in (0..70).chain([127, 128, 129, 512]) {
            for share in [0, 1, 3, 4] {
                let a: Vec<u64> = (0..n).map(|_| rng.next()).collect();
                let b: Vec<u64> =
                    a.iter().map(|&x| if rng.below(4) < share { x } else { x ^ (1 << rng.below(64)) }).collect();
                let want = a.iter().zip(&b).filter(|(x, y)| x == y).count();
                for cap in TEST_CAPS {
                    assert_eq!(run_avx2(cap, EqualCount { a: &a, b: &b }), want, "n = {n}, cap {cap:?}");
                }
                assert_eq!(
                    equal_count(&a, &b[..n / 2]),
                    want.min(n) - b[n / 2..].iter().zip(&a[n / 2..]).filter(|(x, y)| x == y).count()
                );
            }
        }
    }
}
