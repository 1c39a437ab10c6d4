//! `sketchdb bench`: runs the shared benchmark workloads (../shared/bench formats, read as they
//! are) and prints one JSON result line per measurement, in the shared schema, on stdout.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sketchdb::{SketchParams, Sketcher, TokenSet};

use crate::input::{JsonlReader, Payload};
use crate::output::CliError;

/// The machine block of a result line.
fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()))
        .unwrap_or(-1.0);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    json!({"cpu": cpu, "cores": cores, "loadavg1": load})
}

/// RFC 3339 UTC timestamp from the system clock (civil-from-days, Howard Hinnant's algorithm).
fn timestamp() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}+00:00", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Prints one result line.
pub fn emit(run_id: &str, workload: &str, dataset: &str, config: Value, metrics: Value, notes: &str) {
    let line = json!({
        "ts": timestamp(),
        "run_id": run_id,
        "system": "sketchdb",
        "version": env!("CARGO_PKG_VERSION"),
        "workload": workload,
        "dataset": dataset,
        "config": config,
        "metrics": metrics,
        "machine": machine(),
        "notes": notes,
    });
    println!("{line}");
}

/// A run id unique enough to group the lines of one invocation.
pub fn run_id() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}-{:x}", nanos, std::process::id())
}

/// `sets-100k.jsonl` -> `sets-100k`.
pub fn dataset_name(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "unknown".into())
}

/// The sets of a `sets-<n>.jsonl` file (the first `limit`), passed to `each` in file order
/// in chunks of at most `chunk` (at least 1), so a caller that reduces each chunk (to
/// signatures, say) never holds every parsed set at once. No set at all is an input error.
pub fn for_each_set_chunk(
    path: &Path,
    limit: Option<usize>,
    chunk: usize,
    mut each: impl FnMut(Vec<(String, TokenSet)>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let chunk = chunk.max(1);
    let (mut reader, mut seen, mut part) = (JsonlReader::open(path)?, 0usize, Vec::new());
    while limit.is_none_or(|l| seen < l) {
        let Some(rec) = reader.next() else { break };
        let rec = rec?;
        let Payload::Tokens(t) = rec.payload else {
            return Err(CliError::Input(format!("{}: record `{}` has no `tokens`", rec.origin, rec.key)));
        };
        part.push((rec.key, TokenSet::from_unsorted(t)));
        seen += 1;
        if part.len() == chunk {
            each(std::mem::take(&mut part))?;
        }
    }
    if seen == 0 {
        return Err(CliError::Input(match limit {
            Some(0) => format!("{}: --limit 0 selects no sets", path.display()),
            _ => format!("no sets in {}", path.display()),
        }));
    }
    if !part.is_empty() {
        each(part)?;
    }
    Ok(())
}

/// Every set of a `sets-<n>.jsonl` file (the first `limit`), as (key, tokens), in file order.
pub fn load_sets(path: &Path, limit: Option<usize>) -> Result<Vec<(String, TokenSet)>, CliError> {
    let mut out = Vec::new();
    for_each_set_chunk(path, limit, usize::MAX, |part| {
        out.extend(part);
        Ok(())
    })?;
    Ok(out)
}

/// The first of the items loaded from `path`, or an error naming the file.
pub fn first_of<'a, T>(items: &'a [T], what: &str, path: &Path) -> Result<&'a T, CliError> {
    items.first().ok_or_else(|| CliError::Input(format!("no {what} in {}", path.display())))
}

