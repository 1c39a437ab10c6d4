//! The crash loop and the I/O-error sweep: a workload runs on a [`FaultyBackend`] beside
//! its [`Model`]; power is lost (or I/O fails) at every sync point, at random writes or at
//! every I/O call; the database is reopened and must hold exactly an allowed state.
//!
//! Allowed states after a crash, with `Durability::Immediate`: the state after the last
//! acknowledged step, or after the step in flight (it was not acknowledged, so it may or may
//! not have landed; it must have landed whole). With `Durability::Eventual`: any state from
//! the last durable point (creation, a `flush`) to the step in flight, never anything else
//! (in particular never part of a batch).

use std::collections::HashSet;

use super::faults::{CrashPoint, FaultyBackend, IoFault};
use super::model::{Harness, Model, Step, Workload, check_db, diff, read_model};
use super::rng::{Entropy, SplitMix, mix};
use crate::db::database::Database;
use crate::storage::store::Durability;

/// Figures from crash runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Workloads run to a crash point.
    pub runs: u64,
    /// Crash images reopened and checked (an image is checked once per crash point).
    pub images: u64,
    /// Of those, distinct images (by content hash, over all crash points).
    pub distinct_images: u64,
    /// Images whose state was the last acknowledged one.
    pub at_last_ack: u64,
    /// Images whose state included the unacknowledged step in flight (whole).
    pub with_in_flight: u64,
    /// Images of a database whose run stopped with an unacknowledged step in flight (the step
    /// had to be whole or absent), whether or not it landed.
    pub in_flight_checked: u64,
    /// Images of a database whose creation was never acknowledged (open may refuse them).
    pub unacked_create: u64,
    /// Acknowledged steps the checked images had to hold, summed over images.
    pub acked_steps_checked: u64,
    /// Images on which a write after recovery was run and checked.
    pub written_after: u64,
}

impl CrashReport {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &CrashReport) {
        self.runs += o.runs;
        self.images += o.images;
        self.distinct_images += o.distinct_images;
        self.at_last_ack += o.at_last_ack;
        self.with_in_flight += o.with_in_flight;
        self.in_flight_checked += o.in_flight_checked;
        self.unacked_create += o.unacked_create;
        self.acked_steps_checked += o.acked_steps_checked;
        self.written_after += o.written_after;
    }
}

