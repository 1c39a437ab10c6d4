//! What `dedup` writes once the clusters are known: which member of each cluster is kept
//! (`--keep`), the drop list, the scored pairs and the deduplicated records.
//!
//! `--keep` rules, each with ties going to the member stored first (the lowest row id, which
//! for a collection made from one input is the first in input order):
//! - `first`: the member stored first;
//! - `longest` / `shortest`: the member whose text has the most / fewest UTF-8 bytes (token
//!   lists: the most / fewest tokens);
//! - any other word names a field: the member with the greatest value of that field (numbers
//!   compare as numbers and rank above text, text compares byte-wise, a member without the
//!   field ranks last).

use std::collections::HashMap;
use std::path::Path;

use sketchdb::io::{Content, Raw, SourceRecord};
use sketchdb::{Collection, DedupResult, Estimate, QueryKind, Sketch};

use super::dedup_in::{Input, Stored};
use crate::error::CliError;
use crate::write::{self, Added, AddedNames, Cell, ColType, Column, FieldValue, RecordWriter, Status, Target};

/// Which member of a cluster is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    First,
    Longest,
    Shortest,
    Field(String),
}

impl std::str::FromStr for Keep {
    type Err = String;

    fn from_str(s: &str) -> Result<Keep, String> {
        Ok(match s {
            "first" => Keep::First,
            "longest" => Keep::Longest,
            "shortest" => Keep::Shortest,
            "" => return Err("give first, longest, shortest or a field name".into()),
            field => Keep::Field(field.to_string()),
        })
    }
}

impl std::fmt::Display for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keep::First => f.write_str("first"),
            Keep::Longest => f.write_str("longest"),
            Keep::Shortest => f.write_str("shortest"),
            Keep::Field(name) => f.write_str(name),
        }
    }
}

/// One cluster with its members' keys (UTF-8, lossy) and the member kept.
pub struct Group {
    pub keys: Vec<String>,
    pub rows: Vec<u64>,
    pub keeper: usize,
    /// The representative's key (representative clustering: every other member is a
    /// verified pair with it).
    pub representative: Option<String>,
}

/// The clusters of a dedup with their keepers, and where each clustered key is.
pub struct Decided {
    pub groups: Vec<Group>,
    by_key: HashMap<String, (usize, usize)>,
}

impl Decided {
    /// Records dropped: every member of a cluster but its keeper.
    pub fn dropped(&self) -> usize {
        self.groups.iter().map(|g| g.keys.len() - 1).sum()
    }

    /// The cluster columns of the record stored under `key`.
    pub fn added(&self, key: &str) -> Added {
        match self.by_key.get(key) {
            Some(&(g, m)) => {
                let group = &self.groups[g];
                let status = if m == group.keeper { Status::Kept } else { Status::Duplicate };
                Added { cluster: Some(g as u64 + 1), keeper: group.keys[group.keeper].clone(), status }
            }
            None => Added { cluster: None, keeper: key.to_string(), status: Status::Unique },
        }
    }
}

/// The value `--keep` compares for one record (`file`: the input file a Parquet row is in).
fn metric(
    rec: &SourceRecord,
    keep: &Keep,
    file: &Path,
    parquet: &mut Option<Vec<FieldValue>>,
) -> Result<FieldValue, CliError> {
    let length = |c: &Content| match c {
        Content::Text(t) => t.len(),
        Content::Tokens(t) => t.len(),
        Content::Terms(t) => t.len(),
        _ => 0,
    };
    Ok(match keep {
        Keep::First => FieldValue::Missing,
        Keep::Longest => FieldValue::Num(length(&rec.content) as f64),
        Keep::Shortest => FieldValue::Num(-(length(&rec.content) as f64)),
        Keep::Field(name) => match &rec.raw {
            Raw::JsonLine(line) => {
                let v: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| CliError::Input(format!("{}: {e}", rec.origin)))?;
                FieldValue::of_json(v.get(name).or_else(|| v.pointer(&format!("/{}", name.replace('.', "/")))))
            }
            Raw::Fields { names, values } => match names.iter().position(|n| n == name) {
                Some(i) => FieldValue::of_text(values.get(i).map_or("", String::as_str)),
                None => {
                    return Err(CliError::Usage(format!(
                        "--keep {name}: {} has no column `{name}` (columns: {})",
                        rec.origin.path().display(),
                        names.join(", ")
                    )));
                }
            },
            Raw::ParquetRow(row) => {
                if parquet.is_none() {
                    *parquet = Some(write::column_values(file, name)?);
                }
                parquet.as_ref().and_then(|v| v.get(*row as usize).cloned()).unwrap_or(FieldValue::Missing)
            }
            _ => {
                return Err(CliError::Usage(format!(
                    "--keep {name}: the records of {} have no fields (use first, longest or shortest)",
                    rec.origin.path().display()
                )));
            }
        },
    })
}

