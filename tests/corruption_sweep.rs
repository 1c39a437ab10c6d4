//! Corruption sweep: in a small database (four collections, one per sketch kind) every 4 KiB
//! page of the file in turn gets a bit flipped (eight times, at seeded offsets), is zeroed, or has
//! the file truncated at its start (and half way into it). Each damaged file is opened,
//! verified and read through every path: errors must be clear, nothing may panic, no read may
//! return a wrong signature, and any damage a read runs into must be reported by verify.

use std::panic::{AssertUnwindSafe, catch_unwind};

use sketchdb::testing::model::{Harness, Model, Step, Workload};
use sketchdb::testing::rng::{Entropy, SplitMix};
use sketchdb::testing::{FaultyBackend, create_on, open_on};
use sketchdb::{Database, Error};

const PAGE: usize = 4096;

#[derive(Debug, Default)]
struct Tally {
    images: u64,
    refused_at_open: u64,
    opened: u64,
    reads: u64,
    read_errors: u64,
    silent_misses: u64,
    engine_panics_contained: u64,
    verify_flagged: u64,
    verify_errors: u64,
    unaffected: u64,
    panics: Vec<String>,
    wrong: Vec<String>,
}

/// A small database with every sketch kind, written by a seeded workload.
fn build() -> (Vec<u8>, Model) {
    let mut rng = SplitMix::new(77);
    let mut w = Workload::generate(&mut rng, 0);
    let params = [
        sketchdb::SketchParams::minhash(16, 32, 1).unwrap(),
        sketchdb::SketchParams::bbit(64, 2, 1).unwrap(),
        sketchdb::SketchParams::oph(32, 16, 1).unwrap(),
        sketchdb::SketchParams::simhash(64, 1).unwrap(),
    ];
    for (i, p) in params.iter().enumerate() {
        w.steps.push(Step::Create(format!("c{i}"), *p));
    }
    let backend = FaultyBackend::new();
    let db = create_on(Database::builder(), backend.clone()).unwrap();
    let mut h = Harness::new(db);
    let mut model = Model::default();
    for s in &w.steps {
        h.exec(s).unwrap();
        model = model.apply(s).unwrap();
    }
    for (i, p) in params.iter().enumerate() {
        let c = h.db.collection(&format!("c{i}")).unwrap();
        let sk = sketchdb::Sketcher::new(*p).unwrap();
        let mut b = sketchdb::Batch::new();
        for k in 0..40u64 {
            let t = sketchdb::TokenSet::from_unsorted((0..1 + rng.below(30)).map(|x| x * 13 + k).collect());
            b.insert(format!("k{k}"), sk.sketch(&t).unwrap());
        }
        c.apply(&b).unwrap();
        for k in (0..40u64).step_by(7) {
            c.delete(format!("k{k}")).unwrap();
        }
    }
    let got = sketchdb::testing::model::check_db(&h.db).unwrap();
    drop(h);
    (backend.current_image(), got)
}

fn clear(e: &Error) -> bool {
    !e.to_string().trim().is_empty()
}

fn contained(e: &Error) -> bool {
    matches!(e, Error::Storage(sketchdb::StorageError::EnginePanic { .. }))
}

fn probe(image: Vec<u8>, model: &Model, what: &str, t: &mut Tally) {
    t.images += 1;
    let db = match open_on(Database::builder(), FaultyBackend::from_image(image)) {
        Ok(db) => db,
        Err(e) => {
            assert!(clear(&e), "{what}: unclear error {e:?}");
            t.refused_at_open += 1;
            return;
        }
    };
    t.opened += 1;
    let mut damage_seen = false;
    for (name, mc) in &model.collections {
        let c = match db.collection(name) {
            Ok(c) => c,
            Err(e) => {
                assert!(clear(&e));
                t.read_errors += 1;
                damage_seen = true;
                continue;
            }
        };
        for (key, sketch) in &mc.records {
            t.reads += 1;
            match c.get(key) {
                Ok(Some(r)) if &r.sketch == sketch && &r.key == key => {}
                Ok(Some(r)) => t.wrong.push(format!("{what}: get({key:?}) returned {:?}", r.sketch)),
                Ok(None) => {
                    t.silent_misses += 1;
                    damage_seen = true;
                }
                Err(e) => {
                    assert!(clear(&e));
                    t.read_errors += 1;
                    t.engine_panics_contained += u64::from(contained(&e));
                    damage_seen = true;
                }
            }
        }
        match c.scan() {
            Ok(scan) => {
                let mut n = 0;
                for r in scan {
                    t.reads += 1;
                    match r {
                        Ok(r) if mc.records.get(&r.key) == Some(&r.sketch) => n += 1,
                        Ok(r) => t.wrong.push(format!("{what}: scan returned {:?} for {:?}", r.sketch, r.key)),
                        Err(e) => {
                            assert!(clear(&e));
                            t.read_errors += 1;
                            t.engine_panics_contained += u64::from(contained(&e));
                            damage_seen = true;
                        }
                    }
                }
                if n != mc.records.len() {
                    damage_seen = true;
                }
            }
            Err(e) => {
                assert!(clear(&e));
                t.read_errors += 1;
                damage_seen = true;
            }
        }
    }
    match sketchdb::admin::verify(&db) {
        Ok(report) if report.is_ok() => {
            if damage_seen {
                t.wrong.push(format!("{what}: reads hit damage that verify does not report"));
            } else {
                t.unaffected += 1;
            }
        }
        Ok(report) => {
            assert!(report.problems.iter().all(|p| !p.to_string().is_empty()));
            t.verify_flagged += 1;
        }
        Err(e) => {
            assert!(clear(&e));
            eprintln!("{what}: verify could not run: {e}");
            t.verify_errors += 1;
        }
    }
}

