//! Random workloads and the in-memory model they are checked against.
//!
//! A workload is a list of [`Step`]s (collection creates and drops, insert / upsert / delete
//! batches and single writes over every sketch kind, compactions, flushes), generated from
//! an [`Entropy`] source together with the [`Model`] state after each step. Some steps are
//! meant to fail (a duplicate insert inside a batch, an empty or over-long key, a sketch of
//! other parameters, a duplicate or unknown collection name): the model says which, and that
//! they change nothing. [`Harness`] runs steps on a real [`Database`]; [`read_model`] reads a
//! database back as a model, cross-checking every access path on the way; [`check_db`] adds
//! `admin::verify` (so index checks join automatically when indexes are persisted).

use std::collections::BTreeMap;
use std::fmt;

use super::rng::Entropy;
use crate::db::batch::Batch;
use crate::db::collection::Collection;
use crate::db::config::{CollectionConfig, IndexConfig};
use crate::db::database::Database;
use crate::error::Error;
use crate::sketch::params::{SketchKind, SketchParams};
use crate::sketch::sketcher::{Sketch, Sketcher};
use crate::sketch::tokens::TokenSet;
use crate::storage::MAX_KEY_LEN;

/// One collection of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCollection {
    /// Its parameters.
    pub params: SketchParams,
    /// Key -> sketch of every live record.
    pub records: BTreeMap<Vec<u8>, Sketch>,
}

/// What the database must contain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    /// Collections by name.
    pub collections: BTreeMap<String, ModelCollection>,
}

/// One write of a batch.
#[derive(Clone, Debug)]
pub enum Write {
    /// Insert (the key must be absent).
    Insert(Vec<u8>, Sketch),
    /// Insert or replace.
    Upsert(Vec<u8>, Sketch),
    /// Delete if present.
    Delete(Vec<u8>),
}

/// One step of a workload.
#[derive(Clone, Debug)]
pub enum Step {
    /// `create_collection`.
    Create(String, SketchParams),
    /// `Collection::apply`.
    Batch(String, Vec<Write>),
    /// `insert`, `upsert` or `delete` on their own.
    Single(String, Write),
    /// `Database::compact`.
    Compact,
    /// `drop_collection`.
    Drop(String),
    /// `Database::flush`.
    Flush,
}

impl Step {
    /// The step's kind, for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Create(..) => "create",
            Step::Batch(..) => "batch",
            Step::Single(..) => "single",
            Step::Compact => "compact",
            Step::Drop(..) => "drop",
            Step::Flush => "flush",
        }
    }
}

fn key_ok(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN
}

fn apply_write(c: &mut ModelCollection, w: &Write) -> Option<()> {
    match w {
        Write::Insert(k, s) | Write::Upsert(k, s) => {
            if !key_ok(k) || c.params.check_compatible(s.params()).is_err() {
                return None;
            }
            if matches!(w, Write::Insert(..)) && c.records.contains_key(k) {
                return None;
            }
            c.records.insert(k.clone(), s.clone());
        }
        Write::Delete(k) => {
            if !key_ok(k) {
                return None;
            }
            c.records.remove(k);
        }
    }
    Some(())
}

impl Model {
    /// The model after `step`, or `None` if the step must fail and change nothing.
    pub fn apply(&self, step: &Step) -> Option<Model> {
        let mut m = self.clone();
        match step {
            Step::Create(name, params) => {
                if name.is_empty() || name.len() > crate::storage::MAX_COLLECTION_NAME_LEN {
                    return None;
                }
                if m.collections.contains_key(name) {
                    return None;
                }
                m.collections.insert(name.clone(), ModelCollection { params: *params, records: BTreeMap::new() });
            }
            Step::Batch(name, writes) => {
                let c = m.collections.get_mut(name)?;
                for w in writes {
                    apply_write(c, w)?;
                }
            }
            Step::Single(name, w) => apply_write(m.collections.get_mut(name)?, w)?,
            Step::Compact | Step::Flush => {}
            Step::Drop(name) => {
                m.collections.remove(name)?;
            }
        }
        Some(m)
    }
}

/// A workload: steps with the model before and after each.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The steps.
    pub steps: Vec<Step>,
    /// `models[i]` is the state after the first `i` steps (`models[0]`: a new database).
    pub models: Vec<Model>,
    /// Whether step `i` must succeed.
    pub expect_ok: Vec<bool>,
}

