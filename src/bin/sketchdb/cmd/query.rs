//! Query-side commands: query, explain and estimate, and the question (`Ask`) they share
//! with `dedup`.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};
use sketchdb::recipes::{Measure, check_question};
use sketchdb::{
    Collection, Estimate, Explain, Query, QueryKind, QueryOptions, Sketch, estimate::DEFAULT_LEVEL, plan::PlanKind,
};

use super::hits::print_result;
use super::query_file::probe_sketch;
use crate::error::CliError;
use crate::output::{outln, write_out};
use crate::session::Session;

/// What to ask and how.
#[derive(Args, Debug, Clone)]
pub struct Ask {
    /// Keep records with estimated similarity >= T (Jaccard; cosine for SimHash).
    #[arg(long, conflicts_with_all = ["top_k", "radius"])]
    pub threshold: Option<f64>,
    /// Return the K most similar records.
    #[arg(long, conflicts_with = "radius")]
    pub top_k: Option<usize>,
    /// Return every SimHash record within this Hamming distance (inclusive).
    #[arg(long)]
    pub radius: Option<u32>,
    /// Confidence level of the intervals.
    #[arg(long, default_value_t = DEFAULT_LEVEL)]
    pub level: f64,
    /// Require an answer exact with respect to the stored sketches (no LSH, no probabilistic
    /// early termination).
    #[arg(long)]
    pub exact: bool,
    /// Force an access path: full-scan, oph-bin-scan, lsh-probe or simhash-probe.
    #[arg(long)]
    pub plan: Option<String>,
}

impl Ask {
    /// What to keep; without `--threshold`, `--top-k` or `--radius`, the default threshold
    /// of the collection's measure ([`Measure::default_threshold`]).
    fn kind(&self, coll: &Collection) -> Result<QueryKind, CliError> {
        let default_threshold = Measure::of(coll.params().kind()).default_threshold();
        Ok(match (self.threshold, self.top_k, self.radius) {
            (Some(t), None, None) => QueryKind::Threshold(t),
            (None, Some(k), None) => QueryKind::TopK(k),
            (None, None, Some(r)) => QueryKind::Hamming(r),
            (None, None, None) => QueryKind::Threshold(default_threshold),
            _ => return Err(CliError::Usage("give one of --threshold, --top-k or --radius".into())),
        })
    }

    fn options(&self) -> Result<QueryOptions, CliError> {
        let force = match &self.plan {
            None => None,
            Some(p) => Some(PlanKind::from_name(p).ok_or_else(|| {
                CliError::Usage(format!(
                    "unknown plan `{p}` (expected full-scan, oph-bin-scan, lsh-probe or simhash-probe)"
                ))
            })?),
        };
        Ok(QueryOptions { level: self.level, exact: self.exact, force, ..QueryOptions::default() })
    }
}

/// Where the query sketch comes from.
#[derive(Args, Debug, Clone)]
pub struct Probe {
    /// A stored key to query with.
    pub key: Option<String>,
    /// Text to sketch with the collection's tokenizer.
    #[arg(long, conflicts_with = "key")]
    pub text: Option<String>,
    /// Comma-separated u64 token hashes.
    #[arg(long, conflicts_with_all = ["key", "text"], value_delimiter = ',')]
    pub tokens: Option<Vec<u64>>,
    /// A SimHash fingerprint in hex.
    #[arg(long, conflicts_with_all = ["key", "text", "tokens"])]
    pub simhash: Option<String>,
    /// A JSONL file of queries: {"qid" or "key", and one of "text", "tokens", "simhash"};
    /// other fields are ignored.
    #[arg(long, conflicts_with_all = ["key", "text", "tokens", "simhash"])]
    pub queries: Option<PathBuf>,
    /// Threads that answer a `--queries` file's batches (default: every core). The answers do
    /// not depend on it.
    #[arg(long, value_name = "N", requires = "queries",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Option<usize>,
}

/// Where the probes of a resolved question come from.
enum Probes {
    /// None: the collection against itself (dedup).
    SelfJoin,
    /// One probe's query, printed under `label`.
    One { label: String, query: Query },
    /// A JSONL file of probes, one per line.
    File(PathBuf),
}

/// A command's question, resolved against its collection: what to keep (with the
/// collection's default threshold), the options and the probes.
pub struct Resolved {
    pub kind: QueryKind,
    pub options: QueryOptions,
    probes: Probes,
}

