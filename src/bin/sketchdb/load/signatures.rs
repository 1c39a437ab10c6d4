//! Reading a signature Parquet: `(id, signature)` rows as `sketchdb.spark dedup` writes them
//! in `signatures/` (one or many part files), with the configuration from their metadata.
//!
//! The input is a Parquet file, a folder of part files (`*.parquet`; Spark's `_SUCCESS`,
//! `.crc` and other hidden files are skipped), or a run folder holding `signatures/`. The `id`
//! column is a string (the key's bytes), an integer (its decimal digits, as the Python import
//! writes them) or binary (the key's bytes); `signature` is binary, each value the exact bytes
//! a collection stores (`sketchdb::signature`). Only these two columns are decoded, a batch at
//! a time, so memory is bounded by one batch.

use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use super::signature_spec::{META_KEY, SPARK_ROW_METADATA, SignatureSpec};
use crate::error::CliError;

/// Rows decoded per batch.
const BATCH_ROWS: usize = 8192;

/// The Parquet files of one signature input, in name order (Spark's part order).
#[derive(Debug)]
pub struct SignatureFiles {
    pub files: Vec<PathBuf>,
}

/// Whether `path` looks like a signature Parquet input: a folder, or a file that starts with
/// Parquet's magic bytes.
pub fn is_parquet_input(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let mut magic = [0u8; 4];
    File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == b"PAR1"
}

fn perr(path: &Path, detail: impl std::fmt::Display) -> CliError {
    CliError::Input(format!("{}: {detail}", path.display()))
}

/// Runs `f`, turning a panic inside the parquet crate into an input error about `path`.
fn guard<R>(path: &Path, f: impl FnOnce() -> R) -> Result<R, CliError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        perr(path, format!("the Parquet reader panicked: {}", msg.unwrap_or_default()))
    })
}

impl SignatureFiles {
    /// The files of the input at `path`.
    pub fn find(path: &Path) -> Result<SignatureFiles, CliError> {
        if !path.is_dir() {
            return Ok(SignatureFiles { files: vec![path.to_path_buf()] });
        }
        let run = path.join("signatures");
        let dir = if run.is_dir() { run } else { path.to_path_buf() };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| CliError::io(&dir, e))? {
            let entry = entry.map_err(|e| CliError::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let hidden = name.starts_with('.') || name.starts_with('_');
            if !hidden && name.ends_with(".parquet") && entry.path().is_file() {
                files.push(entry.path());
            }
        }
        files.sort();
        if files.is_empty() {
            return Err(perr(&dir, "no .parquet files: not a signature Parquet (sketchdb.spark's `signatures/`)"));
        }
        Ok(SignatureFiles { files })
    }

    /// The configuration the files' metadata states (`None` when no file states one); every
    /// file that states one must state the same.
    pub fn spec(&self) -> Result<Option<SignatureSpec>, CliError> {
        let mut found: Option<(SignatureSpec, &Path)> = None;
        for f in &self.files {
            let Some(spec) = file_spec(f)? else { continue };
            match &found {
                Some((first, at)) if *first != spec => {
                    return Err(perr(
                        f,
                        format!("its `{META_KEY}` metadata differs from that of {} ({first:?})", at.display()),
                    ));
                }
                Some(_) => {}
                None => found = Some((spec, f)),
            }
        }
        Ok(found.map(|(s, _)| s))
    }

    /// Calls `f` with every row's key and signature bytes, file by file, in order. A null id or
    /// signature is an error naming the file and row.
    pub fn for_each(&self, mut f: impl FnMut(Vec<u8>, &[u8]) -> Result<(), CliError>) -> Result<(), CliError> {
        for path in &self.files {
            read_file(path, &mut f)?;
        }
        Ok(())
    }
}

/// The `sketchdb.signatures` value of one file's footer: a top-level key (pyarrow, Rust
/// writers), else the `signature` field's metadata inside Spark's schema.
fn file_spec(path: &Path) -> Result<Option<SignatureSpec>, CliError> {
    let file = File::open(path).map_err(|e| CliError::io(path, e))?;
    let builder = guard(path, || ParquetRecordBatchReaderBuilder::try_new(file))?.map_err(|e| perr(path, e))?;
    let kv = builder.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
    let value = |key: &str| kv.iter().find(|e| e.key == key).and_then(|e| e.value.clone());
    let what = path.display().to_string();
    if let Some(text) = value(META_KEY) {
        return SignatureSpec::from_json(&text, &what).map(Some).map_err(CliError::Input);
    }
    let Some(spark) = value(SPARK_ROW_METADATA) else { return Ok(None) };
    let schema: Value = serde_json::from_str(&spark).map_err(|e| perr(path, format!("{SPARK_ROW_METADATA}: {e}")))?;
    let field_meta = schema
        .get("fields")
        .and_then(Value::as_array)
        .and_then(|fs| fs.iter().find(|f| f.get("name").and_then(Value::as_str) == Some("signature")))
        .and_then(|f| f.get("metadata"))
        .and_then(|m| m.get(META_KEY));
    match field_meta {
        None => Ok(None),
        Some(Value::String(text)) => SignatureSpec::from_json(text, &what).map(Some).map_err(CliError::Input),
        Some(other) => SignatureSpec::from_json(&other.to_string(), &what).map(Some).map_err(CliError::Input),
    }
}