impl Workload {
    /// Generates `n` steps from `e`.
    pub fn generate(e: &mut impl Entropy, n: usize) -> Workload {
        let mut g = Generator { sketchers: vec![], appended: 0 };
        let mut models = vec![Model::default()];
        let (mut steps, mut expect_ok) = (vec![], vec![]);
        for _ in 0..n {
            let Some(model) = models.last() else { break };
            let step = g.step(e, model);
            let next = model.apply(&step);
            expect_ok.push(next.is_some());
            let next = next.unwrap_or_else(|| model.clone());
            models.push(next);
            steps.push(step);
        }
        Workload { steps, models, expect_ok }
    }

    /// The index in `models` of the state after the steps before `i` that succeeded and step
    /// `i` itself, if step `i` would succeed.
    pub fn after(&self, i: usize) -> Option<usize> {
        self.expect_ok.get(i).copied().unwrap_or(false).then_some(i + 1)
    }
}

const NAMES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];

struct Generator {
    sketchers: Vec<Sketcher>,
    /// Keys handed out to append batches so far.
    appended: u32,
}

impl Generator {
    fn params(e: &mut impl Entropy) -> Option<SketchParams> {
        let seed = e.below(3);
        let p = match e.below(4) {
            0 => SketchParams::minhash([8, 16, 24][e.below(3) as usize], [32, 64][e.below(2) as usize], seed),
            1 => SketchParams::bbit([32, 64, 128][e.below(3) as usize], [1, 2, 4, 8, 16][e.below(5) as usize], seed),
            2 => SketchParams::oph([16, 32, 64][e.below(3) as usize], [8, 16, 32][e.below(3) as usize], seed),
            _ => SketchParams::simhash([64, 128][e.below(2) as usize], seed),
        };
        p.ok()
    }

    fn sketch(&mut self, e: &mut impl Entropy, params: &SketchParams) -> Option<Sketch> {
        let i = match self.sketchers.iter().position(|s| s.params() == params) {
            Some(i) => i,
            None => {
                self.sketchers.push(Sketcher::new(*params).ok()?);
                self.sketchers.len() - 1
            }
        };
        let n = 1 + e.below(24);
        let base = e.below(64);
        let tokens: Vec<u64> = (0..n).map(|j| base * 7 + j * 3 + e.below(4)).collect();
        self.sketchers.get(i)?.sketch(&TokenSet::from_unsorted(tokens)).ok()
    }

    fn key(e: &mut impl Entropy, c: &ModelCollection) -> Vec<u8> {
        match e.below(100) {
            0 => vec![],
            1 => vec![b'x'; MAX_KEY_LEN + 1],
            2..=4 => {
                let n = e.below(40);
                let mut k = format!("long-{n}-").into_bytes();
                k.resize(200 + 8 * n as usize, b'0' + (n % 10) as u8);
                k
            }
            5..=7 => vec![0xff, 0x00, e.below(8) as u8],
            8..=50 if !c.records.is_empty() => {
                let i = e.below(c.records.len() as u64) as usize;
                c.records.keys().nth(i).cloned().unwrap_or_default()
            }
            _ => format!("k{}", e.below(48)).into_bytes(),
        }
    }

    fn write(&mut self, e: &mut impl Entropy, c: &ModelCollection) -> Write {
        let key = Self::key(e, c);
        let params = if e.chance(1) { Self::params(e).unwrap_or(c.params) } else { c.params };
        let kind = e.below(10);
        if kind >= 7 {
            return Write::Delete(key);
        }
        match self.sketch(e, &params) {
            Some(s) if kind < 4 && !c.records.contains_key(&key) => Write::Insert(key, s),
            Some(s) if kind == 0 => Write::Insert(key, s),
            Some(s) => Write::Upsert(key, s),
            None => Write::Delete(key),
        }
    }

    /// A batch of 80-127 inserts and upserts of fresh keys that sort after every other key
    /// the generator makes (`ff ff` then a counter, big-endian), with a few writes of
    /// existing keys mixed in: the writer's cursor append path, under faults and crashes too.
    fn append_batch(&mut self, e: &mut impl Entropy, name: &str, c: &ModelCollection) -> Step {
        let n = 80 + e.below(48) as usize;
        let mut c = c.clone();
        let mut writes = Vec::with_capacity(n);
        for _ in 0..n {
            let w = if e.chance(5) {
                self.write(e, &c)
            } else {
                self.appended += 1;
                let n = self.appended;
                let key = vec![0xff, 0xff, (n >> 24) as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8];
                match self.sketch(e, &c.params) {
                    Some(s) if e.chance(80) => Write::Insert(key, s),
                    Some(s) => Write::Upsert(key, s),
                    None => Write::Delete(key),
                }
            };
            let _ = apply_write(&mut c, &w);
            writes.push(w);
        }
        Step::Batch(name.to_string(), writes)
    }

