//! `query --queries FILE`: one answer per line of a JSONL file of probes, in the file's
//! order, asked in batches ([`Collection::query_probes`]: one read snapshot per batch, the
//! probes of a batch on all cores).
//!
//! A batch holds at most [`BATCH`] probes and is asked as soon as the lines read so far are
//! used up (the next line would need a read that may wait), so a producer writing one line at a
//! time to standard input gets each answer before it writes the next, and memory stays
//! bounded whatever the file's size.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{Value, json};
use sketchdb::recipes::Content;
use sketchdb::{Collection, Probe, QueryKind, QueryOptions, QueryResult, Sketch};

use super::hits::{hit_json, print_result};
use crate::error::CliError;
use crate::input::parse_hex_fingerprint;
use crate::output::outln;

/// The most probes asked in one batch.
const BATCH: usize = 4096;
/// The read buffer: a batch is asked when it is used up.
const READ_BUFFER: usize = 1 << 20;

#[derive(serde::Deserialize)]
struct QueryLine {
    #[serde(default)]
    qid: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tokens: Option<Vec<u64>>,
    #[serde(default)]
    simhash: Option<String>,
}

/// The probes read and not yet answered: their labels, line numbers and probes, in order.
#[derive(Default)]
struct Pending {
    labels: Vec<(String, usize)>,
    probes: Vec<Probe>,
}

/// The probe of one line of a queries file (`n` its 1-based number) and its label. Keys and
/// text are asked as [`Collection::query_key`] and [`Collection::query_text`] ask them (re-ranked
/// exactly on a collection that keeps shingles); tokens as a sketch there, else sketched with
/// the batch; a SimHash fingerprint as its sketch.
fn parse(coll: &Collection, path: &Path, n: usize, line: &str) -> Result<(String, Probe), CliError> {
    let at = |m: String| CliError::Input(format!("{}:{n}: {m}", path.display()));
    let q: QueryLine = serde_json::from_str(line).map_err(|e| at(format!("malformed query: {e}")))?;
    let label = q.qid.clone().or_else(|| q.key.clone()).unwrap_or_else(|| format!("line {n}"));
    let exact = coll.config().exact_shingles;
    let probe = match (q.key, q.text, q.tokens, q.simhash) {
        (key, None, None, None) => {
            Probe::Key(key.ok_or_else(|| at("a query needs `key`, `text`, `tokens` or `simhash`".into()))?.into_bytes())
        }
        (_, Some(text), _, None) => Probe::Text(text),
        (_, None, Some(tokens), None) if !exact => Probe::Tokens(tokens),
        (_, text, tokens, simhash) => Probe::Sketch(
            probe_sketch(coll, text.as_deref(), tokens.as_deref(), simhash.as_deref())
                .map_err(|e| at(e.to_string()))?,
        ),
    };
    Ok((label, probe))
}

/// Asks the pending probes in one batch and prints their answers in order; the first probe
/// that failed ends the command with its error, after the answers before it.
fn answer(
    coll: &Collection,
    path: &Path,
    kind: QueryKind,
    options: QueryOptions,
    pending: &mut Pending,
    measure: &str,
    json_out: bool,
) -> Result<(), CliError> {
    if pending.probes.is_empty() {
        return Ok(());
    }
    let answers = coll.query_probes(&pending.probes, kind, options)?;
    for ((label, n), answer) in pending.labels.iter().zip(answers) {
        match answer {
            Ok(r) => print_query_line(label, &r, measure, json_out)?,
            Err(e) => return Err(CliError::Db(e.error).context(format!("{}:{n}", path.display()))),
        }
    }
    pending.labels.clear();
    pending.probes.clear();
    Ok(())
}

pub(super) fn probe_sketch(
    coll: &Collection,
    text: Option<&str>,
    tokens: Option<&[u64]>,
    simhash: Option<&str>,
) -> Result<Sketch, CliError> {
    let content = match (simhash, text, tokens) {
        (Some(h), _, _) => Content::Fingerprint(parse_hex_fingerprint(h).map_err(CliError::Usage)?),
        (None, Some(t), _) => Content::Text(t),
        (None, None, Some(t)) => Content::Tokens(t),
        _ => return Err(CliError::Usage("a query needs a key, --text, --tokens, --simhash or --queries".into())),
    };
    Ok(content.sketch(coll)?)
}

/// Answers every line of the queries file `path` (`-`: standard input).
pub(super) fn run_query_file(
    coll: &Collection,
    path: &Path,
    kind: QueryKind,
    options: QueryOptions,
    measure: &str,
    json_out: bool,
) -> Result<(), CliError> {
    let source: Box<dyn Read> = if path == Path::new("-") {
        crate::stdin::claim("--queries")?;
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| CliError::io(path, e))?)
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, source);
    let mut pending = Pending::default();
    let mut line = String::new();
    for n in 1.. {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| CliError::io(path, e))? == 0 {
            break;
        }
        if !line.trim().is_empty() {
            match parse(coll, path, n, &line) {
                Ok((label, probe)) => {
                    pending.labels.push((label, n));
                    pending.probes.push(probe);
                }
                Err(e) => {
                    answer(coll, path, kind, options, &mut pending, measure, json_out)?;
                    return Err(e);
                }
            }
        }
        if pending.probes.len() >= BATCH || reader.buffer().is_empty() {
            answer(coll, path, kind, options, &mut pending, measure, json_out)?;
        }
    }
    answer(coll, path, kind, options, &mut pending, measure, json_out)
}

/// One line per query of a `--queries` file: with `--json` one object (`query`, `results`,
/// `hits`, `plan`, `elapsed_us`), queries without hits included; else the query's table and
/// its count, plan and time.
fn print_query_line(label: &str, r: &QueryResult, measure: &str, json_out: bool) -> Result<(), CliError> {
    if !json_out {
        return print_result(label, r, measure, false);
    }
    let plan = r.plan.to_string();
    let hits: Vec<Value> = r
        .hits
        .iter()
        .map(|h| {
            let mut v = hit_json(label, h, &plan, measure);
            if let Some(o) = v.as_object_mut() {
                o.remove("query");
                o.remove("plan");
            }
            v
        })
        .collect();
    outln!(
        "{}",
        json!({"query": label, "results": hits.len(), "hits": hits, "plan": plan,
               "elapsed_us": r.analyze.elapsed.as_secs_f64() * 1e6})
    )
}
