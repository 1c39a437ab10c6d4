//! Run-time CPU feature detection and the one dispatch macro.
//!
//! The default x86-64 target enables only SSE2: no POPCNT, no AVX2, no AVX-512. A kernel is
//! written once as a safe [`Kernel`] whose `run` is `#[inline(always)]`; [`dispatch!`] makes a
//! function that copies that body into one `#[target_feature]` variant per tier and calls the
//! first tier whose features the running CPU has, else the plain body. The variants are safe
//! Rust compiled with more instructions allowed; only calling one is `unsafe`, and that call
//! sits behind a check of [`detected`].
//!
//! Invariant (soundness): a variant compiled with feature string `F` is called only when
//! `detected()` contains `Features::parse(F)`, and `parse` rejects (at compile time) any name
//! it does not map to a detected bit, so the two can never disagree.

use std::sync::atomic::{AtomicU32, Ordering};

/// A set of CPU features the kernels' variants are compiled for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Features(u32);

impl Features {
    /// No optional feature: the plain body only.
    pub(crate) const NONE: Self = Self(0);
    /// Every feature a tier may ask for: a cap that restricts nothing.
    pub(crate) const ALL: Self = Self(0b11_1111);
    const POPCNT: Self = Self(1);
    const AVX2: Self = Self(1 << 1);
    const AVX512F: Self = Self(1 << 2);
    const AVX512BW: Self = Self(1 << 3);
    const AVX512DQ: Self = Self(1 << 4);
    const AVX512VPOPCNTDQ: Self = Self(1 << 5);
    /// Set in the cache once detection has run (never part of a `Features` value).
    const DETECTED_FLAG: u32 = 1 << 31;

    /// The features named in a `#[target_feature(enable = ...)]` string (comma-separated).
    /// Panics on a name it does not know, which in a `const` context is a compile error.
    pub(crate) const fn parse(s: &str) -> Self {
        let b = s.as_bytes();
        let mut bits = 0;
        let mut start = 0;
        let mut i = 0;
        while i <= b.len() {
            if i == b.len() || b[i] == b',' {
                bits |= Self::parse_one(b, start, i).0;
                start = i + 1;
            }
            i += 1;
        }
        Self(bits)
    }

    const fn parse_one(b: &[u8], start: usize, end: usize) -> Self {
        const NAMES: [(&str, Features); 6] = [
            ("popcnt", Features::POPCNT),
            ("avx2", Features::AVX2),
            ("avx512f", Features::AVX512F),
            ("avx512bw", Features::AVX512BW),
            ("avx512dq", Features::AVX512DQ),
            ("avx512vpopcntdq", Features::AVX512VPOPCNTDQ),
        ];
        let mut n = 0;
        while n < NAMES.len() {
            let name = NAMES[n].0.as_bytes();
            if name.len() == end - start {
                let mut j = 0;
                while j < name.len() && name[j] == b[start + j] {
                    j += 1;
                }
                if j == name.len() {
                    return NAMES[n].1;
                }
            }
            n += 1;
        }
        panic!("a target feature that Features does not detect")
    }

    /// Whether every feature of `other` is in `self`.
    #[inline(always)]
    pub(crate) const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The features in both sets.
    #[inline(always)]
    pub(crate) const fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }
}

/// `Features` of the running CPU with `DETECTED_FLAG` set, or 0 before the first detection.
static CACHE: AtomicU32 = AtomicU32::new(0);

/// The optional features of the running CPU, detected on the first call and cached.
#[inline(always)]
pub(crate) fn detected() -> Features {
    let bits = CACHE.load(Ordering::Relaxed);
    if bits & Features::DETECTED_FLAG != 0 { Features(bits & !Features::DETECTED_FLAG) } else { detect_and_cache() }
}