/// What a run up to a fault left.
#[derive(Debug)]
struct Outcome {
    /// Whether `create_on` returned Ok.
    created: bool,
    /// Model index of the last acknowledged state.
    acked: usize,
    /// Model index of the last state known durable (Eventual: creation or the last flush).
    durable: usize,
    /// Model index of the state if the step in flight landed.
    in_flight: Option<usize>,
    /// Steps acknowledged.
    acked_steps: u64,
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

fn builder(durability: Durability) -> crate::db::database::DatabaseBuilder {
    Database::builder().durability(durability).cache_size(8 << 20)
}

/// Runs `w` on `backend` until it faults (or to the end). A step that returns something other
/// than what the model says, without a fault to explain it, is an error.
fn run(w: &Workload, backend: &FaultyBackend, durability: Durability) -> Result<Outcome, String> {
    let mut out = Outcome { created: false, acked: 0, durable: 0, in_flight: None, acked_steps: 0 };
    let db = match builder(durability).create_on(backend.clone()) {
        Ok(db) => db,
        Err(_) if backend.crashed() || backend.counters().faults > 0 => return Ok(out),
        Err(e) => return Err(fail("create without a fault", e)),
    };
    out.created = true;
    let mut h = Harness::new(db);
    for (i, step) in w.steps.iter().enumerate() {
        let r = h.exec(step);
        let faulted = backend.crashed() || backend.counters().faults > 0;
        match (r, w.expect_ok[i]) {
            (Ok(()), true) => {
                out.acked = i + 1;
                out.acked_steps += 1;
                if durability == Durability::Immediate || matches!(step, Step::Flush) {
                    out.durable = i + 1;
                }
            }
            (Ok(()), false) => return Err(format!("step {i} ({}) succeeded but must fail: {step:?}", step.name())),
            (Err(_), false) if !faulted => {}
            (Err(e), true) if !faulted => {
                return Err(format!("step {i} ({}) failed without a fault: {e}", step.name()));
            }
            (Err(_), _) => {
                out.in_flight = w.after(i);
                break;
            }
        }
        if faulted {
            // The fault hit an operation that still succeeded (a retried or unneeded I/O):
            // stop here all the same, the state is the acknowledged one.
            break;
        }
    }
    drop(h);
    Ok(out)
}

/// Which allowed state `got` is: `Ok(true)` the in-flight one, `Ok(false)` an acknowledged one.
fn classify(w: &Workload, o: &Outcome, got: &Model, durability: Durability) -> Result<bool, String> {
    let lo = if durability == Durability::Immediate { o.acked } else { o.durable };
    if (lo..=o.acked).any(|i| w.models[i] == *got) {
        return Ok(false);
    }
    if let Some(f) = o.in_flight
        && w.models[f] == *got
    {
        return Ok(true);
    }
    let want = &w.models[o.acked];
    Err(format!(
        "state is no allowed state (last ack {}, durable {}, in flight {:?}); vs last ack: {}",
        o.acked,
        o.durable,
        o.in_flight,
        diff(got, want)
    ))
}

/// What reopening an image after a fault showed.
enum Reopened {
    /// The database's creation was never acknowledged: the image was refused, or opened empty.
    NeverCreated,
    /// An allowed state: the reopened database, its state, and whether that state includes the
    /// unacknowledged step in flight (else it is an acknowledged one).
    Allowed { db: Database, got: Model, in_flight: bool },
}

/// Reopens an image left by a fault (`after`: what the fault was, for messages), checks it
/// (`check_db`), and classifies its state among the allowed ones. If the creation was never
/// acknowledged, the image may be refused, and if it opens it must be empty.
fn reopen(w: &Workload, o: &Outcome, image: Vec<u8>, durability: Durability, after: &str) -> Result<Reopened, String> {
    let db = match builder(Durability::Immediate).open_on(FaultyBackend::from_image(image)) {
        Ok(db) => db,
        Err(_) if !o.created => return Ok(Reopened::NeverCreated),
        Err(e) => return Err(fail(&format!("reopen after {after}"), e)),
    };
    let got = check_db(&db).map_err(|e| fail("check after reopen", e))?;
    if !o.created {
        return if got == Model::default() {
            Ok(Reopened::NeverCreated)
        } else {
            Err(format!("{after}: unacknowledged create left data"))
        };
    }
    let in_flight = classify(w, o, &got, durability)?;
    Ok(Reopened::Allowed { db, got, in_flight })
}

/// Opens an image and checks it against the allowed states; with `write_after`, also runs
/// a write on the recovered database and checks it.
fn check_image(
    w: &Workload,
    o: &Outcome,
    image: Vec<u8>,
    durability: Durability,
    write_after: bool,
    report: &mut CrashReport,
) -> Result<(), String> {
    report.images += 1;
    let (db, got, in_flight) = match reopen(w, o, image, durability, "crash")? {
        Reopened::NeverCreated => {
            report.unacked_create += 1;
            return Ok(());
        }
        Reopened::Allowed { db, got, in_flight } => (db, got, in_flight),
    };
    if in_flight {
        report.with_in_flight += 1;
    } else {
        report.at_last_ack += 1;
    }
    report.in_flight_checked += u64::from(o.in_flight.is_some());
    report.acked_steps_checked += o.acked_steps;
    if write_after {
        let mut h = Harness::new(db);
        let params = crate::sketch::params::SketchParams::minhash(8, 32, 1).map_err(|e| fail("params", e))?;
        let step = Step::Create("after-crash".into(), params);
        let want = got.apply(&step);
        let r = h.exec(&step);
        if r.is_ok() != want.is_some() {
            return Err(format!("write after recovery: {r:?}"));
        }
        let now = check_db(&h.db).map_err(|e| fail("check after the write after recovery", e))?;
        if Some(&now) != want.as_ref().or(Some(&got)) {
            return Err("write after recovery not visible".into());
        }
        report.written_after += 1;
    }
    Ok(())
}

/// The crash loop for one workload: generates `steps` steps from `seed`, runs them once
/// without faults (checking the database against the model after every step), then crashes
/// at every sync point and at `random_points` random writes, checking `images_per_point`
/// crash images of each.
pub fn crash_loop(
    seed: u64,
    steps: usize,
    images_per_point: u64,
    random_points: u64,
    durability: Durability,
) -> Result<CrashReport, String> {
    let w = Workload::generate(&mut SplitMix::new(seed), steps);
    let mut report = CrashReport::default();

    // The reference run.
    let backend = FaultyBackend::new();
    let db = builder(durability).create_on(backend.clone()).map_err(|e| fail("create", e))?;
    let mut h = Harness::new(db);
    for (i, step) in w.steps.iter().enumerate() {
        let r = h.exec(step);
        if r.is_ok() != w.expect_ok[i] {
            return Err(format!("reference run, step {i} ({}): {r:?}, model says ok={}", step.name(), w.expect_ok[i]));
        }
        let got = read_model(&h.db).map_err(|e| fail("reference run read", e))?;
        if got != w.models[i + 1] {
            return Err(format!("reference run, step {i}: {}", diff(&got, &w.models[i + 1])));
        }
    }
    check_db(&h.db).map_err(|e| fail("reference run verify", e))?;
    drop(h);
    let total = backend.counters();

    let mut rng = SplitMix::new(mix(seed, 0xC4A5));
    let mut points: Vec<CrashPoint> = (1..=total.syncs).map(CrashPoint::AtSync).collect();
    points.extend((0..random_points).map(|_| CrashPoint::AtWrite(1 + rng.below(total.writes.max(1)))));
    let mut seen = HashSet::new();
    for (pi, point) in points.into_iter().enumerate() {
        let backend = FaultyBackend::new();
        backend.set_crash(Some(point));
        let o = run(&w, &backend, durability).map_err(|e| format!("seed {seed}, crash {point:?}: {e}"))?;
        report.runs += 1;
        let mut point_seen = HashSet::new();
        for j in 0..images_per_point {
            // Image 0 drops every unsynced write, image 1 keeps them all, the others keep
            // random subsets (some torn) or in-order prefixes (see `crash_image`).
            let strategy = if j < 2 { j } else { 2 + j % 2 };
            let image = backend.crash_image(mix(mix(seed, pi as u64), j).wrapping_mul(4).wrapping_add(strategy));
            let hash = xxhash_rust::xxh3::xxh3_128(&image);
            if !point_seen.insert(hash) {
                // The same image with the same allowed states: the same check.
                continue;
            }
            seen.insert(hash);
            check_image(&w, &o, image, durability, point_seen.len() == 1, &mut report)
                .map_err(|e| format!("seed {seed}, crash {point:?}, image {j}: {e}"))?;
        }
    }
    report.distinct_images = seen.len() as u64;
    Ok(report)
}

/// Figures from an I/O-error sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoSweepReport {
    /// I/O calls of the workload (each one failed once and failed forever).
    pub call_points: u64,
    /// Writes of the workload (each one cut short half way, once and forever).
    pub byte_points: u64,
    /// Fault cases run.
    pub cases: u64,
    /// Cases in which the database returned an error.
    pub errors_returned: u64,
    /// Cases whose fault went unnoticed (the failed call was not needed or was retried).
    pub absorbed: u64,
    /// Reopens (of the file as written, and of its durable image) checked.
    pub reopens: u64,
    /// Reopened states that included the failed, unacknowledged step (whole).
    pub with_in_flight: u64,
    /// Of those, reopens of the durable image (the failure came after the commit was synced).
    pub in_flight_durable: u64,
    /// Cases finished on the reopened database (remaining steps run and checked).
    pub finished_after: u64,
}

