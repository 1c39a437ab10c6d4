//! The `minhash-create` workload: signature building alone, from pre-hashed token sets.

use std::path::Path;
use std::time::Instant;

use serde_json::json;
use sketchdb::recipes::default_params;
use sketchdb::{HashFamily, SketchKind, SketchParams, Sketcher, TokenSet};

use super::data::load_sets;
use super::report::{dataset_name, emit};
use crate::error::CliError;

/// The `minhash-create` workload: build 128-value signatures from the token sets, one thread
/// and then all threads, for each sketch kind with its default family (`minhash`, `bbit-b8`:
/// the 32-bit lane family), MinHash and b-bit under the 64-bit `mix-multiply-shift`, and
/// MinHash under each compatibility family (the 32-bit ones computed in 32-bit vector lanes).
pub fn minhash_create(sets_path: &Path, limit: Option<usize>, run: &str) -> Result<(), CliError> {
    let sets = load_sets(sets_path, limit)?;
    let tokens: usize = sets.iter().map(|(_, s)| s.len()).sum();
    let just_sets: Vec<TokenSet> = sets.into_iter().map(|(_, s)| s).collect();
    let dataset = dataset_name(sets_path);
    let kinds = [
        ("minhash", default_params(SketchKind::MinHash, 128, Some(32), 1)?),
        ("minhash-mix-multiply-shift", SketchParams::minhash(128, 32, 1)?),
        ("bbit-b8", default_params(SketchKind::BBitMinHash, 128, Some(8), 1)?),
        ("bbit-b8-mix-multiply-shift", SketchParams::bbit(128, 8, 1)?),
        ("oph", SketchParams::oph(128, 32, 1)?),
        ("minhash-datasketch-affine32", SketchParams::compat(HashFamily::DatasketchAffine32, 128, 1)?),
        ("minhash-text-dedup-spark", SketchParams::compat(HashFamily::TextDedupSpark, 128, 1)?),
        ("minhash-nemo-curator", SketchParams::compat(HashFamily::NemoCurator, 128, 1)?),
        ("minhash-datasketch-legacy", SketchParams::compat(HashFamily::DatasketchLegacy, 128, 1)?),
    ];
    // The thread pool, its threads' allocator arenas and the memory of a whole run's
    // sketches start outside the timings: else the first parallel row alone would pay for
    // them (the first touch of every page its sketches take, a run's worth, on 16 threads
    // at once: most of that row's time where the kernel runs at 1G tokens/s).
    for r in Sketcher::new(kinds[0].1)?.sketch_batch(&just_sets) {
        r?;
    }
    for (name, params) in kinds {
        let sk = Sketcher::new(params)?;
        for threads in [1usize, rayon::current_num_threads()] {
            let start = Instant::now();
            if threads == 1 {
                for s in &just_sets {
                    sk.sketch(s)?;
                }
            } else {
                for r in sk.sketch_batch(&just_sets) {
                    r?;
                }
            }
            let secs = start.elapsed().as_secs_f64();
            let n = just_sets.len() as f64;
            emit(
                run,
                "minhash-create",
                &dataset,
                json!({"num_perm": 128, "kind": name, "threads": threads, "sets": just_sets.len()}),
                json!({"sets_per_s": n / secs, "tokens_per_s": tokens as f64 / secs, "us_per_set": secs * 1e6 / n}),
                "from pre-hashed u64 tokens; parsing excluded",
            )?;
        }
    }
    Ok(())
}