/// Races are harmless: every thread computes and stores the same value.
#[cold]
fn detect_and_cache() -> Features {
    let f = detect();
    CACHE.store(f.0 | Features::DETECTED_FLAG, Ordering::Relaxed);
    f
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Features {
    use std::arch::is_x86_feature_detected as has;
    let mut bits = Features::NONE.0;
    for (on, f) in [
        (has!("popcnt"), Features::POPCNT),
        (has!("avx2"), Features::AVX2),
        (has!("avx512f"), Features::AVX512F),
        (has!("avx512bw"), Features::AVX512BW),
        (has!("avx512dq"), Features::AVX512DQ),
        (has!("avx512vpopcntdq"), Features::AVX512VPOPCNTDQ),
    ] {
        if on {
            bits |= f.0;
        }
    }
    Features(bits)
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Features {
    Features::NONE
}

/// A kernel body: the arguments of one call, and `run`, which must be `#[inline(always)]`
/// so that each tier's variant gets its own copy compiled with that tier's features.
pub(crate) trait Kernel {
    /// What the kernel returns.
    type Output;
    /// Runs the body. Safe Rust; the same results whatever features it is compiled with.
    fn run(self) -> Self::Output;
}

/// Defines `$vis fn $name<K: Kernel>(cap: Features, kernel: K) -> K::Output`, which runs
/// `kernel` compiled for the first listed feature string whose features the CPU has and
/// `cap` allows (tests pass narrower caps to reach every tier), else the plain body.
/// Tiers are tried in the order written: list the widest first.
macro_rules! dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident: $($tier:literal),+ $(,)?) => {
        $(#[$meta])*
        #[inline]
        $vis fn $name<K: $crate::simd::dispatch::Kernel>(
            cap: $crate::simd::dispatch::Features,
            kernel: K,
        ) -> K::Output {
            #[cfg(target_arch = "x86_64")]
            {
                let have = $crate::simd::dispatch::detected().intersection(cap);
                $(
                    {
                        #[target_feature(enable = $tier)]
                        fn variant<K: $crate::simd::dispatch::Kernel>(kernel: K) -> K::Output {
                            kernel.run()
                        }
                        const NEEDS: $crate::simd::dispatch::Features =
                            $crate::simd::dispatch::Features::parse($tier);
                        if have.contains(NEEDS) {
                            // SAFETY: `have` is a subset of `detected()`, so the running CPU
                            // has every feature in NEEDS, which is exactly the set `variant`
                            // is compiled for (both come from the same string).
                            return unsafe { variant(kernel) };
                        }
                    }
                )+
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = cap;
            kernel.run()
        }
    };
}

dispatch! {
    /// Tiers for kernels whose cost is `count_ones`: POPCNT.
    pub(crate) fn run_popcnt: "popcnt"
}

dispatch! {
    /// Tiers for kernels of 64-bit multiplies (VPMULLQ is AVX-512DQ), then AVX2.
    pub(crate) fn run_mul64: "avx512f,avx512dq", "avx2"
}

dispatch! {
    /// Tiers for kernels of 32-bit lane arithmetic: AVX2.
    pub(crate) fn run_avx2: "avx2"
}

dispatch! {
    /// Tiers for kernels of 32-bit multiplies (VPMULLD on sixteen lanes is AVX-512F), then AVX2.
    pub(crate) fn run_mul32: "avx512f", "avx2"
}

dispatch! {
    /// Tiers for kernels that compare byte columns and count bits: AVX-512BW or AVX2, each
    /// with POPCNT.
    pub(crate) fn run_byte_compare: "avx512f,avx512bw,popcnt", "avx2,popcnt"
}

/// The caps that reach each tier of every dispatcher above, widest first, ending with the
/// plain body: tests run a kernel under each and compare.
#[cfg(test)]
pub(crate) const TEST_CAPS: [Features; 8] = [
    Features::ALL,
    Features::parse("avx512f,avx512vpopcntdq,popcnt"),
    Features::parse("avx512f,avx512bw,popcnt"),
    Features::parse("avx512f,avx512dq"),
    Features::parse("avx512f"),
    Features::parse("avx2,popcnt"),
    Features::parse("popcnt"),
    Features::NONE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_maps_every_name_and_detection_is_stable() {
        assert_eq!(Features::parse("popcnt"), Features::POPCNT);
        assert_eq!(
            Features::parse("avx512f,avx512bw,popcnt"),
            Features(Features::AVX512F.0 | Features::AVX512BW.0 | Features::POPCNT.0)
        );
        assert_eq!(Features::parse("avx2,avx512dq"), Features(Features::AVX2.0 | Features::AVX512DQ.0));
        assert!(Features::ALL.contains(Features::parse("popcnt,avx2,avx512f,avx512bw,avx512dq,avx512vpopcntdq")));
        assert_eq!(detected(), detected());
        assert!(Features::ALL.contains(detected()));
    }

    #[test]
    #[should_panic]
    fn parse_rejects_unknown_names() {
        let _ = Features::parse("popcnt,sse4.2");
    }

    struct Plus(u64, u64);
    impl Kernel for Plus {
        type Output = u64;
        #[inline(always)]
        fn run(self) -> u64 {
            self.0.wrapping_add(self.1)
        }
    }

    #[test]
    fn every_dispatcher_runs_the_body_under_every_cap() {
        for cap in TEST_CAPS {
            assert_eq!(run_popcnt(cap, Plus(2, 3)), 5);
            assert_eq!(run_mul64(cap, Plus(2, 3)), 5);
            assert_eq!(run_avx2(cap, Plus(2, 3)), 5);
            assert_eq!(run_mul32(cap, Plus(2, 3)), 5);
            assert_eq!(run_byte_compare(cap, Plus(2, 3)), 5);
        }
    }
}