impl IoSweepReport {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &IoSweepReport) {
        self.call_points += o.call_points;
        self.byte_points += o.byte_points;
        self.cases += o.cases;
        self.errors_returned += o.errors_returned;
        self.absorbed += o.absorbed;
        self.reopens += o.reopens;
        self.with_in_flight += o.with_in_flight;
        self.in_flight_durable += o.in_flight_durable;
        self.finished_after += o.finished_after;
    }
}

fn sweep_case(w: &Workload, fault: IoFault, report: &mut IoSweepReport) -> Result<(), String> {
    let durability = Durability::Immediate;
    let backend = FaultyBackend::new();
    backend.set_fault(Some(fault));
    let o = run(w, &backend, durability)?;
    report.cases += 1;
    if backend.counters().faults == 0 {
        return Err("the fault never fired".into());
    }
    if o.in_flight.is_some() || !o.created || o.acked < w.steps.len() {
        report.errors_returned += 1;
    } else {
        report.absorbed += 1;
    }
    // Reopen the file as the process left it, and as a power loss right now would leave it.
    let mut finish_on = None;
    for (durable, image) in [(false, backend.current_image()), (true, backend.durable_image())] {
        report.reopens += 1;
        let Reopened::Allowed { db, in_flight, .. } = reopen(w, &o, image, durability, "I/O error")? else {
            continue;
        };
        report.with_in_flight += u64::from(in_flight);
        report.in_flight_durable += u64::from(in_flight && durable);
        if finish_on.is_none() {
            finish_on = Some((db, in_flight));
        }
    }
    // Finish the workload on the recovered database: redo the failed step if it did not land,
    // then run the rest.
    if let Some((db, in_flight)) = finish_on {
        let mut h = Harness::new(db);
        let from = if in_flight { o.in_flight.unwrap_or(o.acked) } else { o.acked };
        for i in from..w.steps.len() {
            let r = h.exec(&w.steps[i]);
            if r.is_ok() != w.expect_ok[i] {
                return Err(format!("after recovery, step {i} ({}): {r:?}", w.steps[i].name()));
            }
        }
        let got = check_db(&h.db).map_err(|e| fail("check after finishing", e))?;
        if Some(&got) != w.models.last() {
            return Err(format!("after finishing: {}", w.models.last().map(|m| diff(&got, m)).unwrap_or_default()));
        }
        report.finished_after += 1;
    }
    Ok(())
}