#[test]
fn every_page_corrupted_in_turn_is_reported_never_misread() {
    // redb's panics on damaged pages are contained (StorageError::EnginePanic) and counted;
    // keep their messages out of the test output, and print every other panic.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.location().is_some_and(|l| l.file().contains("redb-")) {
            default_hook(info);
        }
    }));
    let (image, model) = build();
    let pages = image.len().div_ceil(PAGE);
    let mut t = Tally::default();
    let mut rng = SplitMix::new(5);
    for p in 0..pages {
        let start = p * PAGE;
        let end = (start + PAGE).min(image.len());
        let mut cases: Vec<(String, Vec<u8>)> = vec![];
        for flip in 0..8 {
            let mut img = image.clone();
            let at = start + rng.below((end - start) as u64) as usize;
            img[at] ^= 1 << rng.below(8);
            cases.push((format!("page {p}: bit flip {flip} at byte {at}"), img));
        }
        let mut img = image.clone();
        img[start..end].fill(0);
        cases.push((format!("page {p}: zeroed"), img));
        cases.push((format!("page {p}: truncated at its start"), image[..start].to_vec()));
        cases.push((format!("page {p}: truncated half way"), image[..start + (end - start) / 2].to_vec()));
        for (what, img) in cases {
            let r = catch_unwind(AssertUnwindSafe(|| probe(img, &model, &what, &mut t)));
            if let Err(e) = r {
                let msg = e.downcast_ref::<String>().cloned().or(e.downcast_ref::<&str>().map(|s| s.to_string()));
                t.panics.push(format!("{what}: {msg:?}"));
            }
        }
    }
    eprintln!(
        "corruption sweep: {} bytes, {pages} pages x 11 damages = {} images: {} refused at open, {} opened; \
         {} reads: {} clear errors ({} of them contained redb panics), {} silent misses (each caught by verify); verify flagged {}, \
         errored {}, {} unaffected (damage in free or slack space: every read right, verify clean); {} wrong signatures, {} panics",
        image.len(),
        t.images,
        t.refused_at_open,
        t.opened,
        t.reads,
        t.read_errors,
        t.engine_panics_contained,
        t.silent_misses,
        t.verify_flagged,
        t.verify_errors,
        t.unaffected,
        t.wrong.len(),
        t.panics.len()
    );
    assert!(t.panics.is_empty(), "{} panics, first: {:?}", t.panics.len(), t.panics.first());
    assert!(t.wrong.is_empty(), "{} wrong answers, first: {:?}", t.wrong.len(), t.wrong.first());
    // Non-vacuity: pages were damaged, and some damage was detected.
    assert!(pages > 0 && t.images > 0, "no page was damaged ({} bytes)", image.len());
    assert!(t.verify_flagged + t.refused_at_open > 0, "no damage was detected: verify flagged none, open refused none");
}

/// Text a panic prints through Rust's default hook.
const PANIC_TEXT: [&str; 4] = ["panicked at", "entered unreachable code", "RUST_BACKTRACE", "thread 'main'"];

/// The same damages through the command line: every read command, in one shell per damaged
/// file, ends with a typed error line or an answer; no panic text ever reaches stderr (the
/// storage engine's panics are caught, and the panic hook keeps their text off the terminal),
/// and no run exits with a panic's code. With `--verbose` the detail is shown.
#[cfg(feature = "cli")]
#[test]
fn no_panic_text_reaches_the_terminal_from_a_damaged_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let (image, _) = build();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    let script = "list\nstats\nverify\nquery c0 k1\nquery c1 k2 --top-k 3\nquery c3 k3\nestimate c2 k1 k2\nexport c1\n";
    let run = |img: &[u8], verbose: bool| {
        std::fs::write(&path, img).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sketchdb"));
        cmd.arg(&path).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
        if verbose {
            cmd.arg("--verbose");
        }
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let pages = image.len().div_ceil(PAGE);
    let mut rng = SplitMix::new(11);
    let (mut images, mut failed, mut engine) = (0, 0, vec![]);
    for p in 0..pages {
        let (start, end) = (p * PAGE, ((p + 1) * PAGE).min(image.len()));
        let mut cases = vec![image[..start].to_vec()];
        let mut zeroed = image.clone();
        zeroed[start..end].fill(0);
        cases.push(zeroed);
        for _ in 0..2 {
            let mut img = image.clone();
            img[start + rng.below((end - start) as u64) as usize] ^= 1 << rng.below(8);
            cases.push(img);
        }
        for img in cases {
            images += 1;
            let (code, err) = run(&img, false);
            assert!(matches!(code, Some(0 | 1)), "page {p}: exit {code:?}: {err}");
            for text in PANIC_TEXT {
                assert!(!err.contains(text), "page {p}: panic text on stderr: {err}");
            }
            failed += u64::from(code == Some(1));
            if err.contains("the storage engine failed") {
                engine.push(img);
            }
        }
    }
    eprintln!(
        "cli corruption sweep: {images} damaged files, {failed} with errors, {} where the storage engine panicked \
         (caught, no panic text shown)",
        engine.len()
    );
    assert!(failed > 0, "no damage was reported");
    // --verbose shows the caught panic's detail on stderr.
    if let Some(img) = engine.first() {
        let (_, err) = run(img, true);
        assert!(err.contains("sketchdb: detail:"), "{err}");
    }
}
