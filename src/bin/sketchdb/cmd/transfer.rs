//! `export` / `import`: a collection as JSON lines, round trip exact.
//!
//! Line 1 is a header `{"sketchdb_export":1,"collection":NAME,"recipe":NAME,"params":{..},
//! "tokenizer":{..},"index":..}` (the collection's whole configuration, recipe and hash family
//! included: `import` recreates the same collection);
//! every further line is one record: `{"key":"..."}` (or `"key_hex"` for keys that are not
//! UTF-8) plus its raw sketch: `"values"` (MinHash), `"words"` (b-bit), `"bins"` and `"empty"`
//! (OPH), `"simhash"` (hex), and `"cardinality"` for set sketches. Integers are exact u64.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde_json::{Value, json};
use sketchdb::{
    BBitMinHash, CollectionConfig, IndexConfig, MinHash, OphSketch, SimHash, Sketch, SketchParams, Tokenizer,
};

use crate::error::CliError;
use crate::export_header::{
    index_from_json, index_to_json, params_from_json, params_to_json, tokenizer_from_json, tokenizer_to_json,
};
use crate::input::parse_hex_fingerprint;
pub use crate::load::import::ImportArgs;
use crate::load::import::{Importer, check_same};
use crate::output::summary;
use crate::session::Session;

const EXPORT_VERSION: u64 = 1;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn record_json(key: &[u8], sketch: &Sketch) -> Value {
    let mut v = match std::str::from_utf8(key) {
        Ok(k) => json!({"key": k}),
        Err(_) => json!({"key_hex": hex(key)}),
    };
    let o = v.as_object_mut();
    if let Some(o) = o {
        match sketch {
            Sketch::MinHash(m) => {
                o.insert("values".into(), json!(m.values()));
                o.insert("cardinality".into(), json!(m.cardinality()));
            }
            Sketch::BBit(b) => {
                o.insert("words".into(), json!(b.words()));
                o.insert("cardinality".into(), json!(b.cardinality()));
            }
            Sketch::Oph(s) => {
                o.insert("bins".into(), json!(s.bins()));
                o.insert("empty".into(), json!(s.empty_bitmap()));
                o.insert("cardinality".into(), json!(s.cardinality()));
            }
            Sketch::SimHash(s) => {
                // Every digit of the fingerprint: 16 for 64 bits, 32 for 128.
                let digits = usize::from(s.params().bits()) / 4;
                o.insert("simhash".into(), json!(format!("{:0digits$x}", s.value())));
            }
            _ => {}
        }
    }
    v
}

pub fn export(session: &mut Session, name: &str, out: &Path) -> Result<(), CliError> {
    let coll = session.collection(name)?;
    let file: Box<dyn Write> = if out == Path::new("-") {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(out).map_err(|e| CliError::io(out, e))?)
    };
    let mut w = BufWriter::new(file);
    let params = params_to_json(coll.params()).map_err(CliError::Input)?;
    let tokenizer = tokenizer_to_json(&coll.config().tokenizer, coll.params().family()).map_err(CliError::Input)?;
    let index = index_to_json(&coll.config().index).map_err(CliError::Input)?;
    let header = json!({"sketchdb_export": EXPORT_VERSION, "collection": name, "recipe": coll.config().recipe().name(),
                        "params": params, "tokenizer": tokenizer, "index": index});
    let io = |e: std::io::Error| CliError::io(out, e);
    writeln!(w, "{header}").map_err(io)?;
    let mut n = 0u64;
    for rec in coll.scan()? {
        let rec = rec?;
        writeln!(w, "{}", record_json(&rec.key, &rec.sketch)).map_err(io)?;
        n += 1;
    }
    w.flush().map_err(io)?;
    summary(
        "export",
        &format!("exported {n} records of `{name}` to {}", out.display()),
        json!({"collection": name, "records": n, "file": out.display().to_string()}),
    );
    Ok(())
}

fn u64s(v: &Value, field: &str) -> Result<Vec<u64>, String> {
    v.get(field)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("missing array `{field}`"))?
        .iter()
        .map(|x| x.as_u64().ok_or_else(|| format!("`{field}` holds {x}, which is not an integer in 0..=2^64-1")))
        .collect()
}

/// A u64 field: missing and out of range are told apart.
fn u64_field(v: &Value, field: &str) -> Result<u64, String> {
    match v.get(field) {
        None | Some(Value::Null) => Err(format!("missing `{field}`")),
        Some(x) => x.as_u64().ok_or_else(|| format!("`{field}` is {x}, not an integer in 0..=2^64-1")),
    }
}

fn sketch_from_json(params: SketchParams, v: &Value) -> Result<Sketch, String> {
    let card = || u64_field(v, "cardinality");
    let s = match params.kind() {
        sketchdb::SketchKind::MinHash => {
            Sketch::MinHash(MinHash::from_parts(params, u64s(v, "values")?, card()?).map_err(|e| e.to_string())?)
        }
        sketchdb::SketchKind::BBitMinHash => {
            Sketch::BBit(BBitMinHash::from_parts(params, u64s(v, "words")?, card()?).map_err(|e| e.to_string())?)
        }
        sketchdb::SketchKind::Oph => {
            let bins = u64s(v, "bins")?
                .into_iter()
                .map(|b| u32::try_from(b).map_err(|_| "a bin value exceeds 32 bits".to_string()))
                .collect::<Result<Vec<u32>, String>>()?;
            Sketch::Oph(OphSketch::from_parts(params, bins, u64s(v, "empty")?, card()?).map_err(|e| e.to_string())?)
        }
        sketchdb::SketchKind::SimHash => {
            let h = v.get("simhash").and_then(Value::as_str).ok_or("missing `simhash`")?;
            Sketch::SimHash(SimHash::from_parts(params, parse_hex_fingerprint(h)?).map_err(|e| e.to_string())?)
        }
        _ => return Err(format!("unsupported sketch kind {}", params.kind())),
    };
    Ok(s)
}