/// Turns a command's arguments into its question; `query`, `explain` and `dedup` all go
/// through here, so they agree on defaults. `probe` is `None` for dedup.
pub fn resolve(coll: &Collection, probe: Option<&Probe>, ask: &Ask) -> Result<Resolved, CliError> {
    let kind = ask.kind(coll)?;
    let options = ask.options()?;
    check_question(kind, &options, coll.params().kind()).map_err(sketchdb::Error::from)?;
    let one = |label: String, sketch: Sketch| Probes::One { label, query: Query { sketch, kind, options } };
    let probes = match probe {
        None => Probes::SelfJoin,
        Some(Probe { queries: Some(path), .. }) => Probes::File(path.clone()),
        Some(Probe { key: Some(k), .. }) => one(k.clone(), coll.sketch_of(k)?),
        Some(p) => {
            one("query".into(), probe_sketch(coll, p.text.as_deref(), p.tokens.as_deref(), p.simhash.as_deref())?)
        }
    };
    Ok(Resolved { kind, options, probes })
}

/// The name of a hit's `estimate`: the collection's measure, or `hamming_distance` for a
/// Hamming-radius query (whose estimate is the exact distance).
pub fn measure_name(kind: QueryKind, measure: Measure) -> &'static str {
    match kind {
        QueryKind::Hamming(_) => "hamming_distance",
        _ => measure.name(),
    }
}

/// The lines of `path` (`-`: standard input), read as they come.
fn open_lines(path: &Path) -> Result<Box<dyn BufRead>, CliError> {
    if path == Path::new("-") {
        crate::stdin::claim("the input")?;
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = std::fs::File::open(path).map_err(|e| CliError::io(path, e))?;
    Ok(Box::new(std::io::BufReader::new(file)))
}

pub fn query(
    session: &mut Session,
    collection: &str,
    probe: &Probe,
    ask: &Ask,
    json_out: bool,
) -> Result<(), CliError> {
    let coll = session.collection(collection)?;
    let resolved = resolve(&coll, Some(probe), ask)?;
    let measure = measure_name(resolved.kind, Measure::of(coll.params().kind()));
    match &resolved.probes {
        Probes::File(path) => crate::load::pipeline::pool(probe.threads)?.install(|| {
            super::query_file::run_query_file(&coll, path, resolved.kind, resolved.options, measure, json_out)
        }),
        Probes::One { label, query } => {
            // A collection that keeps exact shingles re-ranks by exact Jaccard against the
            // probe's own set: the key's stored set, or the text's shingles.
            let r = match (coll.config().exact_shingles, &probe.key, &probe.text) {
                (true, Some(key), _) => coll.query_key(key, resolved.kind, resolved.options)?,
                (true, None, Some(text)) => coll.query_text(text, resolved.kind, resolved.options)?,
                _ => coll.query(query)?,
            };
            print_result(label, &r, measure, json_out)
        }
        Probes::SelfJoin => Err(CliError::Usage("a query needs a probe".into())),
    }
}

pub fn explain(
    session: &mut Session,
    collection: &str,
    probe: &Probe,
    ask: &Ask,
    analyze: bool,
    json_out: bool,
) -> Result<(), CliError> {
    let coll = session.collection(collection)?;
    let resolved = resolve(&coll, Some(probe), ask)?;
    let query = match &resolved.probes {
        Probes::One { query, .. } => query,
        Probes::File(path) => {
            return Err(CliError::Usage(format!(
                "{}: explain takes one probe (a key, --text, --tokens or --simhash), not a file of queries",
                path.display()
            )));
        }
        Probes::SelfJoin => return Err(CliError::Usage("explain needs a probe".into())),
    };
    // A collection that keeps exact shingles scores key and text questions by exact Jaccard;
    // the explanation says so.
    let (kind, options) = (resolved.kind, resolved.options);
    let e = match (coll.config().exact_shingles, &probe.key, &probe.text) {
        (true, Some(key), _) => coll.explain_key(key, kind, options, analyze)?,
        (true, None, Some(text)) => {
            coll.explain_tokens(&coll.config().tokenizer.tokens(text), kind, options, analyze)?
        }
        _ => coll.explain(query, analyze)?,
    };
    if json_out { outln!("{}", explain_json(&e)) } else { write_out(format_args!("{e}")) }
}

/// An explanation as one JSON object: `plan`, `reason`, `scores`, `alternatives` (each
/// `plan`, `cost_ns`, `note`), for a plan that bands `banding` (`bands`, `rows`,
/// `threshold`, `rule`) and, after a run, `analyze`.
pub fn explain_json(e: &Explain) -> Value {
    let alts: Vec<Value> = e
        .choice
        .alternatives
        .iter()
        .map(|a| json!({"plan": a.plan.to_string(), "cost_ns": a.cost_ns, "note": a.note}))
        .collect();
    let mut v = json!({"plan": e.choice.plan.to_string(), "reason": e.choice.reason, "scores": e.scoring.name(),
                       "alternatives": alts});
    if let (Some(b), Some(o)) = (e.banding, v.as_object_mut()) {
        let rule = b.purpose.map_or("given", |p| p.name());
        o.insert(
            "banding".into(),
            json!({"bands": b.params.bands, "rows": b.params.rows, "threshold": b.threshold, "rule": rule}),
        );
    }
    if let (Some(a), Some(o)) = (e.analyze, v.as_object_mut()) {
        o.insert(
            "analyze".into(),
            json!({"results": a.results, "elapsed_us": a.elapsed.as_secs_f64() * 1e6, "rows_touched": a.rows_touched,
                   "candidates": a.candidates, "bins_compared": a.bins_compared, "pruned": a.pruned}),
        );
    }
    v
}

/// `estimate`: one pair of keys, or every pair of a file.
#[derive(Args, Debug, Clone)]
pub struct EstimateArgs {
    /// The collection.
    pub collection: String,
    /// First key.
    #[arg(required_unless_present = "pairs")]
    pub a: Option<String>,
    /// Second key.
    #[arg(required_unless_present = "pairs")]
    pub b: Option<String>,
    /// A file of key pairs (`-` for stdin): JSON lines `{"a": KEY, "b": KEY}`, or two
    /// tab-separated keys per line; one result line per pair, as the pairs are read.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["a", "b"])]
    pub pairs: Option<PathBuf>,
    /// Confidence level.
    #[arg(long, default_value_t = DEFAULT_LEVEL)]
    pub level: f64,
}

#[derive(serde::Deserialize)]
struct PairLine {
    a: String,
    b: String,
}

/// The keys of one line of a pairs file: a JSON object, or two tab-separated keys.
fn pair_of(line: &str) -> Result<(String, String), String> {
    if line.trim_start().starts_with('{') {
        let p: PairLine = serde_json::from_str(line).map_err(|e| format!("malformed pair: {e}"))?;
        return Ok((p.a, p.b));
    }
    match line.strip_suffix('\r').unwrap_or(line).split('\t').collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err("expected {\"a\": KEY, \"b\": KEY} or two tab-separated keys".into()),
    }
}

