//! Loading benchmark inputs (../shared/bench formats, read as they are) and loading them into
//! a database: sets files parsed and sketched in chunks, durable batches, bulk index builds.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sketchdb::{
    Batch, Collection, CollectionConfig, IndexConfig, IndexSummary, Sketch, SketchParams, Sketcher, TokenSet,
};

use crate::error::CliError;
use crate::input::{JsonlReader, Payload};

/// The sets of a `sets-<n>.jsonl` file (the first `limit`), passed to `each` in file order
/// in chunks of at most `chunk` (at least 1), so a caller that reduces each chunk (to
/// signatures, say) never holds every parsed set at once. No set at all is an input error.
pub fn for_each_set_chunk(
    path: &Path,
    limit: Option<usize>,
    chunk: usize,
    mut each: impl FnMut(Vec<(String, TokenSet)>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let chunk = chunk.max(1);
    let (mut reader, mut seen, mut part) = (JsonlReader::open(path)?, 0usize, Vec::new());
    while limit.is_none_or(|l| seen < l) {
        let Some(rec) = reader.next() else { break };
        let rec = rec?;
        let Payload::Tokens(t) = rec.payload else {
            return Err(CliError::Input(format!("{}: record `{}` has no `tokens`", rec.origin, rec.key)));
        };
        part.push((rec.key, TokenSet::from_unsorted(t)));
        seen += 1;
        if part.len() == chunk {
            each(std::mem::take(&mut part))?;
        }
    }
    if seen == 0 {
        return Err(CliError::Input(match limit {
            Some(0) => format!("{}: --limit 0 selects no sets", path.display()),
            _ => format!("no sets in {}", path.display()),
        }));
    }
    if !part.is_empty() {
        each(part)?;
    }
    Ok(())
}

/// Every set of a `sets-<n>.jsonl` file (the first `limit`), as (key, tokens), in file order.
pub fn load_sets(path: &Path, limit: Option<usize>) -> Result<Vec<(String, TokenSet)>, CliError> {
    let mut out = Vec::new();
    for_each_set_chunk(path, limit, usize::MAX, |part| {
        out.extend(part);
        Ok(())
    })?;
    Ok(out)
}

/// The first of the items loaded from `path`, or an error naming the file.
pub fn first_of<'a, T>(items: &'a [T], what: &str, path: &Path) -> Result<&'a T, CliError> {
    items.first().ok_or_else(|| CliError::Input(format!("no {what} in {}", path.display())))
}

pub fn workdir(dir: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>), CliError> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| CliError::io(d, e))?;
            Ok((d.to_path_buf(), None))
        }
        None => {
            let t = tempfile::tempdir().map_err(|e| CliError::Io(format!("temporary directory: {e}")))?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

/// The parameters a workload's kind names, in the kind's default hash family (what a user's
/// `create --kind KIND` gets).
pub fn params_for(kind: &str) -> Result<SketchParams, CliError> {
    use sketchdb::SketchKind;
    use sketchdb::recipes::default_params;
    Ok(match kind {
        "minhash" => default_params(SketchKind::MinHash, 128, Some(32), 1)?,
        "bbit" => default_params(SketchKind::BBitMinHash, 512, Some(8), 1)?,
        "oph" => SketchParams::oph(128, 32, 1)?,
        other => return Err(CliError::Usage(format!("unknown kind `{other}` (minhash, bbit or oph)"))),
    })
}

/// Durable batches of the dedup workload's load (and the default of `bench lsh --batch`).
pub const DEFAULT_BATCH: usize = 10_000;

/// How `bench lsh` and `bench hamming-query` load their data.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Without the index, then the index built in one transaction.
    pub bulk: bool,
    /// Signatures per durable batch (at least 1).
    pub batch: usize,
}

/// Sets the benchmarks parse and sketch at a time ([`sketch_sets`]).
pub const SKETCH_CHUNK: usize = 10_000;

