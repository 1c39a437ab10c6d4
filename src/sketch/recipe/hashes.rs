//! Step 7 of a recipe: the token hash of each shingle's UTF-8 bytes.

use sha1::{Digest, Sha1};
use xxhash_rust::xxh3::xxh3_64_with_seed;
use xxhash_rust::xxh32::xxh32;

use crate::sketch::hash::fmix32;

/// The hash of a shingle's UTF-8 bytes, giving the 64-bit token the sketch families read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenHash {
    /// xxh3-64 with a seed (sketchdb's own).
    Xxh3_64 {
        /// The xxh3 seed.
        seed: u64,
    },
    /// The low 32 bits of xxh3-64 (text-dedup's `xxh3_32hash`).
    Xxh3Low32 {
        /// The xxh3 seed.
        seed: u64,
    },
    /// xxh32 (text-dedup's Spark `xxh32_intdigest`).
    Xxh32 {
        /// The xxh32 seed.
        seed: u32,
    },
    /// The first 4 bytes of SHA-1 as a little-endian u32 (datasketch's `sha1_hash32`).
    Sha1Le32,
    /// The first 8 bytes of SHA-1 as a little-endian u64 (datasketch's `sha1_hash64`).
    Sha1Le64,
    /// MurmurHash3 x86 32-bit (NeMo Curator through cuDF).
    Murmur3_32 {
        /// The murmur seed.
        seed: u32,
    },
}

impl TokenHash {
    /// The token of `bytes`.
    pub fn hash(self, bytes: &[u8]) -> u64 {
        match self {
            TokenHash::Xxh3_64 { seed } => xxh3_64_with_seed(bytes, seed),
            TokenHash::Xxh3Low32 { seed } => xxh3_64_with_seed(bytes, seed) & u64::from(u32::MAX),
            TokenHash::Xxh32 { seed } => u64::from(xxh32(bytes, seed)),
            TokenHash::Sha1Le32 => {
                let d = Sha1::digest(bytes);
                u64::from(u32::from_le_bytes([d[0], d[1], d[2], d[3]]))
            }
            TokenHash::Sha1Le64 => {
                let d = Sha1::digest(bytes);
                u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
            }
            TokenHash::Murmur3_32 { seed } => u64::from(murmur3_x86_32(bytes, seed)),
        }
    }

    /// A short description, as `sketchdb recipes` shows it.
    pub fn describe(self) -> String {
        match self {
            TokenHash::Xxh3_64 { seed } => format!("xxh3-64 (seed {seed})"),
            TokenHash::Xxh3Low32 { seed } => format!("xxh3-64 & 0xFFFFFFFF (seed {seed})"),
            TokenHash::Xxh32 { seed } => format!("xxh32 (seed {seed})"),
            TokenHash::Sha1Le32 => "SHA-1, first 4 bytes little-endian (sha1_hash32)".into(),
            TokenHash::Sha1Le64 => "SHA-1, first 8 bytes little-endian (sha1_hash64)".into(),
            TokenHash::Murmur3_32 { seed } => format!("MurmurHash3 x86-32 (seed {seed})"),
        }
    }
}

/// MurmurHash3_x86_32 (Austin Appleby's reference, little-endian blocks).
fn murmur3_x86_32(bytes: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xCC9E_2D51;
    const C2: u32 = 0x1B87_3593;
    let mut h = seed;
    let mut blocks = bytes.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xE654_6B64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, &b) in tail.iter().enumerate() {
            k |= u32::from(b) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    fmix32(h ^ bytes.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // datasketch: sha1_hash32(b"hello world"); text-dedup doctest: xxh3_32hash(b"hello world").
        assert_eq!(TokenHash::Sha1Le32.hash(b"hello world"), 896_314_922);
        assert_eq!(TokenHash::Sha1Le64.hash(b"hello world"), 13_028_719_972_609_469_994);
        assert_eq!(TokenHash::Xxh3Low32 { seed: 0 }.hash(b"hello world"), 1_088_854_155);
        assert_eq!(TokenHash::Xxh3Low32 { seed: 42 }.hash(b"hello world"), 3_913_102_222);
        // mmh3.hash(b"hello world", 0, signed=False) and with seed 42; the empty input.
        assert_eq!(TokenHash::Murmur3_32 { seed: 0 }.hash(b"hello world"), 1_586_663_183);
        assert_eq!(TokenHash::Murmur3_32 { seed: 0 }.hash(b""), 0);
        assert_eq!(TokenHash::Murmur3_32 { seed: 1 }.hash(b""), 0x514E_28B7);
        assert_eq!(TokenHash::Murmur3_32 { seed: 42 }.hash(b"hello world"), 3_926_694_905);
        assert_eq!(TokenHash::Murmur3_32 { seed: 7 }.hash(b"abc"), 940_791_465); // a 3-byte tail
        assert_eq!(TokenHash::Murmur3_32 { seed: 7 }.hash(b"abcde"), 3_037_955_123); // a block and a 1-byte tail
        // xxhash.xxh32_intdigest(b"hello world"[, 7])
        assert_eq!(TokenHash::Xxh32 { seed: 0 }.hash(b"hello world"), 3_468_387_874);
        assert_eq!(TokenHash::Xxh32 { seed: 7 }.hash(b"hello world"), 3_401_553_733);
    }
}
