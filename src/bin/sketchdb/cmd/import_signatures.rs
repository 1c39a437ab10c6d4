//! `import` of a signature Parquet (`sketchdb.spark dedup`'s `signatures/`): one bulk load
//! that builds the collection and its LSH index.
//!
//! The configuration comes from the files' `sketchdb.signatures` metadata and the flags (a
//! flag that contradicts the metadata is an error). Every row is read and decoded once before
//! anything is written, so a bad file leaves nothing behind. A new collection is filled
//! without an index and its index is built once from all rows at the end (one pass over the
//! pages instead of one index update per batch); if anything fails on the way, the new
//! collection is dropped again. Into an existing collection (a second import, or `--upsert`)
//! the records go batch by batch with the index kept up to date, and keys already stored are
//! skipped or, with `--upsert`, replaced.

use serde_json::json;
use sketchdb::{IndexConfig, Sketch};

use crate::cmd::admin::index_text;
use crate::error::CliError;
use crate::load::import::{ImportArgs, Importer, check_same};
use crate::load::signatures::SignatureFiles;
use crate::output::summary;
use crate::session::Session;

/// Counts of one import.
struct Counts {
    rows: u64,
    inserted: u64,
    replaced: u64,
    skipped: u64,
}

pub fn import(session: &mut Session, args: &ImportArgs) -> Result<(), CliError> {
    let input = args.input.as_path();
    let files = SignatureFiles::find(input)?;
    let stated = files.spec()?;
    let source = if stated.is_some() { "the file's metadata" } else { "the flags" };
    let what = format!("{}'s `sketchdb.signatures` metadata", input.display());
    let spec = stated.unwrap_or_default().merge(&args.spec, &what).map_err(CliError::Usage)?;
    let config = spec.config().map_err(|e| CliError::Input(format!("{}: {e}", input.display())))?;
    let name = args.into.clone().ok_or_else(|| {
        CliError::Usage(format!("{}: a signature Parquet names no collection; pass --into NAME", input.display()))
    })?;
    let params = config.params;
    let mut rows = 0u64;
    files.for_each(|_, bytes| {
        sketchdb::signature::decode(&params, bytes).map_err(|e| CliError::Input(e.to_string()))?;
        rows += 1;
        Ok(())
    })?;
    session.create_missing = true;
    let db = session.db()?;
    let exists = db.collections()?.iter().any(|c| c.name() == name);
    let start = std::time::Instant::now();
    let counts = if exists {
        let coll = db.collection(&name)?;
        check_same(coll.config(), &config).map_err(|e| CliError::Input(format!("collection `{name}`: {e}")))?;
        load(&coll, &files, args, rows)?
    } else {
        let mut coll = db.create_collection(&name, config.with_index(IndexConfig::None))?;
        let built = load(&coll, &files, args, rows).and_then(|c| {
            coll.rebuild_index(config.index)?;
            Ok(c)
        });
        match built {
            Ok(c) => c,
            Err(e) => {
                drop(coll);
                // The collection was made by this import: nothing of it may stay behind.
                return Err(match db.drop_collection(&name) {
                    Ok(()) => e,
                    Err(d) => e.context(format!("(dropping the half-imported `{name}` failed too: {d})")),
                });
            }
        }
    };
    let secs = start.elapsed().as_secs_f64();
    let coll = db.collection(&name)?;
    let index = coll.stats()?.index;
    let Counts { rows, inserted, replaced, skipped } = counts;
    summary(
        "import",
        &format!(
            "imported {} of {rows} signatures into `{name}` from {} in {secs:.2} s ({inserted} new, {replaced} \
             replaced, {skipped} already present, skipped; configuration from {source}; {})",
            inserted + replaced,
            input.display(),
            index_text(index)
        ),
        json!({"collection": name, "records": inserted + replaced, "inserted": inserted, "replaced": replaced,
               "skipped": skipped, "rows": rows, "file": input.display().to_string(), "seconds": secs,
               "sketch": coll.params().to_string(), "recipe": coll.config().recipe().name(),
               "configuration": if source == "the flags" { "flags" } else { "metadata" },
               "index": crate::cmd::admin::index_json(index)}),
    );
    Ok(())
}

/// Writes every row through an [`Importer`].
fn load(coll: &sketchdb::Collection, files: &SignatureFiles, args: &ImportArgs, rows: u64) -> Result<Counts, CliError> {
    let params = *coll.params();
    let mut w = Importer::new(coll, args.batch, args.upsert)?;
    files.for_each(|key, bytes| {
        let sketch: Sketch = sketchdb::signature::decode(&params, bytes).map_err(|e| CliError::Input(e.to_string()))?;
        w.push(key, sketch)
    })?;
    w.flush()?;
    Ok(Counts { rows, inserted: w.inserted, replaced: w.replaced, skipped: w.skipped })
}