/// The workloads `sketchdb bench` runs.
#[derive(clap::Subcommand, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Workload {
    /// Build 128-value signatures from a sets-<n>.jsonl file (MinHash, b-bit, OPH).
    MinhashCreate {
        /// The sets file (../shared/bench format).
        #[arg(long)]
        sets: PathBuf,
        /// Use only the first N sets.
        #[arg(long)]
        limit: Option<usize>,
    },

    /// LSH build, query (stored signature and end-to-end), persistence and size on a
    /// sets/queries pair: one collection per threshold, its banding tuned to it.
    Lsh {
        /// The sets file.
        #[arg(long)]
        sets: PathBuf,
        /// The matching queries file (with truth).
        #[arg(long)]
        queries: PathBuf,
        /// Thresholds to measure.
        #[arg(long, value_delimiter = ',', default_value = "0.5,0.7,0.8,0.9")]
        thresholds: Vec<f64>,
        /// Sketch kind: minhash (128 x 32-bit), bbit (512 x 8-bit) or oph (128 x 32-bit bins).
        #[arg(long, default_value = "minhash")]
        kind: String,
        /// Use only the first N sets.
        #[arg(long)]
        limit: Option<usize>,
        /// Where to build the database (default: a temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Force an access path for the queries (default: the planner's choice).
        #[arg(long)]
        plan: Option<String>,
        /// Load every signature without the index, then build it in one transaction (a bulk
        /// load; the index's group width then fits the loaded size).
        #[arg(long)]
        bulk: bool,
        /// Signatures per durable batch (write transaction) while loading.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
        batch: u64,
    },
    /// Radius queries over a u64 fingerprint file with SimHash tables.
    HammingQuery {
        /// The fingerprints (fp-10m.u64 or fp-1m.u64).
        #[arg(long)]
        fps: PathBuf,
        /// The query fingerprints (fp-queries.u64).
        #[arg(long)]
        queries: PathBuf,
        /// The truth file (fp-<n>.truth.jsonl).
        #[arg(long)]
        truth: PathBuf,
        /// The radius.
        #[arg(long, default_value_t = 3)]
        radius: u32,
        /// Where to build the database (default: a temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Load every fingerprint without the tables, then build them in one transaction (a
        /// bulk load; the tables' design then fits the loaded size).
        #[arg(long)]
        bulk: bool,
        /// Fingerprints per durable batch (write transaction) while loading.
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
        batch: u64,
    },
    /// Self-join of a sets file into clusters at a threshold.
    Dedup {
        /// The sets file.
        #[arg(long)]
        sets: PathBuf,
        /// The threshold.
        #[arg(long, default_value_t = 0.8)]
        threshold: f64,
        /// Use only the first N sets.
        #[arg(long)]
        limit: Option<usize>,
        /// Sketch kind: minhash (128 x 32-bit), bbit (512 x 8-bit) or oph (128 x 32-bit bins).
        #[arg(long, default_value = "minhash")]
        kind: String,
        /// Load into a collection with an LSH index for the threshold (the self-join then
        /// reads its buckets); without it the dedup bands the signatures in memory.
        #[arg(long)]
        index: bool,
    },
}

/// Runs one workload.
pub fn run(w: &Workload) -> Result<(), CliError> {
    let run = run_id();
    match w {
        Workload::MinhashCreate { sets, limit } => minhash_create(sets, *limit, &run),
        Workload::Lsh { sets, queries, thresholds, kind, limit, dir, plan, bulk, batch } => {
            let force = match plan {
                None => None,
                Some(p) => Some(
                    sketchdb::PlanKind::from_name(p).ok_or_else(|| CliError::Usage(format!("unknown plan `{p}`")))?,
                ),
            };
            let load = crate::bench_lsh::Load { bulk: *bulk, batch: *batch as usize };
            crate::bench_lsh::lsh(sets, queries, thresholds, kind, *limit, dir.as_deref(), force, load, &run)
        }
        Workload::HammingQuery { fps, queries, truth, radius, dir, bulk, batch } => {
            let load = crate::bench_lsh::Load { bulk: *bulk, batch: *batch as usize };
            crate::bench_lsh::hamming(fps, queries, truth, *radius, dir.as_deref(), load, &run)
        }
        Workload::Dedup { sets, threshold, limit, kind, index } => {
            crate::bench_lsh::dedup(sets, *threshold, *limit, kind, *index, &run)
        }
    }
}

/// The `minhash-create` workload: build 128-value signatures from the token sets, one thread
/// and then all threads, for each sketch kind.
pub fn minhash_create(sets_path: &Path, limit: Option<usize>, run: &str) -> Result<(), CliError> {
    let sets = load_sets(sets_path, limit)?;
    let tokens: usize = sets.iter().map(|(_, s)| s.len()).sum();
    let just_sets: Vec<TokenSet> = sets.into_iter().map(|(_, s)| s).collect();
    let dataset = dataset_name(sets_path);
    let kinds = [
        ("minhash", SketchParams::minhash(128, 32, 1)?),
        ("bbit-b8", SketchParams::bbit(128, 8, 1)?),
        ("oph", SketchParams::oph(128, 32, 1)?),
    ];
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
            );
        }
    }
    Ok(())
}
