//! `dedup`: the collection joined with itself, near-duplicates grouped into clusters; a
//! folder or file is ingested first. The clusters go to stdout; `--dropped`, `--pairs` and
//! `--write-deduplicated` write files (see `dedup_out`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::json;
use sketchdb::recipes::Measure;
use sketchdb::{Clustering, QueryKind};

use super::dedup_in::{Prepared, prepare};
use super::dedup_out::{Decided, Keep, decide, score_pairs, write_dropped, write_pairs, write_records};
use super::query::{Ask, Resolved, explain_json, measure_name, resolve};
use crate::error::CliError;
use crate::load::{InputFormat, ReadArgs};
use crate::output::{outln, short_list, summary, table, write_out};
use crate::session::Session;
use crate::write::{AddedNames, OutFormat, Target};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterFormat {
    Table,
    Jsonl,
    Csv,
    /// No clusters on stdout (the summary and the files asked for only).
    None,
}

/// What dedup joins on: a threshold or a Hamming radius (no top-k: a self-join keeps every
/// pair above a bound).
#[derive(Args, Debug, Clone)]
pub struct DedupAsk {
    /// Join records with estimated similarity >= T (Jaccard; cosine for SimHash).
    #[arg(long, conflicts_with = "radius")]
    pub threshold: Option<f64>,
    /// Join SimHash records within this Hamming distance (inclusive).
    #[arg(long)]
    pub radius: Option<u32>,
    /// Confidence level of the intervals.
    #[arg(long, default_value_t = sketchdb::estimate::DEFAULT_LEVEL)]
    pub level: f64,
    /// Require an answer exact with respect to the stored sketches (no LSH).
    #[arg(long)]
    pub exact: bool,
    /// Force an access path: full-scan, oph-bin-scan, lsh-probe or simhash-probe.
    #[arg(long)]
    pub plan: Option<String>,
}

impl DedupAsk {
    fn ask(&self) -> Ask {
        Ask {
            threshold: self.threshold,
            top_k: None,
            radius: self.radius,
            level: self.level,
            exact: self.exact,
            plan: self.plan.clone(),
        }
    }
}

// The readers' `--format` is spelled `--input-format` here: `--format` is the clusters'.
#[derive(Args, Debug, Clone)]
#[command(mut_arg("input_format", |a| a.long("input-format").visible_alias(None)))]
pub struct DedupArgs {
    /// A collection name, or a folder, a file or `-` (standard input) of records to ingest
    /// first (into a collection named after it, `(stdin)` for standard input, in the
    /// database file).
    pub target: String,
    #[command(flatten)]
    pub ask: DedupAsk,
    /// The named text recipe of the collection that a file or folder is ingested into, when
    /// it is created; an existing collection made with another recipe is refused.
    #[arg(long)]
    pub recipe: Option<String>,
    /// Output format for the clusters on stdout (`--json` means jsonl; `none` prints none).
    #[arg(long, value_enum, default_value_t = ClusterFormat::Table)]
    pub format: ClusterFormat,
    /// Show the self-join plan, why, and the alternatives with their estimated costs,
    /// without running it.
    #[arg(long)]
    pub explain: bool,
    /// Which member of a cluster is kept: first (stored first), longest or shortest (text
    /// length), or a field name (its greatest value); ties go to the member stored first.
    #[arg(long, default_value = "first")]
    pub keep: Keep,
    /// Write the keys to remove: .txt one per line; .jsonl/.csv/.parquet with their cluster,
    /// keeper and best match.
    #[arg(long, value_name = "FILE")]
    pub dropped: Option<PathBuf>,
    /// Write the kept records with every input field unchanged (.jsonl[.gz|.zst], .csv,
    /// .tsv or .parquet; a file input is written in its own format family).
    #[arg(long, value_name = "OUT")]
    pub write_deduplicated: Option<PathBuf>,
    /// With --write-deduplicated: write every record, adding NAME (cluster id), NAME_keeper
    /// (the kept record's key), NAME_kept (true for a record kept) and NAME_status (kept,
    /// duplicate, unique or no_tokens).
    #[arg(long, value_name = "NAME", requires = "write_deduplicated")]
    pub cluster_column: Option<String>,
    /// Write the verified pairs with their estimate and interval (.jsonl, .csv, .tsv,
    /// .parquet).
    #[arg(long, value_name = "FILE")]
    pub pairs: Option<PathBuf>,
    /// How verified pairs form clusters: components (connected components: chains of pairs
    /// join) or representative (star clusters: every member is a verified pair with its
    /// cluster's representative, so no chaining through weak links).
    #[arg(long, default_value = "components", value_parser = clustering)]
    pub clustering: Clustering,
    #[command(flatten)]
    pub read: ReadArgs,
}

impl DedupArgs {
    /// Whether the target is an input to ingest (a file, folder or standard input), so the
    /// database is written.
    pub fn ingests(&self) -> bool {
        self.target == "-" || Path::new(&self.target).exists()
    }