    fn step(&mut self, e: &mut impl Entropy, m: &Model) -> Step {
        let pick = e.below(100);
        if m.collections.is_empty() || pick < 6 {
            let name = NAMES[e.below(NAMES.len() as u64) as usize].to_string();
            let name = if e.chance(2) { String::new() } else { name };
            return match Self::params(e) {
                Some(p) => Step::Create(name, p),
                None => Step::Flush,
            };
        }
        match pick {
            6..=7 => return Step::Drop(NAMES[e.below(NAMES.len() as u64) as usize].to_string()),
            8..=9 => return Step::Compact,
            10..=13 => return Step::Flush,
            _ => {}
        }
        let i = e.below(m.collections.len() as u64) as usize;
        let Some((name, c)) = m.collections.iter().nth(i) else { return Step::Compact };
        if pick < 35 {
            return Step::Single(name.clone(), self.write(e, c));
        }
        if e.chance(6) {
            return self.append_batch(e, name, c);
        }
        // Writes see the collection as the batch left it, so later writes can build on earlier
        // ones (an insert after a delete of the same key).
        let mut c = c.clone();
        let n = 1 + e.below(16) as usize;
        let mut writes = Vec::with_capacity(n);
        for _ in 0..n {
            let w = self.write(e, &c);
            let _ = apply_write(&mut c, &w);
            writes.push(w);
        }
        Step::Batch(name.clone(), writes)
    }
}

/// Runs steps on a database, keeping collection handles.
pub struct Harness {
    /// The database.
    pub db: Database,
    handles: BTreeMap<String, Collection>,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness").field("db", &self.db).finish()
    }
}

impl Harness {
    /// A harness on `db`.
    pub fn new(db: Database) -> Self {
        Harness { db, handles: BTreeMap::new() }
    }

    fn handle(&mut self, name: &str) -> Result<Collection, Error> {
        if let Some(c) = self.handles.get(name) {
            return Ok(c.clone());
        }
        let c = self.db.collection(name)?;
        self.handles.insert(name.to_string(), c.clone());
        Ok(c)
    }

    /// Runs one step.
    pub fn exec(&mut self, step: &Step) -> Result<(), Error> {
        match step {
            Step::Create(name, params) => {
                let config = CollectionConfig::new(*params).with_index(index_for(params));
                let c = self.db.create_collection(name, config)?;
                self.handles.insert(name.clone(), c);
            }
            Step::Batch(name, writes) => {
                let c = self.handle(name)?;
                let mut b = Batch::with_capacity(writes.len());
                for w in writes {
                    match w {
                        Write::Insert(k, s) => b.insert(k, s.clone()),
                        Write::Upsert(k, s) => b.upsert(k, s.clone()),
                        Write::Delete(k) => b.delete(k),
                    };
                }
                c.apply(&b)?;
            }
            Step::Single(name, w) => {
                let c = self.handle(name)?;
                match w {
                    Write::Insert(k, s) => c.insert(k, s).map(drop)?,
                    Write::Upsert(k, s) => c.upsert(k, s).map(drop)?,
                    Write::Delete(k) => c.delete(k).map(drop)?,
                }
            }
            Step::Compact => self.db.compact().map(drop)?,
            Step::Drop(name) => {
                self.handles.remove(name);
                self.db.drop_collection(name)?;
            }
            Step::Flush => self.db.flush()?,
        }
        Ok(())
    }
}

/// Why a database does not match.
#[derive(Debug)]
pub enum CheckFailure {
    /// The database returned an error.
    Db(Error),
    /// The database answered, wrongly.
    Mismatch(String),
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckFailure::Db(e) => write!(f, "database error: {e}"),
            CheckFailure::Mismatch(s) => write!(f, "mismatch: {s}"),
        }
    }
}

impl From<Error> for CheckFailure {
    fn from(e: Error) -> Self {
        CheckFailure::Db(e)
    }
}

/// Every collection a workload creates has an index, so crashes, I/O faults and fuzzed
/// workloads reach the index tables too (and `check_db`'s verify checks them): SimHash
/// tables for fingerprints, LSH buckets of few, narrow bands for the rest (so buckets are
/// shared and runs merge within a short workload).
fn index_for(params: &SketchParams) -> IndexConfig {
    match params.kind() {
        SketchKind::SimHash => IndexConfig::SimhashTables { radius: 2 },
        _ => IndexConfig::Lsh { threshold: 0.5, bands: Some(params.slots().min(4) as u32), rows: Some(1) },
    }
}

