//! `dedup`: the collection joined with itself, near-duplicates grouped into clusters; a
//! directory is ingested first.

use std::path::Path;

use clap::{Args, ValueEnum};
use serde_json::json;
use sketchdb::QueryKind;

use super::ingest::{IngestArgs, ingest};
use super::query::{Ask, Resolved, explain_json, resolve};
use crate::error::CliError;
use crate::output::{csv_field, note, outln, short_list, summary, table, write_out};
use crate::session::Session;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterFormat {
    Table,
    Jsonl,
    Csv,
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

#[derive(Args, Debug, Clone)]
pub struct DedupArgs {
    /// A collection name, or a directory of text files to ingest first (into a collection
    /// named after the directory, in the database file).
    pub target: String,
    #[command(flatten)]
    pub ask: DedupAsk,
    /// Output format for the clusters (`--json` means jsonl).
    #[arg(long, value_enum, default_value_t = ClusterFormat::Table)]
    pub format: ClusterFormat,
    /// Show the self-join plan, why, and the alternatives with their estimated costs,
    /// without running it.
    #[arg(long)]
    pub explain: bool,
}

/// The collection a folder is ingested into: its canonical path, so two folders with the same
/// name never share one (a path over the 255-byte name limit keeps its last 200 bytes after
/// a hash of the whole).
pub fn folder_collection(path: &Path) -> Result<String, CliError> {
    let canon = path.canonicalize().map_err(|e| CliError::io(path, e))?;
    let full = canon.to_string_lossy().into_owned();
    if full.len() <= sketchdb::recipes::MAX_COLLECTION_NAME_LEN {
        return Ok(full);
    }
    let mut cut = full.len() - 200;
    while !full.is_char_boundary(cut) {
        cut += 1;
    }
    Ok(format!("{:016x}...{}", xxhash_rust::xxh3::xxh3_64(full.as_bytes()), &full[cut..]))
}

pub fn dedup(session: &mut Session, args: &DedupArgs, json_out: bool) -> Result<(), CliError> {
    let start = std::time::Instant::now();
    let path = Path::new(&args.target);
    let name = if path.is_dir() {
        let name = folder_collection(path)?;
        note(&format!("sketchdb: folder {} -> collection `{name}` in {}", path.display(), session.path().display()));
        ingest(session, &IngestArgs::folder(name.clone(), path.to_path_buf()))?;
        name
    } else {
        args.target.clone()
    };
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
    let d = coll.dedup(kind, options)?;
    let records = coll.stats()?.live;
    let key = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    let format = if json_out { ClusterFormat::Jsonl } else { args.format };
    match format {
        ClusterFormat::Jsonl => {
            for (i, c) in d.clusters.iter().enumerate() {
                let keys: Vec<String> = c.keys.iter().map(|k| key(k)).collect();
                outln!("{}", json!({"cluster": i + 1, "size": c.keys.len(), "keys": keys, "rows": c.rows}))?;
            }
        }
        ClusterFormat::Csv => {
            outln!("cluster,key,row_id")?;
            for (i, c) in d.clusters.iter().enumerate() {
                for (k, r) in c.keys.iter().zip(&c.rows) {
                    outln!("{},{},{r}", i + 1, csv_field(&key(k)))?;
                }
            }
        }
        ClusterFormat::Table => {
            let rows = d
                .clusters
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let members: Vec<String> = c.keys.iter().map(|k| key(k)).collect();
                    vec![(i + 1).to_string(), c.keys.len().to_string(), short_list(&members)]
                })
                .collect();
            outln!("{}", table(&["cluster", "size", "members"], rows))?;
        }
    }
    let what = match kind {
        QueryKind::Hamming(r) => format!("Hamming distance <= {r}"),
        QueryKind::Threshold(t) => format!("similarity >= {t}"),
        _ => String::new(),
    };
    let in_clusters: usize = d.clusters.iter().map(|c| c.keys.len()).sum();
    let duplicates = in_clusters - d.clusters.len();
    let secs = start.elapsed().as_secs_f64();
    let plan = d.plan.as_ref().map_or_else(String::new, |p| format!("; plan: {p} ({})", d.reason));
    summary(
        "dedup",
        &format!(
            "{} clusters from {} verified pairs ({what}) in collection `{name}` of {}: {} of {records} records are \
             duplicates ({:.1}%), in {secs:.2} s{plan}",
            d.clusters.len(),
            d.pairs,
            session.path().display(),
            duplicates,
            100.0 * duplicates as f64 / (records.max(1) as f64)
        ),
        json!({"collection": name, "records": records, "clusters": d.clusters.len(), "pairs": d.pairs,
               "duplicates": duplicates, "seconds": secs,
               "plan": d.plan.as_ref().map(ToString::to_string), "reason": d.reason}),
    );
    Ok(())
}
