//! The child processes of `tests/crash_kill9.rs` and `tests/multi_process_readers.rs`.
//!
//! **Writer** (`crash_child <path> [max batches]`): opens (or creates) the database at the
//! path given, then commits batches (forever, or up to `max`), printing `ACK <batch>` on stdout
//! (flushed) after each commit returns, i.e. once it is durable (`Durability::Immediate`).
//! Batch `b` inserts keys `b<b>-000` .. `b<b>-<BATCH-1>` and upserts key `b<b-1>-000` to a
//! second version, so after any crash the collection holds `BATCH * n` records for the first
//! `n` batches, whole. The next batch is derived from the database itself.
//!
//! **Reader** (`crash_child read <path>`): one read-only handle, kept open while writers come,
//! commit, are killed and are replaced. Each round reads one snapshot and checks that it holds
//! whole batches only, never fewer than the round before, with the newest batch's records
//! exactly as written; then runs a top-k query for one of them, the statistics and (every
//! fourth round) `admin::verify`, and prints `SEEN <batches>`. A wrong answer prints
//! `FAIL <what>` and exits 2; a typed error prints `ERR <error>` and the reader goes on. Once
//! `<path>.stop` exists it runs one last round and prints `DONE <rounds> <errors>`.
//!
//! **Exact-shingles writer** (`crash_child shingles <path> [max batches]`): the writer's
//! batches into a collection that keeps exact shingle sets (`kill9::SHINGLE_COLLECTION`),
//! each record written with its token set `kill9::tokens(b, i, version)`.
//!
//! `cargo run --example crash_child -- <path> [max batches]` / `-- read <path>` /
//! `-- shingles <path> [max batches]`

use std::io::Write;
use std::path::Path;

use sketchdb::testing::crash::kill9::{BATCH, COLLECTION, SHINGLE_COLLECTION, params, sketch, tokens};
use sketchdb::{Batch, CollectionConfig, Database, Query, Sketcher};

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next().expect("usage: crash_child <path> [max batches] | crash_child read <path>");
    if first == "read" {
        read(Path::new(&args.next().expect("usage: crash_child read <path>")));
    } else if first == "shingles" {
        let path = args.next().expect("usage: crash_child shingles <path> [max batches]");
        write(&path, args.next().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX), true);
    } else {
        write(&first, args.next().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX), false);
    }
}

fn write(path: &str, max: u64, shingles: bool) {
    let db = if Path::new(path).exists() {
        Database::open(path).expect("open")
    } else {
        Database::create(path).expect("create")
    };
    let params = params().expect("params");
    let (name, config) = match shingles {
        false => (COLLECTION, CollectionConfig::new(params)),
        true => (SHINGLE_COLLECTION, CollectionConfig::new(params).with_exact_shingles(true)),
    };
    let c = match db.collection(name) {
        Ok(c) => c,
        Err(_) => db.create_collection(name, config).expect("create collection"),
    };
    let s = Sketcher::new(params).expect("sketcher");
    let len = c.len().expect("len");
    assert!(len % BATCH == 0, "partial batch visible: {len} records");
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY {}", len / BATCH).expect("stdout");
    out.flush().expect("flush");
    for b in len / BATCH..max {
        let mut batch = Batch::new();
        for i in 0..BATCH {
            let key = format!("b{b:06}-{i:03}");
            if shingles {
                let set = tokens(b, i, 1);
                batch.insert_with_shingles(key, s.sketch(&set).expect("sketch"), &set);
            } else {
                batch.insert(key, sketch(&s, b, i, 1).expect("sketch"));
            }
        }
        if b > 0 {
            let key = format!("b{:06}-000", b - 1);
            if shingles {
                let set = tokens(b - 1, 0, 2);
                batch.upsert_with_shingles(key, s.sketch(&set).expect("sketch"), &set);
            } else {
                batch.upsert(key, sketch(&s, b - 1, 0, 2).expect("sketch"));
            }
        }
        c.apply(&batch).expect("commit");
        writeln!(out, "ACK {b}").expect("stdout");
        out.flush().expect("flush");
    }
}

/// What one reader round found wrong: `Fail` is a wrong answer, `Err` a typed error.
enum Bad {
    Fail(String),
    Err(sketchdb::Error),
}

impl From<sketchdb::Error> for Bad {
    fn from(e: sketchdb::Error) -> Self {
        Bad::Err(e)
    }
}

/// One round: the number of whole batches in one snapshot, checked.
fn round(db: &Database, s: &Sketcher, seen: u64, verify: bool) -> Result<u64, Bad> {
    let c = match db.collection(COLLECTION) {
        Ok(c) => c,
        // The first writer has not created the collection yet.
        Err(sketchdb::Error::Storage(sketchdb::StorageError::UnknownCollection { .. })) if seen == 0 => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let snap = c.snapshot()?;
    let live = snap.stats()?.live;
    if live % BATCH != 0 {
        return Err(Bad::Fail(format!("a partial batch is visible: {live} records")));
    }
    let n = live / BATCH;
    if n < seen {
        return Err(Bad::Fail(format!("{n} batches after {seen} were seen")));
    }
    if n > 0 {
        let b = n - 1;
        for i in 0..BATCH {
            let key = format!("b{b:06}-{i:03}");
            let want = sketch(s, b, i, 1).map_err(|e| Bad::Err(e.into()))?;
            match snap.get(&key)? {
                Some(r) if r.sketch == want => {}
                Some(_) => return Err(Bad::Fail(format!("{key} has the wrong sketch"))),
                None => return Err(Bad::Fail(format!("{key} is missing from a snapshot of {n} batches"))),
            }
        }
        let probe = sketch(s, b, 1, 1).map_err(|e| Bad::Err(e.into()))?;
        let hits = c.query(&Query::top_k(probe, 1))?.hits;
        // The query's own snapshot may be newer, never older: batch b is in it.
        if hits.first().map(|h| h.key.as_slice()) != Some(format!("b{b:06}-001").as_bytes()) {
            return Err(Bad::Fail(format!("top-1 of b{b:06}-001 is not itself")));
        }
    }
    sketchdb::admin::stats(db)?;
    if verify {
        let report = sketchdb::admin::verify(db)?;
        if !report.is_ok() {
            return Err(Bad::Fail(format!("verify: {:?}", report.problems)));
        }
    }
    Ok(n)
}

fn read(path: &Path) {
    let mut stop = path.as_os_str().to_os_string();
    stop.push(".stop");
    let stop = std::path::PathBuf::from(stop);
    let db = Database::open_read_only(path).expect("open read-only");
    let s = Sketcher::new(params().expect("params")).expect("sketcher");
    let mut out = std::io::stdout().lock();
    let (mut seen, mut rounds, mut errors) = (0u64, 0u64, 0u64);
    loop {
        let last = stop.exists();
        match round(&db, &s, seen, rounds % 4 == 0 || last) {
            Ok(n) => {
                seen = n;
                writeln!(out, "SEEN {n}").expect("stdout");
            }
            Err(Bad::Err(e)) => {
                errors += 1;
                writeln!(out, "ERR {e}").expect("stdout");
            }
            Err(Bad::Fail(what)) => {
                writeln!(out, "FAIL {what}").expect("stdout");
                out.flush().expect("flush");
                std::process::exit(2);
            }
        }
        rounds += 1;
        if last {
            break;
        }
    }
    writeln!(out, "DONE {rounds} {errors}").expect("stdout");
    out.flush().expect("flush");
}
