//! The Arrow kernels' row work, with no Python in it: rows of texts, token lists and
//! signatures read from Arrow arrays (borrowed, no copies), and the output arrays built on
//! all cores. Each function is the same whatever engine calls it (a Python loop, a Spark
//! `mapInArrow` partition): the output depends only on the rows and the parameters.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array, StructArray, UInt64Array,
};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_schema::{DataType, Field};
use rayon::prelude::*;
use sketchdb::estimate::token_hash;
use sketchdb::lsh::BandKeyScheme;
use sketchdb::{Sketch, SketchParams, signature};

/// What a row that cannot be sketched becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnError {
    /// The call fails naming the first such row.
    Raise,
    /// The row's output is null.
    Null,
}

/// A row-level failure: the row's index over all chunks and why.
pub(crate) type RowError = (usize, String);

/// Every row of string arrays (`utf8`, `large_utf8`, `utf8_view`) in order; null rows are `None`.
pub(crate) fn text_rows(arrays: &[ArrayRef]) -> Result<Vec<Option<&str>>, String> {
    let mut out = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for a in arrays {
        match a.data_type() {
            DataType::Utf8 => out.extend(a.as_string::<i32>().iter()),
            DataType::LargeUtf8 => out.extend(a.as_string::<i64>().iter()),
            DataType::Utf8View => out.extend(a.as_string_view().iter()),
            other => return Err(format!("texts must be a string array (utf8, large_utf8 or utf8_view), not {other}")),
        }
    }
    Ok(out)
}

/// The token values of one list array: hashes as `uint64` (or `int64`, read as the same 64
/// bits), or strings/binaries hashed with the tokenizer's seed.
enum Values<'a> {
    U64(&'a [u64]),
    I64(&'a [i64]),
    Bytes(Box<dyn Fn(usize) -> &'a [u8] + Send + Sync + 'a>),
}

/// One list array's offsets, values and element nulls.
struct ListChunk<'a> {
    values: Values<'a>,
    value_nulls: Option<&'a NullBuffer>,
}

/// A token-list row: its chunk and value range, or `None` for a null row.
type ListRow = Option<(usize, usize, usize)>;

/// The rows of list arrays of tokens (`list`/`large_list` of `uint64`, `int64`, `utf8`,
/// `large_utf8`, `binary`, `large_binary`).
pub(crate) struct TokenRows<'a> {
    chunks: Vec<ListChunk<'a>>,
    rows: Vec<ListRow>,
}

impl<'a> TokenRows<'a> {
    pub(crate) fn new(arrays: &'a [ArrayRef]) -> Result<Self, String> {
        let mut chunks = Vec::with_capacity(arrays.len());
        let mut rows = Vec::new();
        for (c, a) in arrays.iter().enumerate() {
            let (values, offsets): (&ArrayRef, Vec<usize>) = match a.data_type() {
                DataType::List(_) => {
                    let l = a.as_list::<i32>();
                    (l.values(), l.value_offsets().iter().map(|&o| o as usize).collect())
                }
                DataType::LargeList(_) => {
                    let l = a.as_list::<i64>();
                    (l.values(), l.value_offsets().iter().map(|&o| o as usize).collect())
                }
                other => return Err(format!("tokens must be a list array (list or large_list), not {other}")),
            };
            let vals = match values.data_type() {
                DataType::UInt64 => Values::U64(values.as_primitive::<UInt64Type>().values()),
                DataType::Int64 => Values::I64(values.as_primitive::<Int64Type>().values()),
                DataType::Utf8 => {
                    let s = values.as_string::<i32>();
                    Values::Bytes(Box::new(move |i| s.value(i).as_bytes()))
                }
                DataType::LargeUtf8 => {
                    let s = values.as_string::<i64>();
                    Values::Bytes(Box::new(move |i| s.value(i).as_bytes()))
                }
                DataType::Binary => {
                    let s = values.as_binary::<i32>();
                    Values::Bytes(Box::new(move |i| s.value(i)))
                }
                DataType::LargeBinary => {
                    let s = values.as_binary::<i64>();
                    Values::Bytes(Box::new(move |i| s.value(i)))
                }
                other => {
                    return Err(format!(
                        "tokens must be lists of uint64, int64, utf8, large_utf8, binary or large_binary, not of {other}"
                    ));
                }
            };
            chunks.push(ListChunk { values: vals, value_nulls: values.nulls() });
            for i in 0..a.len() {
                rows.push(a.is_valid(i).then(|| (c, offsets[i], offsets[i + 1])));
            }
        }
        Ok(TokenRows { chunks, rows })
    }