/// The I/O-error sweep for one workload: every I/O call of the workload fails once, then
/// forever; every write is cut short half way, once and forever. After each fault the
/// database must have returned errors (never panicked), and reopening must show an allowed
/// state (`Durability::Immediate`).
pub fn io_sweep(seed: u64, steps: usize) -> Result<IoSweepReport, String> {
    let w = Workload::generate(&mut SplitMix::new(seed), steps);
    let backend = FaultyBackend::new();
    let _ = run(&w, &backend, Durability::Immediate)?;
    let total = backend.counters();
    let mut report = IoSweepReport { call_points: total.calls, byte_points: total.writes, ..Default::default() };

    let sizes = backend.write_sizes();
    for persistent in [false, true] {
        for call in 1..=total.calls {
            sweep_case(&w, IoFault::AtCall { call, persistent }, &mut report)
                .map_err(|e| format!("seed {seed}, fail call {call} (persistent {persistent}): {e}"))?;
        }
        let mut before = 0u64;
        for &len in &sizes {
            let bytes = before + len / 2;
            before += len;
            sweep_case(&w, IoFault::AfterBytes { bytes, persistent }, &mut report)
                .map_err(|e| format!("seed {seed}, fail after byte {bytes} (persistent {persistent}): {e}"))?;
        }
    }
    Ok(report)
}

/// One crash of the fuzz target `db_ops`.
#[derive(Clone, Copy, Debug)]
pub struct CrashOnce<'a> {
    /// The workload.
    pub workload: &'a Workload,
    /// Where power is lost (if the workload ends first: after a clean close).
    pub point: CrashPoint,
    /// Which crash image.
    pub image_seed: u64,
    /// The commit durability.
    pub durability: Durability,
}

/// Runs a workload to a crash and checks one crash image.
pub fn crash_once(c: &CrashOnce<'_>) -> Result<CrashReport, String> {
    let backend = FaultyBackend::new();
    backend.set_crash(Some(c.point));
    let o = run(c.workload, &backend, c.durability)?;
    backend.crash_now();
    let mut report = CrashReport { runs: 1, ..Default::default() };
    check_image(c.workload, &o, backend.crash_image(c.image_seed), c.durability, true, &mut report)?;
    Ok(report)
}

/// The data of the kill -9 test (`tests/crash_kill9.rs`) and its child process
/// (`examples/crash_child.rs`), in one place: the test recomputes what the child wrote, so the
/// two must never drift apart (a drift would show as data loss).
pub mod kill9 {
    use crate::{Sketch, SketchError, SketchParams, Sketcher, TokenSet};

    /// Records a batch inserts.
    pub const BATCH: u64 = 20;

    /// The collection the child writes.
    pub const COLLECTION: &str = "kill";

    /// The collection's sketch parameters.
    pub fn params() -> Result<SketchParams, SketchError> {
        SketchParams::minhash(16, 32, 7)
    }

    /// The sketch of record `i` of batch `b`, at `version` (1 when inserted, 2 once upserted).
    pub fn sketch(s: &Sketcher, b: u64, i: u64, version: u64) -> Result<Sketch, SketchError> {
        let base = b * 1_000_003 + i * 7919 + version * 104_729;
        s.sketch(&TokenSet::from_unsorted((0..16).map(|t| base + t * 31).collect()))
    }

    /// The collection the child writes in its exact-shingles mode (`crash_child shingles`).
    pub const SHINGLE_COLLECTION: &str = "kill_shingles";

    /// The token (shingle) set of record `i` of batch `b` at `version` in the exact-shingles
    /// mode: a window of 24 from a pool of 120 shared by all records (so pairs overlap by
    /// every amount) plus one token of its own; its sketch is `Sketcher::sketch` of this set.
    pub fn tokens(b: u64, i: u64, version: u64) -> TokenSet {
        let start = (b * 37 + i * 11 + version * 5) % 96;
        let own = 1_000_000 + b * 1_000 + i * 10 + version;
        TokenSet::from_unsorted((start..start + 24).chain([own]).collect())
    }
}
