//! `dedup`: the collection joined with itself, near-duplicates grouped into clusters; a
//! directory is ingested first.

use std::path::Path;

use clap::{Args, ValueEnum};
use serde_json::json;
use sketchdb::QueryKind;

use super::ingest::{DEFAULT_BATCH, Format, IngestArgs, ingest};
use super::query::{Ask, Resolved, resolve};
use crate::error::CliError;
use crate::output::{csv_field, table};
use crate::session::Session;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterFormat {
    Table,
    Jsonl,
    Csv,
}

#[derive(Args, Debug, Clone)]
pub struct DedupArgs {
    /// A collection name, or a directory of text files to ingest first (into a collection
    /// named after the directory, in the database file).
    pub target: String,
    #[command(flatten)]
    pub ask: Ask,
    /// Output format for the clusters.
    #[arg(long, value_enum, default_value_t = ClusterFormat::Table)]
    pub format: ClusterFormat,
    /// Show the self-join plan, why, and the alternatives with their estimated costs,
    /// without running it.
    #[arg(long)]
    pub explain: bool,
}

pub fn dedup(session: &mut Session, args: &DedupArgs) -> Result<(), CliError> {
    let path = Path::new(&args.target);
    let name = if path.is_dir() {
        let name = path
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "docs".into());
        let args = IngestArgs {
            collection: name.clone(),
            inputs: vec![path.to_path_buf()],
            format: Format::Text,
            batch: DEFAULT_BATCH,
        };
        ingest(session, &args)?;
        name
    } else {
        args.target.clone()
    };
    let coll = session.collection(&name)?;
    let Resolved { kind, options, .. } = resolve(&coll, None, &args.ask)?;
    if args.explain {
        match coll.explain_dedup(kind, options)? {
            Some(e) => print!("{e}"),
            None => println!("collection `{name}` has no records: nothing to join"),
        }
        return Ok(());
    }
    let d = coll.dedup(kind, options)?;
    let key = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    match args.format {
        ClusterFormat::Jsonl => {
            for (i, c) in d.clusters.iter().enumerate() {
                let keys: Vec<String> = c.keys.iter().map(|k| key(k)).collect();
                println!("{}", json!({"cluster": i + 1, "size": c.keys.len(), "keys": keys, "rows": c.rows}));
            }
        }
        ClusterFormat::Csv => {
            println!("cluster,key,row_id");
            for (i, c) in d.clusters.iter().enumerate() {
                for (k, r) in c.keys.iter().zip(&c.rows) {
                    println!("{},{},{r}", i + 1, csv_field(&key(k)));
                }
            }
        }
        ClusterFormat::Table => {
            let rows = d
                .clusters
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    vec![
                        (i + 1).to_string(),
                        c.keys.len().to_string(),
                        c.keys.iter().map(|k| key(k)).collect::<Vec<_>>().join(", "),
                    ]
                })
                .collect();
            println!("{}", table(&["cluster", "size", "members"], rows));
            let what = match kind {
                QueryKind::Hamming(r) => format!("Hamming distance <= {r}"),
                QueryKind::Threshold(t) => format!("similarity >= {t}"),
                _ => String::new(),
            };
            eprintln!(
                "{} clusters from {} verified pairs ({what}) in collection `{name}` of {}",
                d.clusters.len(),
                d.pairs,
                session.path().display()
            );
            if let Some(plan) = d.plan {
                eprintln!("plan: {plan} ({})", d.reason);
            }
        }
    }
    Ok(())
}
