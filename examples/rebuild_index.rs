//! Times a full index rebuild of an existing collection (the bulk build path).
//!
//! Run: `cargo run --release --example rebuild_index -- DB COLLECTION (lsh T | simhash K)`

use std::time::Instant;

use sketchdb::{Database, IndexConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (db, coll, kind, arg) = match &args[..] {
        [_, db, coll, kind, arg] => (db, coll, kind.as_str(), arg.parse::<f64>()?),
        _ => return Err("usage: rebuild_index DB COLLECTION (lsh T | simhash K)".into()),
    };
    let index = match kind {
        "lsh" => IndexConfig::Lsh { threshold: arg, bands: None, rows: None },
        "simhash" => IndexConfig::SimhashTables { radius: arg as u32 },
        _ => return Err(format!("unknown index kind {kind}").into()),
    };
    let db = Database::open(db)?;
    let mut c = db.collection(coll)?;
    let t = Instant::now();
    c.rebuild_index(index)?;
    let s = t.elapsed().as_secs_f64();
    let n = c.stats()?.live;
    println!("rebuilt {kind} index over {n} rows in {s:.2} s = {:.0} rows/s", n as f64 / s);
    Ok(())
}