fn print_estimate(a: &str, b: &str, what: &str, e: &Estimate, level: f64, json_out: bool) -> Result<(), CliError> {
    if json_out {
        outln!(
            "{}",
            json!({"a": a, "b": b, "measure": what, "estimate": e.value, "lower": e.lower, "upper": e.upper, "level": level})
        )
    } else {
        outln!("{what}({a}, {b}) = {:.4}  [{:.4}, {:.4}] at {:.0}%", e.value, e.lower, e.upper, level * 100.0)
    }
}

pub fn estimate(session: &mut Session, args: &EstimateArgs, json_out: bool) -> Result<(), CliError> {
    let coll = session.collection(&args.collection)?;
    let what = Measure::of(coll.params().kind()).name();
    let level = args.level;
    let path = match (&args.pairs, &args.a, &args.b) {
        (Some(path), _, _) => path,
        (None, Some(a), Some(b)) => {
            let e = coll.estimate(a, b, level)?;
            return print_estimate(a, b, what, &e, level, json_out);
        }
        _ => return Err(CliError::Usage("estimate needs two keys or --pairs FILE".into())),
    };
    sketchdb::recipes::check_level(level)?;
    // One snapshot for the whole file: every pair sees the same commit.
    let snap = coll.snapshot()?;
    let (mut done, mut missing) = (0u64, 0u64);
    for (i, line) in open_lines(path)?.lines().enumerate() {
        let line = line.map_err(|e| CliError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let (a, b) = pair_of(&line).map_err(|m| CliError::Input(format!("{}:{}: {m}", path.display(), i + 1)))?;
        let (x, y) = (snap.get(&a)?, snap.get(&b)?);
        done += 1;
        match (x, y) {
            (Some(x), Some(y)) => {
                print_estimate(&a, &b, what, &x.sketch.similarity(&y.sketch, level)?, level, json_out)?
            }
            (x, _) => {
                missing += 1;
                let absent = if x.is_none() { &a } else { &b };
                let message = format!("no key `{absent}` in collection `{}`", args.collection);
                if json_out {
                    outln!(
                        "{}",
                        json!({"a": a, "b": b, "measure": what, "error": {"kind": "not_found", "message": message}})
                    )?;
                } else {
                    outln!("{what}({a}, {b}) = ?  ({message})")?;
                }
            }
        }
    }
    if missing > 0 {
        return Err(CliError::NotFound(format!(
            "{}: {missing} of {done} pairs name keys that are not in collection `{}`",
            path.display(),
            args.collection
        )));
    }
    Ok(())
}