fn mismatch<T>(s: String) -> Result<T, CheckFailure> {
    Err(CheckFailure::Mismatch(s))
}

/// The keys whose record is at least `threshold` similar to `probe`, best first: the query
/// hook. It runs on the records a scan returns (the planner's query entry point replaces the
/// scan here once it is public; indexes then answer through it).
pub fn query_keys(records: &BTreeMap<Vec<u8>, Sketch>, probe: &Sketch, threshold: f64) -> Vec<Vec<u8>> {
    let mut hits: Vec<(f64, &Vec<u8>)> = records
        .iter()
        .filter_map(|(k, s)| probe.similarity(s, 0.95).ok().filter(|e| e.value >= threshold).map(|e| (e.value, k)))
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    hits.into_iter().map(|(_, k)| k.clone()).collect()
}

/// Reads the database back as a model, checking on the way that scans, `get`, `get_row`,
/// counters and a similarity query agree.
pub fn read_model(db: &Database) -> Result<Model, CheckFailure> {
    let mut m = Model::default();
    for c in db.collections()? {
        let mut records = BTreeMap::new();
        let mut rows = vec![];
        for r in c.scan()? {
            let r = r?;
            rows.push((r.row_id, r.key.clone()));
            if records.insert(r.key.clone(), r.sketch).is_some() {
                return mismatch(format!("`{}`: key {:?} scanned twice", c.name(), r.key));
            }
        }
        let stats = c.stats()?;
        if stats.live != records.len() as u64 {
            return mismatch(format!("`{}`: stats say {} live, scan finds {}", c.name(), stats.live, records.len()));
        }
        for (row, key) in &rows {
            let Some(by_key) = c.get(key)? else {
                return mismatch(format!("`{}`: scanned key {key:?} not found by get", c.name()));
            };
            let Some(by_row) = c.get_row(*row)? else {
                return mismatch(format!("`{}`: scanned row {row} not found by get_row", c.name()));
            };
            if by_key != by_row || by_key.row_id != *row || records.get(key) != Some(&by_key.sketch) {
                return mismatch(format!("`{}`: get, get_row and scan disagree on {key:?}", c.name()));
            }
        }
        if let Some(probe) = records.values().next() {
            // The planner's exact answer must equal the model's brute force.
            let options = crate::QueryOptions { exact: true, ..Default::default() };
            let query = crate::Query { sketch: probe.clone(), kind: crate::QueryKind::Threshold(0.3), options };
            let mut got: Vec<Vec<u8>> = c.query(&query)?.hits.into_iter().map(|h| h.key).collect();
            let mut want = query_keys(&records, probe, 0.3);
            got.sort();
            want.sort();
            if got != want {
                return mismatch(format!("`{}`: query answers {} keys, the model {}", c.name(), got.len(), want.len()));
            }
        }
        m.collections.insert(c.name().to_string(), ModelCollection { params: *c.params(), records });
    }
    Ok(m)
}

/// Describes how two models differ (for failure messages).
pub fn diff(got: &Model, want: &Model) -> String {
    let mut out = vec![];
    for (name, w) in &want.collections {
        match got.collections.get(name) {
            None => out.push(format!("collection `{name}` missing")),
            Some(g) => {
                let missing = w.records.keys().filter(|k| !g.records.contains_key(*k)).count();
                let extra = g.records.keys().filter(|k| !w.records.contains_key(*k)).count();
                let changed = w.records.iter().filter(|(k, s)| g.records.get(*k).is_some_and(|t| t != *s)).count();
                if missing + extra + changed > 0 || g.params != w.params {
                    out.push(format!("`{name}`: {missing} missing, {extra} extra, {changed} changed"));
                }
            }
        }
    }
    for name in got.collections.keys().filter(|n| !want.collections.contains_key(*n)) {
        out.push(format!("unexpected collection `{name}`"));
    }
    out.join("; ")
}

/// [`read_model`] plus `admin::verify`: the database must be sound and read consistently.
pub fn check_db(db: &Database) -> Result<Model, CheckFailure> {
    let m = read_model(db)?;
    let report = crate::admin::verify(db)?;
    if !report.is_ok() {
        let problems: Vec<String> = report.problems.iter().map(|p| p.to_string()).collect();
        return mismatch(format!("verify: {}", problems.join("; ")));
    }
    Ok(m)
}