/// Chooses each cluster's keeper by `keep`, reading `input` (ingested into `coll`) once
/// unless `keep` is `first`.
pub fn decide(d: &DedupResult, keep: &Keep, input: Option<&Input>, coll: &Collection) -> Result<Decided, CliError> {
    let mut groups: Vec<Group> = d
        .clusters
        .iter()
        .map(|c| Group {
            keys: c.keys.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect(),
            rows: c.rows.clone(),
            keeper: 0,
            representative: c
                .representative
                .and_then(|r| c.rows.iter().position(|&x| x == r))
                .map(|i| String::from_utf8_lossy(&c.keys[i]).into_owned()),
        })
        .collect();
    let by_key: HashMap<String, (usize, usize)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| group.keys.iter().enumerate().map(move |(m, k)| (k.clone(), (g, m))))
        .collect();
    if *keep != Keep::First {
        let input = input.ok_or_else(|| {
            CliError::Usage(format!("--keep {keep} reads the input's records: give a file or folder, not a collection"))
        })?;
        let mut values: HashMap<(usize, usize), FieldValue> = HashMap::new();
        let mut parquet = None;
        input.each(coll, |rec, stored| {
            if let (Stored::Yes, Some(&at)) = (stored, by_key.get(&rec.key)) {
                values.insert(at, metric(&rec, keep, input.file(), &mut parquet)?);
            }
            Ok(())
        })?;
        for (g, group) in groups.iter_mut().enumerate() {
            // Members are in row order: a later member must be strictly better.
            let value = |m: usize| values.get(&(g, m)).unwrap_or(&FieldValue::Missing);
            group.keeper = (1..group.keys.len())
                .fold(0, |best, m| if value(m).cmp(value(best)) == std::cmp::Ordering::Greater { m } else { best });
        }
    }
    Ok(Decided { groups, by_key })
}

/// A verified pair with its estimate.
pub struct ScoredPair {
    pub a: u64,
    pub b: u64,
    pub estimate: Estimate,
}

/// Every verified pair, sorted by row ids, with its estimate and interval at `level` (the
/// exact Hamming distance for a radius dedup).
pub fn score_pairs(
    coll: &Collection,
    d: &DedupResult,
    kind: QueryKind,
    level: f64,
) -> Result<Vec<ScoredPair>, CliError> {
    let snap = coll.snapshot()?;
    let mut sketches: HashMap<u64, Sketch> = HashMap::new();
    let mut pairs = d.verified.clone();
    pairs.sort_unstable();
    let mut out = Vec::with_capacity(pairs.len());
    for (a, b) in pairs {
        for row in [a, b] {
            if let std::collections::hash_map::Entry::Vacant(slot) = sketches.entry(row) {
                let rec = snap
                    .get_row(row)?
                    .ok_or_else(|| CliError::Runtime(format!("row {row} was deleted while dedup ran")))?;
                slot.insert(rec.sketch);
            }
        }
        let (x, y) = (&sketches[&a], &sketches[&b]);
        let estimate = match kind {
            QueryKind::Hamming(_) => x.hamming(y, level)?,
            _ => x.similarity(y, level)?,
        };
        out.push(ScoredPair { a, b, estimate });
    }
    Ok(out)
}

/// Where each clustered row is: (cluster index, member index).
fn row_index(decided: &Decided) -> HashMap<u64, (usize, usize)> {
    decided
        .groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| group.rows.iter().enumerate().map(move |(m, &r)| (r, (g, m))))
        .collect()
}

/// Writes `--pairs`: `a`, `b` (keys), `cluster`, `measure`, `estimate`, `lower`, `upper`,
/// `level`.
pub fn write_pairs(target: &Target, decided: &Decided, pairs: &[ScoredPair], measure: &str) -> Result<(), CliError> {
    let columns = vec![
        Column::new("a", ColType::Str),
        Column::new("b", ColType::Str),
        Column::new("cluster", ColType::UInt),
        Column::new("measure", ColType::Str),
        Column::new("estimate", ColType::Float),
        Column::new("lower", ColType::Float),
        Column::new("upper", ColType::Float),
        Column::new("level", ColType::Float),
    ];
    let at = row_index(decided);
    let mut sink = write::rows(target, columns)?;
    for p in pairs {
        let (Some(&(ga, ma)), Some(&(gb, mb))) = (at.get(&p.a), at.get(&p.b)) else { continue };
        // Representative clustering can put a verified pair's records in two clusters.
        let cluster = if ga == gb { Cell::UInt(ga as u64 + 1) } else { Cell::Null };
        sink.row(vec![
            Cell::Str(decided.groups[ga].keys[ma].clone()),
            Cell::Str(decided.groups[gb].keys[mb].clone()),
            cluster,
            Cell::Str(measure.to_string()),
            Cell::Float(p.estimate.value),
            Cell::Float(p.estimate.lower),
            Cell::Float(p.estimate.upper),
            Cell::Float(p.estimate.level),
        ])?;
    }
    sink.finish()
}

