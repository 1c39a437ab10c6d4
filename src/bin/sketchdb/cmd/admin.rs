//! Collection and database administration: create, list, drop, reindex, stats, verify,
//! compact.

use clap::Args;
use serde_json::json;
use sketchdb::recipes::{DEFAULT_SLOTS, default_params};
use sketchdb::{CollectionConfig, HashFamily, IndexConfig, IndexSummary, Recipe, SketchKind, Tokenizer};

use crate::error::CliError;
use crate::output::{outln, summary, table};
use crate::session::Session;

/// Sketch and tokenizer settings of a new collection.
#[derive(Args, Debug, Clone)]
pub struct CreateArgs {
    /// The collection's name.
    pub name: String,
    /// Sketch kind: minhash, bbit, oph or simhash.
    #[arg(long, default_value = "minhash")]
    pub kind: String,
    /// Permutations (minhash, bbit) or bins (oph) [default: 128, or a compatibility recipe's own].
    #[arg(long)]
    pub k: Option<u32>,
    /// Bits per value: minhash 32|64, bbit b in 1|2|4|8|16|32, oph 8|16|32, simhash 64|128.
    #[arg(long)]
    pub bits: Option<u8>,
    /// Seed of the hash family.
    #[arg(long, default_value_t = sketchdb::recipes::DEFAULT_SEED)]
    pub seed: u64,
    /// Words per shingle for text (default 5).
    #[arg(long, conflicts_with = "ngram")]
    pub shingle: Option<u32>,
    /// Use character n-grams of this many characters for text instead of word shingles.
    #[arg(long)]
    pub ngram: Option<u32>,
    /// Seed of the xxh3-64 token hash.
    #[arg(long, default_value_t = sketchdb::recipes::DEFAULT_TOKEN_SEED)]
    pub token_seed: u64,
    /// A named text recipe (`sketchdb recipes` lists them); a compatibility recipe also fixes
    /// the hash family and seed (MinHash).
    #[arg(long, conflicts_with_all = ["shingle", "ngram"])]
    pub recipe: Option<String>,
    /// Hash family: sketchdb's own mix-multiply-shift-32 (the default of minhash with 32 bits and
    /// bbit) or mix-multiply-shift (the default of the other kinds), or charikar for the
    /// textbook SimHash.
    #[arg(long)]
    pub family: Option<String>,
    /// Keep each record's exact shingle set: threshold, top-k and dedup results are then
    /// re-ranked by exact Jaccard, reported beside the estimate (text and token collections).
    #[arg(long)]
    pub exact_shingles: bool,
    #[command(flatten)]
    pub index: IndexArgs,
}

/// The index a collection keeps (`create`, `reindex`).
#[derive(Args, Debug, Clone)]
pub struct IndexArgs {
    /// Keep an LSH index for threshold queries at this similarity (minhash, bbit, oph).
    #[arg(long, conflicts_with = "simhash_tables")]
    pub lsh: Option<f64>,
    /// LSH bands (with --lsh; chosen for the threshold when omitted).
    #[arg(long, requires = "lsh")]
    pub bands: Option<u32>,
    /// LSH rows per band (with --lsh; chosen for the threshold when omitted).
    #[arg(long, requires = "lsh")]
    pub rows: Option<u32>,
    /// Keep SimHash permuted tables for Hamming-radius queries up to this radius (simhash).
    #[arg(long)]
    pub simhash_tables: Option<u32>,
}

impl IndexArgs {
    /// The index asked for, or `None` when no index flag was given.
    pub fn config(&self) -> Option<IndexConfig> {
        match (self.lsh, self.simhash_tables) {
            (Some(threshold), _) => Some(IndexConfig::Lsh { threshold, bands: self.bands, rows: self.rows }),
            (None, Some(radius)) => Some(IndexConfig::SimhashTables { radius }),
            (None, None) => None,
        }
    }
}

/// `reindex`: build a collection's index anew, or drop it.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["lsh", "simhash_tables", "none"])))]
pub struct ReindexArgs {
    /// The collection.
    pub collection: String,
    #[command(flatten)]
    pub index: IndexArgs,
    /// Drop the collection's index instead.
    #[arg(long, conflicts_with_all = ["lsh", "simhash_tables"])]
    pub none: bool,
}

