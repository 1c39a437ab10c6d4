//! The child process of `tests/crash_kill9.rs`: opens (or creates) the database at the path
//! given, then commits batches forever, printing `ACK <batch>` on stdout (flushed) after each
//! commit returns, i.e. once it is durable (`Durability::Immediate`).
//!
//! Batch `b` inserts keys `b<b>-000` .. `b<b>-<BATCH-1>` and upserts key `b<b-1>-000` to a
//! second version, so after any crash the collection holds `BATCH * n` records for the first
//! `n` batches, whole. The next batch is derived from the database itself.
//!
//! `cargo run --example crash_child -- <path> [max batches]`

use std::io::Write;

use sketchdb::testing::crash::kill9::{BATCH, COLLECTION, params, sketch};
use sketchdb::{Batch, CollectionConfig, Database, Sketcher};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: crash_child <path> [max batches]");
    let max: u64 = args.next().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
    let db = if std::path::Path::new(&path).exists() {
        Database::open(&path).expect("open")
    } else {
        Database::create(&path).expect("create")
    };
    let params = params().expect("params");
    let c = match db.collection(COLLECTION) {
        Ok(c) => c,
        Err(_) => db.create_collection(COLLECTION, CollectionConfig::new(params)).expect("create collection"),
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
            batch.insert(format!("b{b:06}-{i:03}"), sketch(&s, b, i, 1).expect("sketch"));
        }
        if b > 0 {
            batch.upsert(format!("b{:06}-000", b - 1), sketch(&s, b - 1, 0, 2).expect("sketch"));
        }
        c.apply(&batch).expect("commit");
        writeln!(out, "ACK {b}").expect("stdout");
        out.flush().expect("flush");
    }
}
