//! Every `unsafe` block of the crate, behind safe functions over slices.
//!
//! The lowest layer: it imports nothing from the crate. The default x86-64 target enables
//! only SSE2, so the kernels are compiled again for wider instruction sets and the running
//! CPU's features are detected once ([`dispatch`]); every variant gives bit-identical results
//! to the plain body, which is also the fallback on other CPUs and targets.
//!
//! * [`dispatch`]: feature detection, the [`Kernel`] trait and the dispatch macro behind
//!   [`run_byte_compare`] (the only dispatcher used from outside, for the planner's scan).
//! * [`sketching`]: MinHash and SimHash accumulation for the sketch layer.
//! * [`compare`]: equal slots of two signatures.
//! * [`hamming`]: Hamming-distance filters over fingerprint slices.
//! * [`hamming_words`]: the Hamming filters over 64-bit and 32-bit words, in AVX-512 and
//!   AVX2 vectors.
//! * [`prefetch`](mod@prefetch): cache-line prefetch hints for index probes.
//! * [`pages`]: transparent huge page advice for the probe cache's slabs.
//!
//! Each `unsafe` block carries a `// SAFETY:` comment; the rest of the crate forbids unsafe.

mod compare;
mod dispatch;
mod hamming;
mod hamming_words;
mod pages;
mod prefetch;
mod sketching;
#[cfg(test)]
mod test_rng;

pub(crate) use compare::equal_count;
/// The caps that reach every tier of every dispatcher, for tests outside this module.
#[cfg(test)]
pub(crate) use dispatch::TEST_CAPS;
pub(crate) use dispatch::{Features, Kernel, run_byte_compare};
pub(crate) use hamming::{distances_u64, distances_u128, within_u64, within_u128};
pub(crate) use hamming_words::within_words_u32;
pub(crate) use pages::{HUGE_PAGE, advise_huge_pages};
pub(crate) use prefetch::{prefetch, prefetch_ref};
pub(crate) use sketching::{affine_mix, minhash_update, minhash_update_reduced, minhash32_update, simhash_accumulate};
