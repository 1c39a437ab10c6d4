//! `export` / `import`: a collection as JSON lines, round trip exact.
//!
//! Line 1 is a header `{"sketchdb_export":1,"collection":NAME,"params":{..},"tokenizer":{..}}`;
//! every further line is one record: `{"key":"..."}` (or `"key_hex"` for keys that are not
//! UTF-8) plus its raw sketch: `"values"` (MinHash), `"words"` (b-bit), `"bins"` and `"empty"`
//! (OPH), `"simhash"` (hex), and `"cardinality"` for set sketches. Integers are exact u64.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde_json::{Value, json};
use sketchdb::{BBitMinHash, Batch, CollectionConfig, MinHash, OphSketch, SimHash, Sketch, SketchParams, Tokenizer};

use crate::error::CliError;
use crate::input::parse_hex_fingerprint;
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
    let header = json!({"sketchdb_export": EXPORT_VERSION, "collection": name,
                        "params": coll.params(), "tokenizer": coll.config().tokenizer});
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
        .map(|x| x.as_u64().ok_or_else(|| format!("`{field}` holds a value that is not a u64")))
        .collect()
}

fn sketch_from_json(params: SketchParams, v: &Value) -> Result<Sketch, String> {
    let card = || v.get("cardinality").and_then(Value::as_u64).ok_or("missing `cardinality`".to_string());
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

pub fn import(session: &mut Session, input: &Path, into: Option<&str>, batch_size: usize) -> Result<(), CliError> {
    let file = std::fs::File::open(input).map_err(|e| CliError::io(input, e))?;
    let mut lines = BufReader::new(file).lines();
    let at = |line: usize, msg: String| CliError::Input(format!("{}:{line}: {msg}", input.display()));
    let header_line =
        lines.next().ok_or_else(|| at(1, "empty file: no export header".into()))?.map_err(|e| at(1, e.to_string()))?;
    let header: Value = serde_json::from_str(&header_line).map_err(|e| at(1, format!("malformed header: {e}")))?;
    match header.get("sketchdb_export").and_then(Value::as_u64) {
        Some(EXPORT_VERSION) => {}
        Some(v) => {
            return Err(at(
                1,
                format!("export format version {v} is not supported (this build reads {EXPORT_VERSION})"),
            ));
        }
        None => return Err(at(1, "not a sketchdb export: the header lacks `sketchdb_export`".into())),
    }
    let params: SketchParams = serde_json::from_value(header.get("params").cloned().unwrap_or(Value::Null))
        .map_err(|e| at(1, format!("header `params`: {e}")))?;
    params.validate().map_err(|e| at(1, format!("header `params`: {e}")))?;
    let tokenizer: Tokenizer = serde_json::from_value(header.get("tokenizer").cloned().unwrap_or(Value::Null))
        .map_err(|e| at(1, format!("header `tokenizer`: {e}")))?;
    let name = into
        .map(str::to_string)
        .or_else(|| header.get("collection").and_then(Value::as_str).map(str::to_string))
        .ok_or_else(|| at(1, "no collection name in the header; pass --into".into()))?;
    session.create_missing = true;
    let coll = session.collection_or_create(&name, CollectionConfig::new(params).with_tokenizer(tokenizer))?;
    coll.params().check_compatible(&params).map_err(|e| at(1, format!("collection `{name}`: {e}")))?;
    let mut batch = Batch::with_capacity(batch_size);
    let mut n = 0u64;
    for (i, line) in lines.enumerate() {
        let line_no = i + 2;
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
        batch.insert(key, sketch);
        if batch.len() >= batch_size {
            n += coll.apply(&batch)?.inserted;
            batch.clear();
        }
    }
    n += coll.apply(&batch)?.inserted;
    summary(
        "import",
        &format!("imported {n} records into `{name}` from {}", input.display()),
        json!({"collection": name, "records": n, "file": input.display().to_string()}),
    );
    Ok(())
}
