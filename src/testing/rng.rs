//! Randomness for workloads: a seeded PRNG, or a fuzzer's bytes.

/// A source of random choices: [`SplitMix`] for seeded tests, [`ByteEntropy`] for fuzzers.
pub trait Entropy {
    /// 64 random bits.
    fn next_u64(&mut self) -> u64;

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// splitmix64 (the sketch layer's `splitmix64`): tiny, fully specified, deterministic.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }
}

/// Mixes two numbers into a seed.
pub fn mix(a: u64, b: u64) -> u64 {
    SplitMix::new(a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64()
}

impl Entropy for SplitMix {
    fn next_u64(&mut self) -> u64 {
        crate::sketch::hash::splitmix64(&mut self.0)
    }
}

/// Choices read from a fuzzer's input, a byte or two per choice so that the fuzzer can
/// steer them; past the end of the input every choice is 0.
#[derive(Clone, Debug)]
pub struct ByteEntropy<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteEntropy<'a> {
    /// Choices from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        ByteEntropy { data, pos: 0 }
    }

    fn take(&mut self, n: usize) -> u64 {
        let mut v = 0u64;
        for i in 0..n {
            let b = self.data.get(self.pos).copied().unwrap_or(0);
            self.pos = self.pos.saturating_add(1);
            v |= u64::from(b) << (8 * i);
        }
        v
    }
}

impl Entropy for ByteEntropy<'_> {
    fn next_u64(&mut self) -> u64 {
        self.take(8)
    }

    fn below(&mut self, n: u64) -> u64 {
        match n {
            0 => 0,
            1..=256 => self.take(1) % n,
            257..=65_536 => self.take(2) % n,
            _ => self.take(8) % n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeded tests' data depends on these exact outputs: splitmix64's reference values.
    #[test]
    fn splitmix_outputs_are_pinned() {
        let mut r = SplitMix::new(0);
        let got: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(got, [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F, 0xF88B_B8A8_724C_81EC]);
        assert_eq!(mix(1, 2), 0xF893_A2EE_FB32_555E);
    }
}