impl CreateArgs {
    pub fn config(&self) -> Result<CollectionConfig, CliError> {
        let kind = SketchKind::from_name(&self.kind).ok_or_else(|| {
            CliError::Usage(format!("unknown sketch kind `{}` (expected minhash, bbit, oph or simhash)", self.kind))
        })?;
        let mut params = default_params(kind, self.k.unwrap_or(DEFAULT_SLOTS), self.bits, self.seed)?;
        match self.family.as_deref().map(|f| (f, HashFamily::from_name(f))) {
            None => {}
            // sketchdb's own families: `with_family` says which kinds each computes.
            Some((f, Some(family))) if !family.is_compat() => {
                params = params.with_family(family).map_err(|e| CliError::Usage(format!("--family {f}: {e}")))?;
            }
            Some((f, _)) => {
                return Err(CliError::Usage(format!(
                    "--family {f}: expected mix-multiply-shift, mix-multiply-shift-32 (minhash with 32 bits, bbit), \
                     or charikar with --kind simhash (64 bits); compatibility families come with --recipe"
                )));
            }
        }
        let tokenizer = match (self.shingle, self.ngram) {
            (_, Some(n)) => Tokenizer::char_ngrams(n, self.token_seed)?,
            (w, None) => Tokenizer::shingles(w.unwrap_or(sketchdb::recipes::DEFAULT_SHINGLE_WORDS), self.token_seed)?,
        };
        let mut config = CollectionConfig::new(params).with_tokenizer(tokenizer);
        if let Some(name) = &self.recipe {
            let recipe = Recipe::preset(name)?;
            config = config.with_recipe(recipe);
            if let Some(compat) = recipe.compat_params(self.k)? {
                if kind != SketchKind::MinHash || self.family.is_some() || self.bits.is_some_and(|b| b != 32) {
                    return Err(CliError::Usage(format!(
                        "--recipe {name} reproduces {}'s 32-bit MinHash: it takes no --kind, --bits or --family",
                        compat.family()
                    )));
                }
                config.params = compat;
            }
        }
        if self.exact_shingles && kind == SketchKind::SimHash {
            return Err(CliError::Usage("--exact-shingles: SimHash collections keep no shingle sets".into()));
        }
        let config = config.with_exact_shingles(self.exact_shingles);
        Ok(match self.index.config() {
            Some(index) => config.with_index(index),
            None => config,
        })
    }
}

/// Builds the collection's index from its stored rows in one transaction (replacing any
/// index it had), or drops it with `--none`: loading without an index and building it once
/// afterwards is the fast way to fill a large collection.
pub fn reindex(session: &mut Session, args: &ReindexArgs) -> Result<(), CliError> {
    let index = match (args.index.config(), args.none) {
        (Some(index), _) => index,
        (None, true) => IndexConfig::None,
        (None, false) => {
            return Err(CliError::Usage(
                "reindex needs --lsh THRESHOLD, --simhash-tables RADIUS or --none".to_string(),
            ));
        }
    };
    let mut c = session.collection(&args.collection)?;
    let start = std::time::Instant::now();
    c.rebuild_index(index)?;
    let secs = start.elapsed().as_secs_f64();
    let stats = c.stats()?;
    summary(
        "reindex",
        &format!("reindexed `{}` ({} rows) in {secs:.2} s: {}", args.collection, stats.live, index_text(stats.index)),
        json!({"collection": args.collection, "records": stats.live, "seconds": secs, "index": index_json(stats.index)}),
    );
    Ok(())
}

pub fn create(session: &mut Session, args: &CreateArgs) -> Result<(), CliError> {
    let config = args.config()?;
    session.create_missing = true;
    let c = session.db()?.create_collection(&args.name, config)?;
    let index = c.stats()?.index;
    let exact = c.config().exact_shingles;
    // The weights a banding is chosen with on this collection (recall-heavier when it keeps
    // exact shingles).
    let weights = sketchdb::lsh::BandingPurpose::for_collection(exact).weights();
    let index_note = match (index, args.index.lsh) {
        (Some(i), Some(_)) => {
            format!("; {} (weights {})", index_text(Some(i)), super::bounds::weights_text(weights))
        }
        (Some(i), None) => format!("; {}", index_text(Some(i))),
        (None, _) => String::new(),
    };
    let mut fields = json!({"collection": c.name(), "sketch": c.params().to_string(), "index": index_json(index),
                            "exact_shingles": exact});
    if let (Some(_), Some(o)) = (args.index.lsh, fields.as_object_mut()) {
        o.insert("weights".into(), super::bounds::weights_json(weights));
    }
    let exact_note = if exact { "; exact shingle sets kept" } else { "" };
    summary("create", &format!("created collection `{}`: {}{index_note}{exact_note}", c.name(), c.params()), fields);
    Ok(())
}