    pub(crate) fn rows(&self) -> &[ListRow] {
        &self.rows
    }

    /// The hashed tokens of a row (`seed` hashes string and binary tokens); `uint64` rows are
    /// the column's own values, not a copy.
    pub(crate) fn tokens(
        &self,
        (c, start, end): (usize, usize, usize),
        seed: u64,
    ) -> Result<std::borrow::Cow<'_, [u64]>, String> {
        let chunk = &self.chunks[c];
        if let Some(n) = chunk.value_nulls
            && (start..end).any(|i| n.is_null(i))
        {
            return Err("a null token".to_string());
        }
        Ok(match &chunk.values {
            Values::U64(v) => std::borrow::Cow::Borrowed(&v[start..end]),
            Values::I64(v) => v[start..end].iter().map(|&x| x as u64).collect(),
            Values::Bytes(f) => (start..end).map(|i| token_hash(f(i), seed)).collect(),
        })
    }
}

/// Every row of `FixedSizeBinary(width)` arrays in order; null rows are `None`.
pub(crate) fn signature_rows(arrays: &[ArrayRef], width: usize) -> Result<Vec<Option<&[u8]>>, String> {
    let mut out = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for a in arrays {
        let Some(f) = a.as_fixed_size_binary_opt() else {
            return Err(format!("signatures must be a fixed_size_binary array, not {}", a.data_type()));
        };
        if f.value_length() as usize != width {
            return Err(format!(
                "signatures are fixed_size_binary({}) but these parameters' signatures are {width} bytes",
                f.value_length()
            ));
        }
        out.extend(f.iter());
    }
    Ok(out)
}

/// Sketches every row on all cores into one `FixedSizeBinary(signature width)` array: a
/// null row gives a null, a row `sketch` fails on gives an error or (`OnError::Null`) a null.
pub(crate) fn sketch_rows<T: Sync>(
    params: &SketchParams,
    rows: &[Option<T>],
    on_error: OnError,
    sketch: impl Fn(&T) -> Result<Sketch, String> + Sync,
) -> Result<ArrayRef, RowError> {
    let width = signature::width(params);
    let mut bytes = vec![0u8; rows.len() * width];
    let results: Vec<Result<bool, RowError>> = bytes
        .par_chunks_mut(width)
        .zip(rows.par_iter())
        .enumerate()
        .map(|(i, (out, row))| {
            let Some(row) = row else { return Ok(false) };
            let done = sketch(row).and_then(|s| signature::encode_into(&s, out).map_err(|e| e.to_string()));
            match (done, on_error) {
                (Ok(()), _) => Ok(true),
                (Err(_), OnError::Null) => Ok(false),
                (Err(e), OnError::Raise) => Err((i, e)),
            }
        })
        .collect();
    let valid = results.into_iter().collect::<Result<Vec<bool>, RowError>>()?;
    let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
    let width = i32::try_from(width).map_err(|_| (0, "signature too wide".to_string()))?;
    let array = FixedSizeBinaryArray::try_new(width, Buffer::from_vec(bytes), nulls).map_err(|e| (0, e.to_string()))?;
    Ok(Arc::new(array))
}