/// The keys and sketches under `sketcher` of the sets of `path` (the first `limit`), parsed
/// and sketched `chunk` sets at a time: a benchmark that loads a database holds what it inserts,
/// never every parsed token set (sets-1m's are about 3 GB; the heap a whole-file parse
/// leaves behind slows the durable load that follows, see `benches/MEASUREMENTS.md`). A set
/// that cannot be sketched is an input error naming its key. Also returns the seconds spent
/// sketching (the rest of the call is parsing).
pub fn sketch_sets(
    path: &Path,
    limit: Option<usize>,
    sketcher: &Sketcher,
    chunk: usize,
) -> Result<(Vec<String>, Vec<Sketch>, f64), CliError> {
    let (mut keys, mut sketches, mut sketch_s) = (Vec::new(), Vec::new(), 0.0);
    for_each_set_chunk(path, limit, chunk, |part| {
        let at = Instant::now();
        let (part_keys, token_sets): (Vec<String>, Vec<TokenSet>) = part.into_iter().unzip();
        for (key, s) in part_keys.iter().zip(sketcher.sketch_batch(&token_sets)) {
            sketches.push(s.map_err(|e| CliError::Input(format!("set `{key}`: {e}")))?);
        }
        keys.extend(part_keys);
        sketch_s += at.elapsed().as_secs_f64();
        Ok(())
    })?;
    Ok((keys, sketches, sketch_s))
}

/// Inserts `sketches` under `keys` in durable batches of `size`.
pub fn load_batches(
    coll: &Collection,
    keys: &[String],
    sketches: impl IntoIterator<Item = Sketch>,
    size: usize,
) -> Result<(), CliError> {
    let size = size.max(1);
    let mut batch = Batch::with_capacity(size);
    for (key, sketch) in keys.iter().zip(sketches) {
        batch.insert(key, sketch);
        if batch.len() == size {
            coll.apply(&batch)?;
            batch = Batch::with_capacity(size);
        }
    }
    if !batch.is_empty() {
        coll.apply(&batch)?;
    }
    Ok(())
}

/// The collection of a load: with `index` maintained batch by batch, or without it for a
/// bulk load (`bulk`; then built by [`bulk_index`]).
pub fn load_config(params: SketchParams, index: IndexConfig, bulk: bool) -> CollectionConfig {
    let config = CollectionConfig::new(params);
    if bulk { config } else { config.with_index(index) }
}

/// After a bulk load (`bulk`), builds `index` in one transaction and returns its seconds;
/// 0 otherwise (the index was maintained while loading).
pub fn bulk_index(bulk: bool, coll: &mut Collection, index: IndexConfig) -> Result<f64, CliError> {
    if !bulk {
        return Ok(0.0);
    }
    let at = Instant::now();
    coll.rebuild_index(index)?;
    Ok(at.elapsed().as_secs_f64())
}

/// The runs of the collection's LSH index or SimHash tables, as text ("no" without one).
pub fn index_runs(coll: &Collection) -> Result<String, CliError> {
    Ok(match coll.stats()?.index {
        Some(IndexSummary::Lsh { runs, .. } | IndexSummary::SimhashTables { runs, .. }) => runs.to_string(),
        _ => "no".into(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// 25 sets `s0`..`s24`, set i holding tokens i..i + 5 (set 13 is empty when `empty13`).
    fn sets_file(dir: &Path, empty13: bool) -> PathBuf {
        let lines: Vec<String> = (0..25u64)
            .map(|i| {
                let tokens: Vec<u64> = if empty13 && i == 13 { Vec::new() } else { (i..i + 5).collect() };
                json!({"key": format!("s{i}"), "tokens": tokens}).to_string()
            })
            .collect();
        let path = dir.join("sets.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    #[test]
    fn chunked_sketches_stay_with_their_keys_across_chunk_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = sets_file(dir.path(), false);
        let sketcher = Sketcher::new(params_for("bbit").unwrap()).unwrap();
        for (chunk, limit, n) in
            [(7, None, 25), (25, None, 25), (1, Some(3), 3), (10, Some(12), 12), (100, Some(40), 25)]
        {
            let (keys, sketches, _) = sketch_sets(&path, limit, &sketcher, chunk).unwrap();
            let want: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
            assert_eq!(keys, want, "chunk {chunk}, limit {limit:?}");
            assert_eq!(sketches.len(), n);
            for (i, s) in sketches.iter().enumerate() {
                let alone = sketcher.sketch(&TokenSet::from_unsorted((i as u64..i as u64 + 5).collect())).unwrap();
                assert_eq!(*s, alone, "set {i}, chunk {chunk}");
            }
        }
    }

    #[test]
    fn a_set_that_cannot_be_sketched_is_named_in_any_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let path = sets_file(dir.path(), true);
        // Every kind refuses an empty set (`SketchError::EmptySet`).
        let sketcher = Sketcher::new(params_for("bbit").unwrap()).unwrap();
        for chunk in [1, 7, 13, 14, 100] {
            let err = sketch_sets(&path, None, &sketcher, chunk).unwrap_err().to_string();
            assert!(err.contains("set `s13`"), "chunk {chunk}: {err}");
        }
    }
}