/// The bytes of row `i`'s key: a string's bytes, an integer's decimal digits, binary as is.
fn key_at(a: &dyn Array, i: usize) -> Option<Vec<u8>> {
    if a.is_null(i) {
        return None;
    }
    let bytes = if let Some(s) = a.as_string_opt::<i32>() {
        s.value(i).as_bytes().to_vec()
    } else if let Some(s) = a.as_string_opt::<i64>() {
        s.value(i).as_bytes().to_vec()
    } else if let Some(s) = a.as_string_view_opt() {
        s.value(i).as_bytes().to_vec()
    } else if let Some(v) = a.as_primitive_opt::<Int64Type>() {
        v.value(i).to_string().into_bytes()
    } else if let Some(v) = a.as_primitive_opt::<Int32Type>() {
        v.value(i).to_string().into_bytes()
    } else if let Some(v) = a.as_primitive_opt::<UInt64Type>() {
        v.value(i).to_string().into_bytes()
    } else if let Some(v) = a.as_primitive_opt::<UInt32Type>() {
        v.value(i).to_string().into_bytes()
    } else {
        signature_at(a, i)?.to_vec()
    };
    Some(bytes)
}

fn signature_at(a: &dyn Array, i: usize) -> Option<&[u8]> {
    if a.is_null(i) {
        return None;
    }
    if let Some(b) = a.as_binary_opt::<i32>() {
        Some(b.value(i))
    } else if let Some(b) = a.as_binary_opt::<i64>() {
        Some(b.value(i))
    } else if let Some(b) = a.as_binary_view_opt() {
        Some(b.value(i))
    } else {
        a.as_fixed_size_binary_opt().map(|b| b.value(i))
    }
}

fn is_id_type(t: &DataType) -> bool {
    use DataType::*;
    matches!(t, Utf8 | LargeUtf8 | Utf8View | Int32 | Int64 | UInt32 | UInt64) || is_binary(t)
}

fn is_binary(t: &DataType) -> bool {
    matches!(t, DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_))
}

fn read_file(path: &Path, f: &mut impl FnMut(Vec<u8>, &[u8]) -> Result<(), CliError>) -> Result<(), CliError> {
    let file = File::open(path).map_err(|e| CliError::io(path, e))?;
    let builder = guard(path, || ParquetRecordBatchReaderBuilder::try_new(file))?.map_err(|e| perr(path, e))?;
    let schema = builder.schema().clone();
    let available = || schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ");
    let column = |name: &str, ok: fn(&DataType) -> bool, expected: &str| -> Result<usize, CliError> {
        let i =
            schema.index_of(name).map_err(|_| perr(path, format!("no column `{name}` (it has: {})", available())))?;
        let t = schema.field(i).data_type();
        if ok(t) { Ok(i) } else { Err(perr(path, format!("column `{name}` is {t}, expected {expected}"))) }
    };
    let id = column("id", is_id_type, "a string, an integer or binary")?;
    let sig = column("signature", is_binary, "binary")?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [id, sig]);
    let reader = guard(path, move || builder.with_projection(mask).with_batch_size(BATCH_ROWS).build())?
        .map_err(|e| perr(path, e))?;
    let mut row = 0u64;
    let mut next = reader.into_iter();
    loop {
        let batch: RecordBatch = match guard(path, || next.next())? {
            None => break,
            Some(b) => b.map_err(|e| perr(path, format!("row {row}: {e}")))?,
        };
        let ids = batch.column_by_name("id").ok_or_else(|| perr(path, "no column `id` in a batch"))?;
        let sigs = batch.column_by_name("signature").ok_or_else(|| perr(path, "no column `signature` in a batch"))?;
        for i in 0..batch.num_rows() {
            let at = row + i as u64;
            let key = key_at(ids.as_ref(), i).ok_or_else(|| perr(path, format!("row {at}: null `id`")))?;
            let s = signature_at(sigs.as_ref(), i).ok_or_else(|| perr(path, format!("row {at}: null `signature`")))?;
            f(key, s).map_err(|e| e.context(format!("{}: row {at}", path.display())))?;
        }
        row += batch.num_rows() as u64;
    }
    Ok(())
}