    /// Whether the input is read a second time (`--keep` by value, `--write-deduplicated`).
    fn second_pass(&self) -> bool {
        self.write_deduplicated.is_some() || self.keep != Keep::First
    }

    /// Where standard input is spooled: beside the deduplicated output, else `$TMPDIR`.
    fn spool_dir(&self) -> PathBuf {
        match self.write_deduplicated.as_deref().and_then(Path::parent) {
            Some(dir) if dir.as_os_str().is_empty() => PathBuf::from("."),
            Some(dir) => dir.to_path_buf(),
            None => std::env::temp_dir(),
        }
    }
}

/// The first reading option given a value of its own (they apply to an input only).
fn read_flag(r: &ReadArgs) -> Option<&'static str> {
    [
        (r.format != InputFormat::Auto, "--input-format"),
        (r.text_field.is_some(), "--text-field"),
        (r.id_field != "id", "--id-field"),
        (r.tokens_field.is_some(), "--tokens-field"),
        (r.rejects.is_some(), "--rejects"),
        (r.strict, "--strict"),
        (r.lossy_utf8, "--lossy-utf8"),
        (r.follow_symlinks, "--follow-symlinks"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// `--clustering`: a [`Clustering`] by name.
fn clustering(name: &str) -> Result<Clustering, String> {
    Clustering::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Clustering::ALL.iter().map(|c| c.name()).collect();
        format!("unknown clustering `{name}` (expected {})", names.join(" or "))
    })
}

/// The output files asked for, checked before any work.
struct Outputs {
    dropped: Option<Target>,
    records: Option<Target>,
    pairs: Option<Target>,
}

impl Outputs {
    fn of(args: &DedupArgs) -> Result<Outputs, CliError> {
        let target = |p: &Option<PathBuf>, option: &str| p.as_deref().map(|p| Target::of(p, option)).transpose();
        let records = target(&args.write_deduplicated, "--write-deduplicated")?;
        if records.as_ref().is_some_and(|t| t.format == OutFormat::Lines) {
            return Err(CliError::Usage(
                "--write-deduplicated: records are written as .jsonl, .csv, .tsv or .parquet".into(),
            ));
        }
        let pairs = target(&args.pairs, "--pairs")?;
        if pairs.as_ref().is_some_and(|t| t.format == OutFormat::Lines) {
            return Err(CliError::Usage("--pairs: pairs are written as .jsonl, .csv, .tsv or .parquet".into()));
        }
        if let Some(name) = &args.cluster_column
            && name.is_empty()
        {
            return Err(CliError::Usage("--cluster-column needs a name".into()));
        }
        Ok(Outputs { dropped: target(&args.dropped, "--dropped")?, records, pairs })
    }
}

