//! Test hooks for SimHash tables stored as runs.

use crate::db::collection::Collection;
use crate::db::database::Database;
use crate::error::Result;
use crate::index::{IndexDef, IndexSpec};
use crate::storage::index_tables::{BucketKey, BytesRead};

/// A SimHash run as the index definition lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimhashRunInfo {
    /// Run number (the key field's bits above the table number).
    pub id: u32,
    /// The run's first row.
    pub first_row: u64,
    /// Live rows it holds.
    pub rows: u64,
}

/// The collection's SimHash runs, oldest first (empty without SimHash tables).
pub fn simhash_runs(collection: &Collection, db: &Database) -> Result<Vec<SimhashRunInfo>> {
    let snap = db.store().snapshot()?;
    let def = IndexDef::load(&snap, collection.info())?;
    Ok(match def.as_deref().map(|d| &d.spec) {
        Some(IndexSpec::Simhash { runs, .. }) => {
            runs.iter().map(|r| SimhashRunInfo { id: r.id, first_row: r.first_row, rows: r.rows }).collect()
        }
        _ => Vec::new(),
    })
}

/// Rewrites the collection's SimHash index definition as builds before runs stored it (wire
/// variant 0), which is only possible while the tables are held in run 0 alone: its keys are
/// then exactly those builds' keys. Returns whether it was rewritten.
pub fn store_simhash_def_before_runs(collection: &Collection, db: &Database) -> Result<bool> {
    let info = collection.info();
    db.store().write_index(|txn| {
        let Some(def) = IndexDef::load_in(txn, info)? else { return Ok(false) };
        let Some(bytes) = def.encode_before_simhash_runs(info.def.id)? else { return Ok(false) };
        txn.index_defs()?.insert(info.def.id, &bytes, "write index definition")?;
        Ok(true)
    })
}

/// Plants an inconsistency the storage engine's checksums cannot see: moves the collection's first stored
/// SimHash bucket to run number `run` (its table and bucket unchanged). Returns whether a
/// bucket was moved.
pub fn move_first_simhash_bucket(collection: &Collection, db: &Database, run: u32) -> Result<bool> {
    let id = collection.info().def.id;
    db.store().write_index(|txn| {
        let mut t = txn.simhash_buckets()?;
        Ok(match first_bucket(&t, id)? {
            None => false,
            Some(((_, field, bucket), value)) => {
                t.remove((id, field, bucket), "remove")?;
                let moved = run << 8 | (field & 0xff);
                t.insert((id, moved, bucket), &value, "insert")?;
                true
            }
        })
    })
}

/// The collection's first stored SimHash bucket, key and value.
pub(crate) fn first_bucket(t: &impl BytesRead<BucketKey>, id: u32) -> Result<Option<(BucketKey, Vec<u8>)>> {
    Ok(t.range((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), "scan")?
        .next()
        .transpose()?
        .map(|(k, v)| (k, v.value().to_vec())))
}

#[cfg(test)]
mod tests {
    use crate::index::SIMHASH_TEST_RUN_IDS as TEST_RUN_IDS;
    use crate::{CollectionConfig, Database, IndexConfig, SimHash, Sketch, SketchParams, admin, testing};

    /// When run numbers run out, every run merges into run 0 and numbering restarts: the
    /// numbers stay below the limit, and probes still equal brute force over the records.
    #[test]
    fn used_up_run_numbers_restart_after_merging_into_run_0() {
        TEST_RUN_IDS.with(|l| l.set(6));
        let dir = tempfile::tempdir().expect("dir");
        let db = Database::create(dir.path().join("db")).expect("create");
        let params = SketchParams::simhash(64, 7).expect("params");
        let cfg = CollectionConfig::new(params).with_index(IndexConfig::SimhashTables { radius: 3 });
        let c = db.create_collection("fp", cfg).expect("collection");
        let (mut x, mut last, mut restarted) = (0x1234_5678_9abc_def0u64, 0u64, false);
        for i in 0..40u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let fp = if i % 3 == 0 { x } else { last ^ (1 << (i % 64)) };
            last = fp;
            let sketch = Sketch::SimHash(SimHash::from_parts(params, u128::from(fp)).expect("fp"));
            c.insert(format!("{i}"), &sketch).expect("insert");
            if i % 5 == 4 {
                c.delete(format!("{}", i - 2)).expect("delete");
            }
            let runs = testing::simhash::simhash_runs(&c, &db).expect("runs");
            assert!(runs.iter().all(|r| r.id < 6), "{runs:?}");
            restarted |= i > 8 && runs.first().is_some_and(|r| r.id == 0);
        }
        TEST_RUN_IDS.with(|l| l.set(0));
        assert!(restarted, "the numbers ran out and restarted");
        let report = admin::verify(&db).expect("verify");
        assert!(report.is_ok(), "{:?}", report.problems);
        let stored: Vec<(u64, u128)> = c
            .scan()
            .expect("scan")
            .map(|r| {
                let r = r.expect("record");
                let Sketch::SimHash(s) = r.sketch else { panic!("kind") };
                (r.row_id, s.value())
            })
            .collect();
        for &(_, q) in &stored {
            let mut want: Vec<(u64, u32)> =
                stored.iter().map(|&(row, v)| (row, (v ^ q).count_ones())).filter(|e| e.1 <= 3).collect();
            want.sort_unstable_by_key(|&(row, d)| (d, row));
            assert_eq!(testing::simhash_within(&c, &db, q, 3).expect("probe"), want);
        }
    }
}