/// Writes `--dropped`: the keys to remove, in cluster order. A `.txt` list has one key per
/// line; other formats add `cluster`, `keeper`, and the dropped record's best verified match
/// (`best_match`, its `measure` and `estimate`: the highest similarity, or the smallest
/// Hamming distance; ties to the match stored first).
pub fn write_dropped(
    target: &Target,
    decided: &Decided,
    pairs: &[ScoredPair],
    measure: &str,
    smaller_is_better: bool,
) -> Result<(), CliError> {
    let columns = vec![
        Column::new("key", ColType::Str),
        Column::new("cluster", ColType::UInt),
        Column::new("keeper", ColType::Str),
        Column::new("best_match", ColType::Str),
        Column::new("measure", ColType::Str),
        Column::new("estimate", ColType::Float),
    ];
    // The best match of every clustered row, over the verified pairs it is in.
    let mut best: HashMap<u64, (u64, f64)> = HashMap::new();
    for p in pairs {
        let v = p.estimate.value;
        for (me, other) in [(p.a, p.b), (p.b, p.a)] {
            let better = |(r, e): (u64, f64)| {
                let by_value = if smaller_is_better { v < e } else { v > e };
                by_value || (v == e && other < r)
            };
            if best.get(&me).is_none_or(|&cur| better(cur)) {
                best.insert(me, (other, v));
            }
        }
    }
    let at = row_index(decided);
    let mut sink = write::rows(target, columns)?;
    for (g, group) in decided.groups.iter().enumerate() {
        for (m, key) in group.keys.iter().enumerate().filter(|&(m, _)| m != group.keeper) {
            let (matched, estimate) = match best.get(&group.rows[m]) {
                Some(&(r, e)) => (
                    at.get(&r).map_or(Cell::Null, |&(g, m)| Cell::Str(decided.groups[g].keys[m].clone())),
                    Cell::Float(e),
                ),
                None => (Cell::Null, Cell::Null),
            };
            sink.row(vec![
                Cell::Str(key.clone()),
                Cell::UInt(g as u64 + 1),
                Cell::Str(group.keys[group.keeper].clone()),
                matched,
                Cell::Str(measure.to_string()),
                estimate,
            ])?;
        }
    }
    sink.finish()
}

/// Writes `--write-deduplicated`: the input's kept records unchanged (every record, with the
/// cluster columns, when `names` is given). A record without tokens is kept (status
/// `no_tokens`); one ingest rejected otherwise is not written. Returns the records written.
pub fn write_records(
    input: &Input,
    coll: &Collection,
    target: &Target,
    decided: &Decided,
    names: Option<AddedNames>,
) -> Result<u64, CliError> {
    let all = names.is_some();
    let mut first = true;
    let mut parquet_rows: Option<Vec<Option<Added>>> = None;
    let mut writer = RecordWriter::new(target.clone(), names.clone());
    input.each(coll, |rec, stored| {
        if first && matches!(rec.raw, Raw::ParquetRow(_)) {
            parquet_rows = Some(Vec::new());
        }
        first = false;
        let added = match stored {
            Stored::Yes => decided.added(&rec.key),
            Stored::NoTokens => Added { cluster: None, keeper: rec.key.clone(), status: Status::NoTokens },
            Stored::Rejected => return Ok(()),
        };
        let wanted = all || added.kept();
        match (&mut parquet_rows, &rec.raw) {
            (Some(rows), Raw::ParquetRow(r)) => {
                let r = *r as usize;
                if rows.len() <= r {
                    rows.resize(r + 1, None);
                }
                rows[r] = wanted.then_some(added);
                Ok(())
            }
            _ if wanted => writer.write(&rec, &added),
            _ => Ok(()),
        }
    })?;
    match parquet_rows {
        Some(rows) if target.format == write::OutFormat::Parquet => {
            write::copy_rows(input.file(), target, &rows, names.as_ref())
        }
        Some(_) => Err(CliError::Usage(format!(
            "--write-deduplicated {}: Parquet input is written as Parquet (.parquet)",
            target.path.display()
        ))),
        None => {
            let n = writer.written();
            writer.finish()?;
            Ok(n)
        }
    }
}