fn tokenizer_text(config: &CollectionConfig) -> String {
    let t = &config.tokenizer;
    let recipe = config.recipe().name();
    match t.kind() {
        sketchdb::TokenizerKind::Shingles { w } => format!("{w}-word shingles, seed {} (recipe {recipe})", t.seed()),
        sketchdb::TokenizerKind::CharNgrams { n } => format!("{n}-char n-grams, seed {} (recipe {recipe})", t.seed()),
        _ => format!("recipe {recipe}"),
    }
}

pub fn list(session: &mut Session, json_out: bool) -> Result<(), CliError> {
    let cols = session.db()?.collections()?;
    if json_out {
        for c in cols {
            let s = c.stats()?;
            outln!(
                "{}",
                json!({"collection": c.name(), "name": c.name(), "sketch": c.params().to_string(), "records": s.live,
                       "tokenizer": tokenizer_text(c.config())})
            )?;
        }
        return Ok(());
    }
    let mut rows = Vec::new();
    for c in cols {
        let s = c.stats()?;
        rows.push(vec![c.name().to_string(), c.params().to_string(), tokenizer_text(c.config()), s.live.to_string()]);
    }
    outln!("{}", table(&["collection", "sketch", "tokenizer", "records"], rows))
}

pub fn drop(session: &mut Session, name: &str) -> Result<(), CliError> {
    session.db()?.drop_collection(name)?;
    summary("drop", &format!("dropped collection `{name}`"), json!({"collection": name}));
    Ok(())
}

pub fn stats(session: &mut Session, json_out: bool) -> Result<(), CliError> {
    let s = sketchdb::admin::stats(session.db()?)?;
    if json_out {
        for (name, c) in &s.collections {
            outln!(
                "{}",
                json!({"collection": name, "records": c.live, "live": c.live, "deleted": c.deleted,
                       "next_row": c.next_row, "page_capacity": c.page_capacity, "record_width": c.record_width,
                       "file_bytes": s.file_bytes, "index": index_json(c.index), "caches": caches_json(&s.caches)})
            )?;
        }
        return Ok(());
    }
    outln!("file: {} ({} bytes)", session.path().display(), s.file_bytes)?;
    let rows = s
        .collections
        .iter()
        .map(|(n, c)| {
            vec![
                n.clone(),
                c.live.to_string(),
                c.deleted.to_string(),
                c.next_row.to_string(),
                c.page_capacity.to_string(),
                c.record_width.to_string(),
                index_text(c.index),
            ]
        })
        .collect();
    outln!("{}", table(&["collection", "live", "deleted", "next row id", "rows/page", "bytes/record", "index"], rows))?;
    outln!("{}", caches_text(&s.caches))
}

/// The `caches` object of each `stats --json` line (the database's, repeated like
/// `file_bytes`; the names of the library's `CacheStats`).
pub fn caches_json(c: &sketchdb::CacheStats) -> serde_json::Value {
    json!({"page_cache_budget": c.page_cache_budget, "page_cache_held": c.page_cache_held,
           "probe_cache_budget": c.probe_cache_budget, "probe_cache_held": c.probe_cache_held,
           "snapshot_kept": c.snapshot_kept, "snapshot_memo_entries": c.snapshot_memo_entries})
}

/// The caches lines of `stats`: each cache's held bytes of its budget, one line each.
fn caches_text(c: &sketchdb::CacheStats) -> String {
    let snapshot = if c.snapshot_kept { format!("kept, {} values", c.snapshot_memo_entries) } else { "none".into() };
    format!(
        "page cache: {} of {}\nprobe cache: {} of {}\nkept snapshot: {snapshot}",
        bytes_text(c.page_cache_held),
        bytes_text(c.page_cache_budget),
        bytes_text(c.probe_cache_held),
        bytes_text(c.probe_cache_budget)
    )
}

/// `n` bytes in the largest binary unit that keeps a whole number part (`12.3 MiB`), exact
/// below 1 KiB.
fn bytes_text(n: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The rule that chose an LSH index's banding: `default`, `recall (exact)` or `given`.
fn banding_name(banding: Option<sketchdb::lsh::BandingPurpose>) -> &'static str {
    banding.map_or("given", |b| b.name())
}