/// What an export's first line says.
struct Header {
    name: Option<String>,
    config: CollectionConfig,
}

fn read_header(input: &Path, first: Option<std::io::Result<String>>) -> Result<Header, CliError> {
    let at = |msg: String| CliError::Input(format!("{}:1: {msg}", input.display()));
    let line = first.ok_or_else(|| at("empty file: no export header".into()))?.map_err(|e| at(e.to_string()))?;
    let header: Value = serde_json::from_str(&line).map_err(|e| at(format!("malformed header: {e}")))?;
    match header.get("sketchdb_export").and_then(Value::as_u64) {
        Some(EXPORT_VERSION) => {}
        Some(v) => {
            return Err(at(format!("export format version {v} is not supported (this build reads {EXPORT_VERSION})")));
        }
        None => return Err(at("not a sketchdb export: the header lacks `sketchdb_export`".into())),
    }
    let field = |name: &str| header.get(name).cloned().unwrap_or(Value::Null);
    let params: SketchParams = params_from_json(field("params")).map_err(|e| at(format!("header `params`: {e}")))?;
    let tokenizer: Tokenizer =
        tokenizer_from_json(field("tokenizer")).map_err(|e| at(format!("header `tokenizer`: {e}")))?;
    // Exports written before the index settings were recorded have none.
    let index: IndexConfig = match header.get("index") {
        None => IndexConfig::None,
        Some(v) => index_from_json(v.clone()).map_err(|e| at(format!("header `index`: {e}")))?,
    };
    let config = CollectionConfig::new(params).with_tokenizer(tokenizer).with_index(index);
    config.validate().map_err(|e| at(format!("header: {}", CliError::from(e))))?;
    // Exports written before recipes were recorded name none.
    if let Some(recipe) = header.get("recipe") {
        let found = config.recipe().name();
        if recipe.as_str() != Some(found) {
            return Err(at(format!("header `recipe` is {recipe}, but its tokenizer and family are recipe `{found}`")));
        }
    }
    Ok(Header { name: header.get("collection").and_then(Value::as_str).map(str::to_string), config })
}

/// Calls `f` with every record of the export after its header, in order.
fn for_each_record(
    input: &Path,
    params: SketchParams,
    mut f: impl FnMut(Vec<u8>, Sketch) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let file = std::fs::File::open(input).map_err(|e| CliError::io(input, e))?;
    let at = |line: usize, msg: String| CliError::Input(format!("{}:{line}: {msg}", input.display()));
    for (i, line) in BufReader::new(file).lines().enumerate().skip(1) {
        let line_no = i + 1;
        let line = line.map_err(|e| at(line_no, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| at(line_no, format!("malformed record: {e}")))?;
        let key = match (v.get("key").and_then(Value::as_str), v.get("key_hex").and_then(Value::as_str)) {
            (Some(k), None) => k.as_bytes().to_vec(),
            (None, Some(h)) => unhex(h).ok_or_else(|| at(line_no, "`key_hex` is not hexadecimal".into()))?,
            _ => return Err(at(line_no, "a record needs exactly one of `key` or `key_hex`".into())),
        };
        let sketch = sketch_from_json(params, &v).map_err(|e| at(line_no, e))?;
        f(key, sketch)?;
    }
    Ok(())
}

/// Reads the whole export once to check every record before anything is written (so a bad
/// file leaves no half-imported collection), then writes it in batches. Keys already stored
/// are skipped (importing the same file twice is a no-op) or, with `--upsert`, replaced.
pub fn import(session: &mut Session, args: &ImportArgs) -> Result<(), CliError> {
    if crate::load::signatures::is_parquet_input(&args.input) {
        return super::import_signatures::import(session, args);
    }
    if args.spec.any() {
        return Err(CliError::Usage(format!(
            "{}: an export file's header carries its configuration; --kind, --k, --lsh and the other \
             signature flags describe a signature Parquet",
            args.input.display()
        )));
    }
    let input = args.input.as_path();
    let file = std::fs::File::open(input).map_err(|e| CliError::io(input, e))?;
    let header = read_header(input, BufReader::new(file).lines().next())?;
    let params = header.config.params;
    let mut total = 0u64;
    for_each_record(input, params, |_, _| {
        total += 1;
        Ok(())
    })?;
    let name = args.into.clone().or(header.name).ok_or_else(|| {
        CliError::Input(format!("{}:1: no collection name in the header; pass --into", input.display()))
    })?;
    session.create_missing = true;
    let coll = session.collection_or_create(&name, header.config)?;
    check_same(coll.config(), &header.config)
        .map_err(|e| CliError::Input(format!("{}:1: collection `{name}`: {e}", input.display())))?;
    let mut w = Importer::new(&coll, args.batch, args.upsert)?;
    for_each_record(input, params, |key, sketch| w.push(key, sketch))?;
    w.flush()?;
    let (inserted, replaced, skipped) = (w.inserted, w.replaced, w.skipped);
    summary(
        "import",
        &format!(
            "imported {} of {total} records into `{name}` from {} ({inserted} new, {replaced} replaced, {skipped} \
             already present, skipped)",
            inserted + replaced,
            input.display()
        ),
        json!({"collection": name, "records": inserted + replaced, "inserted": inserted, "replaced": replaced,
               "skipped": skipped, "file": input.display().to_string()}),
    );
    Ok(())
}
