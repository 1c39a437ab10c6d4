//! `sketchdb bench`: runs the shared benchmark workloads (../shared/bench formats, read as they
//! are) and prints one JSON result line per measurement, in the shared schema, on stdout. One
//! file per workload; `data` loads inputs, `report` writes result lines.

mod create;
mod data;
mod dedup;
mod docs;
mod hamming;
mod lsh;
mod lsh_batch;
mod quality;
mod report;
mod truth;
mod warm;

use std::path::PathBuf;

use crate::error::CliError;

/// The workloads `sketchdb bench` runs.
#[derive(clap::Subcommand, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Workload {
    /// Build 128-value signatures from a `sets-<n>.jsonl` file (MinHash, b-bit, OPH).
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
        /// The truth file (`fp-<n>.truth.jsonl`).
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
    /// Warm single queries over a database an earlier `lsh --dir` or `hamming-query --dir`
    /// left: the first query after the open, then every query `passes` times, one thread.
    Warm {
        /// The database file.
        #[arg(long)]
        db: PathBuf,
        /// The collection (`sets` for `lsh`, `fp` for `hamming-query`).
        #[arg(long)]
        collection: String,
        /// Queries: a `.jsonl` file of token sets (`tokens`), or u64 fingerprints.
        #[arg(long)]
        queries: PathBuf,
        /// The threshold of set-sketch queries.
        #[arg(long, default_value_t = 0.8)]
        threshold: f64,
        /// The radius of fingerprint queries.
        #[arg(long, default_value_t = 3)]
        radius: u32,
        /// Passes over the queries (the first warms and is not timed).
        #[arg(long, default_value_t = 20)]
        passes: usize,
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
    /// Raw documents (`docs-<n>.jsonl`, `.jsonl.gz` or `.parquet`) to near-duplicate clusters,
    /// per configuration and threshold, with pair recall and precision against the truth file.
    DedupDocs {
        #[command(flatten)]
        docs: DocsArgs,
        /// Also measure with an LSH index for each threshold (built after loading); `only`
        /// measures only with it.
        #[arg(long, default_value = "both")]
        index: String,
        /// Clusterings to measure: components, representative (star clusters that do not
        /// chain), or both.
        #[arg(long, value_delimiter = ',', default_value = "components")]
        clustering: Vec<String>,
    },
    /// Threshold queries from the planted-family documents of a docs file, through an LSH
    /// index for the threshold and exactly over the stored sketches, with recall and
    /// precision against the truth file.
    SearchDocs {
        #[command(flatten)]
        docs: DocsArgs,
        /// Query documents (the first N family members by number).
        #[arg(long, default_value_t = 2000)]
        queries: usize,
    },
}

/// The inputs and configurations of the documents workloads.
#[derive(clap::Args, Debug)]
pub struct DocsArgs {
    /// The documents file (../shared/bench `docs-<n>.jsonl`, `.jsonl.gz` or `.parquet`).
    #[arg(long)]
    docs: PathBuf,
    /// Its truth file (default: `docs-<n>.truth.jsonl` beside it).
    #[arg(long)]
    truth: Option<PathBuf>,
    /// Thresholds to measure.
    #[arg(long, value_delimiter = ',', default_value = "0.5,0.7,0.8,0.9")]
    thresholds: Vec<f64>,
    /// Configurations: `default`, `all`, or a list like `minhash128,bbit512x8,oph1024x4`
    /// (kind, slots, `x` bits per value).
    #[arg(long, value_delimiter = ',', default_value = "default")]
    configs: Vec<String>,
    /// Read only the first N lines.
    #[arg(long)]
    limit: Option<usize>,
    /// Keep each document's exact shingle set (results re-ranked by exact Jaccard).
    #[arg(long)]
    exact_shingles: bool,
    /// The text recipe (`sketchdb recipes`; `words-5` is the docs truth's recipe).
    #[arg(long)]
    recipe: Option<String>,
}

impl DocsArgs {
    fn truth(&self) -> PathBuf {
        self.truth.clone().unwrap_or_else(|| truth::truth_beside(&self.docs))
    }

    fn setup(&self) -> Result<docs::Setup, CliError> {
        let recipe = match &self.recipe {
            Some(name) => Some(sketchdb::Recipe::preset(name)?),
            None => None,
        };
        Ok(docs::Setup { exact: self.exact_shingles, recipe })
    }

    fn configs(&self) -> Result<Vec<docs::DocsConfig>, CliError> {
        let names = self
            .configs
            .iter()
            .flat_map(|c| if c == "all" { docs::ALL_CONFIGS.split(',').collect() } else { vec![c.as_str()] });
        names.map(docs::parse_config).collect()
    }
}

/// Runs one workload.
pub fn run(w: &Workload) -> Result<(), CliError> {
    let run = report::run_id();
    match w {
        Workload::MinhashCreate { sets, limit } => create::minhash_create(sets, *limit, &run),
        Workload::Lsh { sets, queries, thresholds, kind, limit, dir, plan, bulk, batch } => {
            let force = match plan {
                None => None,
                Some(p) => Some(
                    sketchdb::plan::PlanKind::from_name(p)
                        .ok_or_else(|| CliError::Usage(format!("unknown plan `{p}`")))?,
                ),
            };
            let load = data::Load { bulk: *bulk, batch: *batch as usize };
            lsh::lsh(sets, queries, thresholds, kind, *limit, dir.as_deref(), force, load, &run)
        }
        Workload::HammingQuery { fps, queries, truth, radius, dir, bulk, batch } => {
            let load = data::Load { bulk: *bulk, batch: *batch as usize };
            hamming::hamming(fps, queries, truth, *radius, dir.as_deref(), load, &run)
        }
        Workload::Warm { db, collection, queries, threshold, radius, passes } => {
            let args =
                warm::WarmArgs { db, collection, queries, threshold: *threshold, radius: *radius, passes: *passes };
            warm::warm(&args, &run)
        }
        Workload::Dedup { sets, threshold, limit, kind, index } => {
            dedup::dedup(sets, *threshold, *limit, kind, *index, &run)
        }
        Workload::DedupDocs { docs: a, index, clustering } => {
            let clusterings = clustering
                .iter()
                .map(|c| {
                    sketchdb::Clustering::from_name(c)
                        .ok_or_else(|| CliError::Usage(format!("--clustering `{c}`: components or representative")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let indexes: &[bool] = match index.as_str() {
                "both" => &[false, true],
                "none" => &[false],
                "only" => &[true],
                other => return Err(CliError::Usage(format!("--index `{other}`: both, none or only"))),
            };
            let configs = a.configs()?;
            docs::dedup_docs(
                &a.docs,
                &a.truth(),
                &a.thresholds,
                &configs,
                indexes,
                &clusterings,
                &a.setup()?,
                a.limit,
                &run,
            )
        }
        Workload::SearchDocs { docs: a, queries } => {
            let configs = a.configs()?;
            docs::search_docs(&a.docs, &a.truth(), &a.thresholds, &configs, *queries, &a.setup()?, a.limit, &run)
        }
    }
}