/// The index column of `stats`.
pub fn index_text(index: Option<IndexSummary>) -> String {
    match index {
        None => "-".into(),
        Some(IndexSummary::SimhashTables { tables, radius, runs }) => {
            format!("simhash: {tables} tables, radius {radius}, {runs} run{}", if runs == 1 { "" } else { "s" })
        }
        Some(IndexSummary::Lsh { bands, rows, runs, band_hash, removed_rows, banding }) => {
            let pending =
                if removed_rows > 0 { format!(", {removed_rows} removed rows to drop") } else { String::new() };
            format!(
                "lsh: {bands} x {rows} ({}), {runs} run{}, band hash v{band_hash}{pending}",
                banding_name(banding),
                if runs == 1 { "" } else { "s" }
            )
        }
        Some(other) => format!("{other:?}"),
    }
}

/// The index field of `stats --json`.
pub fn index_json(index: Option<IndexSummary>) -> serde_json::Value {
    match index {
        None => serde_json::Value::Null,
        Some(IndexSummary::SimhashTables { tables, radius, runs }) => {
            json!({"kind": "simhash", "tables": tables, "radius": radius, "runs": runs})
        }
        Some(IndexSummary::Lsh { bands, rows, runs, band_hash, removed_rows, banding }) => {
            json!({"kind": "lsh", "bands": bands, "rows": rows, "runs": runs, "band_hash": band_hash,
                   "removed_rows": removed_rows, "banding": banding_name(banding)})
        }
        Some(other) => json!({"kind": format!("{other:?}")}),
    }
}

pub fn verify(session: &mut Session, json_out: bool) -> Result<bool, CliError> {
    let report = sketchdb::admin::verify(session.db()?)?;
    if json_out {
        for p in &report.problems {
            outln!("{}", json!({"problem": p.to_string()}))?;
        }
        outln!(
            "{}",
            json!({"ok": report.is_ok(), "collections": report.collections, "pages": report.pages,
                   "rows": report.rows, "engine_integrity_ok": report.engine_integrity_ok,
                   "engine_integrity_checked": report.engine_integrity_checked,
                   "problems": report.problems.len()})
        )?;
    } else {
        for p in &report.problems {
            outln!("problem: {p}")?;
        }
        outln!(
            "verify: {} — {} collections, {} pages, {} rows checked; storage engine integrity {}",
            if report.is_ok() { "ok" } else { "FAILED" },
            report.collections,
            report.pages,
            report.rows,
            match (report.engine_integrity_checked, report.engine_integrity_ok) {
                (false, _) => "not checked (read-only open)",
                (true, true) => "ok",
                (true, false) => "FAILED",
            }
        )?;
    }
    Ok(report.is_ok())
}

pub fn compact(session: &mut Session) -> Result<(), CliError> {
    let s = session.db()?.compact()?;
    summary(
        "compact",
        &format!(
            "compacted: {} pages rewritten, {} rows moved, {} deleted rows purged, {} indexes merged into one run; \
             file {} -> {} bytes",
            s.pages_rewritten,
            s.rows_moved,
            s.rows_purged,
            s.indexes_optimized,
            s.file_bytes_before,
            s.file_bytes_after
        ),
        json!({"pages_rewritten": s.pages_rewritten, "rows_moved": s.rows_moved, "rows_purged": s.rows_purged,
               "indexes_optimized": s.indexes_optimized, "file_bytes_before": s.file_bytes_before,
               "file_bytes_after": s.file_bytes_after}),
    );
    Ok(())
}

pub fn calibrate(session: &mut Session, json_out: bool) -> Result<(), CliError> {
    let m = session.db()?.calibrate()?;
    if json_out {
        outln!(
            "{}",
            json!({"decode_per_slot_ns": m.decode_per_slot, "bin_compare_ns": m.bin_compare,
                   "fingerprint_compare_ns": m.fingerprint_compare, "lookup_ns": m.lookup,
                   "verify_per_slot_ns": m.verify_per_slot})
        )
    } else {
        outln!(
            "calibrated and stored: decode {:.3} ns/slot, bin compare {:.4} ns, fingerprint compare {:.3} ns, lookup {:.0} ns, verify {:.3} ns/slot",
            m.decode_per_slot,
            m.bin_compare,
            m.fingerprint_compare,
            m.lookup,
            m.verify_per_slot
        )
    }
}