/// The band keys of every signature, rows in order and each row's bands in band order, as a
/// struct array `(row int32, band int32, key uint64 | int64)`; null rows have none.
pub(crate) fn band_key_rows(
    params: &SketchParams,
    scheme: &BandKeyScheme,
    rows: &[Option<&[u8]>],
    signed: bool,
) -> Result<ArrayRef, RowError> {
    let per_row: Vec<Result<Vec<u64>, RowError>> = rows
        .par_iter()
        .enumerate()
        .map(|(i, row)| {
            let Some(bytes) = row else { return Ok(Vec::new()) };
            let s = signature::decode(params, bytes).map_err(|e| (i, e.to_string()))?;
            scheme.sketch_keys(&s).map_err(|e| (i, e.to_string()))
        })
        .collect();
    let bands = scheme.params.bands as usize;
    let mut row_col = Vec::with_capacity(rows.len() * bands);
    let mut band_col = Vec::with_capacity(rows.len() * bands);
    let mut keys = Vec::with_capacity(rows.len() * bands);
    for (i, r) in per_row.into_iter().enumerate() {
        let r = r?;
        let i = i32::try_from(i).map_err(|_| (i, "more than 2^31 rows in one call".to_string()))?;
        for (b, k) in r.into_iter().enumerate() {
            row_col.push(i);
            band_col.push(b as i32);
            keys.push(k);
        }
    }
    let key_col: ArrayRef = if signed {
        Arc::new(Int64Array::from(keys.into_iter().map(|k| k as i64).collect::<Vec<_>>()))
    } else {
        Arc::new(UInt64Array::from(keys))
    };
    let fields = vec![
        Arc::new(Field::new("row", DataType::Int32, false)),
        Arc::new(Field::new("band", DataType::Int32, false)),
        Arc::new(Field::new("key", key_col.data_type().clone(), false)),
    ];
    let cols: Vec<ArrayRef> = vec![Arc::new(Int32Array::from(row_col)), Arc::new(Int32Array::from(band_col)), key_col];
    let s = StructArray::try_new(fields.into(), cols, None).map_err(|e| (0, e.to_string()))?;
    Ok(Arc::new(s))
}

/// The estimate of each pair of rows `(a[i], b[i])` with its interval at `level`, as a struct
/// array `(estimate, lower, upper)` of float64; null when either row is null.
pub(crate) fn estimate_rows(
    params: &SketchParams,
    a: &[Option<&[u8]>],
    b: &[Option<&[u8]>],
    level: f64,
) -> Result<ArrayRef, RowError> {
    if a.len() != b.len() {
        return Err((a.len().min(b.len()), format!("{} rows against {} rows", a.len(), b.len())));
    }
    let est: Vec<Result<Option<[f64; 3]>, RowError>> = a
        .par_iter()
        .zip(b.par_iter())
        .enumerate()
        .map(|(i, (x, y))| {
            let (Some(x), Some(y)) = (x, y) else { return Ok(None) };
            let err = |e: &dyn std::fmt::Display| (i, e.to_string());
            let x = signature::decode(params, x).map_err(|e| err(&e))?;
            let y = signature::decode(params, y).map_err(|e| err(&e))?;
            let e = x.similarity(&y, level).map_err(|e| err(&e))?;
            Ok(Some([e.value, e.lower, e.upper]))
        })
        .collect();
    let est = est.into_iter().collect::<Result<Vec<_>, RowError>>()?;
    let col = |j: usize| -> ArrayRef {
        Arc::new(Float64Array::from(est.iter().map(|e| e.map(|v| v[j])).collect::<Vec<_>>()))
    };
    let fields = ["estimate", "lower", "upper"].map(|n| Arc::new(Field::new(n, DataType::Float64, true)));
    let s = StructArray::try_new(fields.to_vec().into(), vec![col(0), col(1), col(2)], None)
        .map_err(|e| (0, e.to_string()))?;
    Ok(Arc::new(s))
}