pub fn dedup(session: &mut Session, args: &DedupArgs, json_out: bool) -> Result<(), CliError> {
    let start = std::time::Instant::now();
    let outputs = Outputs::of(args)?;
    let Prepared { name, input, no_tokens, ingest } =
        prepare(session, &args.target, args.recipe.as_deref(), &args.read, args.second_pass(), &args.spool_dir())?;
    if let (None, Some(flag)) = (&input, read_flag(&args.read)) {
        return Err(CliError::Usage(format!(
            "{flag} is an option of reading an input, and `{name}` is not a file, a folder or - (a stored \
             collection is joined as stored)"
        )));
    }
    if input.is_none() && (outputs.records.is_some() || args.keep != Keep::First) {
        let what = if outputs.records.is_some() { "--write-deduplicated" } else { "--keep" };
        return Err(CliError::Usage(format!(
            "{what} reads the input's records, and `{name}` is a stored collection (sketches only): \
             give the file or folder instead"
        )));
    }
    let coll = session.collection(&name)?;
    let Resolved { kind, options, .. } = resolve(&coll, None, &args.ask.ask())?;
    if args.explain {
        match coll.explain_dedup(kind, options)? {
            Some(e) if json_out => outln!("{}", explain_json(&e))?,
            Some(e) => write_out(format_args!("{e}"))?,
            None if json_out => outln!("{}", json!({"collection": name, "records": 0, "plan": null}))?,
            None => outln!("collection `{name}` has no records: nothing to join")?,
        }
        return Ok(());
    }
    let joined = std::time::Instant::now();
    // `--threads` bounds the join as it bounds the ingest: its banding, sorts and keying run on
    // a pool of that many threads (without it, on the global pool: every core).
    let join = || coll.dedup_clustered(kind, options, args.clustering);
    let d = match args.read.threads {
        Some(_) => crate::load::pipeline::pool(args.read.threads)?.install(join)?,
        None => join()?,
    };
    let join_secs = joined.elapsed().as_secs_f64();
    let records = coll.len()?;
    let decided = decide(&d, &args.keep, input.as_ref(), &coll)?;
    let format = if json_out && args.format != ClusterFormat::None { ClusterFormat::Jsonl } else { args.format };
    print_clusters(&decided, format)?;
    let measure = measure_name(kind, Measure::of(coll.params().kind()));
    let mut files = Vec::new();
    if outputs.pairs.is_some() || outputs.dropped.is_some() {
        let scored = score_pairs(&coll, &d, kind, args.ask.level)?;
        if let Some(t) = &outputs.pairs {
            write_pairs(t, &decided, &scored, measure)?;
            files.push(json!({"option": "pairs", "file": t.path, "records": scored.len()}));
        }
        if let Some(t) = &outputs.dropped {
            write_dropped(t, &decided, &scored, measure, matches!(kind, QueryKind::Hamming(_)))?;
            files.push(json!({"option": "dropped", "file": t.path, "records": decided.dropped()}));
        }
    }
    if let (Some(t), Some(input)) = (&outputs.records, &input) {
        let names = args.cluster_column.as_deref().map(AddedNames::new);
        let n = write_records(input, &coll, t, &decided, names)?;
        files.push(json!({"option": "write_deduplicated", "file": t.path, "records": n}));
    }
    let what = match kind {
        QueryKind::Hamming(r) => format!("Hamming distance <= {r}"),
        QueryKind::Threshold(t) => format!("similarity >= {t}"),
        _ => String::new(),
    };
    let duplicates = decided.dropped();
    let percent = 100.0 * duplicates as f64 / (records.max(1) as f64);
    let secs = start.elapsed().as_secs_f64();
    let empty = match no_tokens {
        0 => String::new(),
        n => format!("; {n} input records without tokens are kept (nothing to compare, not stored)"),
    };
    let plan = d.plan.as_ref().map_or_else(String::new, |p| format!("; plan: {p} ({})", d.reason));
    let wrote: String = files
        .iter()
        .map(|f| format!("; wrote {} records to {}", f["records"], f["file"].as_str().unwrap_or_default()))
        .collect();
    summary(
        "dedup",
        &format!(
            "{} clusters from {} verified pairs ({what}) in collection `{name}` of {}: {} of {records} records are \
             duplicates ({percent:.1}%){empty}, keeping {} per cluster, clustering {}, in {secs:.2} s (join \
             {join_secs:.2} s: load {:.2}, keys {:.2}, pairs {:.2}, clusters {:.2}){plan}{wrote}",
            d.clusters.len(),
            d.pairs,
            session.path().display(),
            duplicates,
            args.keep,
            args.clustering,
            d.stages.load,
            d.stages.keys,
            d.stages.pairs,
            d.stages.cluster,
        ),
        json!({"collection": name, "records": records, "clusters": d.clusters.len(), "pairs": d.pairs,
               "candidates": d.candidates, "duplicates": duplicates, "kept": records as usize - duplicates, "percent": percent, "no_tokens": no_tokens,
               "keep": args.keep.to_string(), "clustering": args.clustering.name(), "seconds": secs, "join_seconds": join_secs,
               "join_stages": {"load": d.stages.load, "keys": d.stages.keys, "pairs": d.stages.pairs, "cluster": d.stages.cluster},
               "ingest": ingest,
               "plan": d.plan.as_ref().map(ToString::to_string), "reason": d.reason, "files": files}),
    );
    Ok(())
}

/// The clusters on stdout, each with the key kept.
fn print_clusters(decided: &Decided, format: ClusterFormat) -> Result<(), CliError> {
    match format {
        ClusterFormat::None => {}
        ClusterFormat::Jsonl => {
            for (i, g) in decided.groups.iter().enumerate() {
                let mut v = json!({"cluster": i + 1, "size": g.keys.len(), "keeper": g.keys[g.keeper], "keys": g.keys,
                                   "rows": g.rows});
                if let (Some(r), Some(o)) = (&g.representative, v.as_object_mut()) {
                    o.insert("representative".into(), json!(r));
                }
                outln!("{v}")?;
            }
        }
        ClusterFormat::Csv => {
            // Each record quoted by the csv crate, then written as one stdout line.
            let line = |fields: [&str; 4]| -> Result<(), CliError> {
                let mut w = csv::Writer::from_writer(Vec::new());
                w.write_record(fields).map_err(|e| CliError::Io(format!("csv: {e}")))?;
                let bytes = w.into_inner().map_err(|e| CliError::Io(format!("csv: {}", e.error())))?;
                write_out(format_args!("{}", String::from_utf8_lossy(&bytes)))
            };
            line(["cluster", "key", "row_id", "kept"])?;
            for (i, g) in decided.groups.iter().enumerate() {
                for (m, (k, r)) in g.keys.iter().zip(&g.rows).enumerate() {
                    line([&(i + 1).to_string(), k, &r.to_string(), if m == g.keeper { "true" } else { "false" }])?;
                }
            }
        }
        ClusterFormat::Table => {
            let rows = decided
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    vec![(i + 1).to_string(), g.keys.len().to_string(), g.keys[g.keeper].clone(), short_list(&g.keys)]
                })
                .collect();
            outln!("{}", table(&["cluster", "size", "kept", "members"], rows))?;
        }
    }
    Ok(())
}
