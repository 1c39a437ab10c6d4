//! Picking the id and the content out of a JSON object (or a CSV cell) by dotted path.

use serde_json::Value;

use super::error::RejectReason;
use super::options::{ReadOptions, Select};
use super::record::Content;

/// The selected fields, split into path segments once.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    select: Select,
    id: Field,
    key_fallback: bool,
    text: Field,
    tokens: Field,
    fingerprint: Field,
}

#[derive(Debug, Clone)]
struct Field {
    name: String,
    path: Vec<String>,
}

impl Field {
    fn new(name: &str) -> Self {
        Field { name: name.to_owned(), path: name.split('.').map(str::to_owned).collect() }
    }

    /// The value at this field, `None` when absent or `null`. A key spelled with the dots
    /// itself (`{"meta.body": ...}`) is found before the nested path.
    fn take(&self, v: &mut Value) -> Option<Value> {
        let obj = v.as_object_mut()?;
        let found = if obj.contains_key(&self.name) {
            obj.get_mut(&self.name)
        } else {
            let (first, rest) = self.path.split_first()?;
            rest.iter().try_fold(obj.get_mut(first)?, |cur, seg| cur.as_object_mut()?.get_mut(seg))
        }?;
        match found.take() {
            Value::Null => None,
            other => Some(other),
        }
    }

    fn has(&self, v: &Value) -> bool {
        let Some(obj) = v.as_object() else { return false };
        let found = obj.get(&self.name).or_else(|| {
            let (first, rest) = self.path.split_first()?;
            rest.iter().try_fold(obj.get(first)?, |cur, seg| cur.as_object()?.get(seg))
        });
        found.is_some_and(|v| !v.is_null())
    }
}

/// JSON's name for the kind of `v`, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Parses a fingerprint of 1 to 32 hex digits, with or without `0x`.
pub(crate) fn parse_hex_fingerprint(s: &str) -> Result<u128, String> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if digits.is_empty() || digits.len() > 32 {
        return Err(format!("`{s}` is not 1 to 32 hex digits"));
    }
    u128::from_str_radix(digits, 16).map_err(|_| format!("`{s}` is not a hexadecimal fingerprint"))
}

impl Fields {
    pub(crate) fn new(opts: &ReadOptions) -> Self {
        Fields {
            select: opts.select,
            id: Field::new(&opts.id_field),
            key_fallback: opts.key_fallback(),
            text: Field::new(&opts.text_field),
            tokens: Field::new(&opts.tokens_field),
            fingerprint: Field::new(&opts.fingerprint_field),
        }
    }

    /// The record's id (if any) and content, moved out of `record`.
    pub(crate) fn extract(&self, record: &mut Value) -> Result<(Option<String>, Content), RejectReason> {
        if !record.is_object() {
            return Err(RejectReason::NotAnObject);
        }
        let id = match self.id.take(record) {
            Some(v) => Some(id_string(&self.id.name, v)?),
            None if self.key_fallback => match Field::new("key").take(record) {
                Some(v) => Some(id_string("key", v)?),
                None => None,
            },
            None => None,
        };
        let select = match self.select {
            Select::AnyOne => {
                let present: Vec<Select> = [
                    (Select::Text, &self.text),
                    (Select::Tokens, &self.tokens),
                    (Select::Fingerprint, &self.fingerprint),
                ]
                .into_iter()
                .filter(|(_, f)| f.has(record))
                .map(|(s, _)| s)
                .collect();
                match present.as_slice() {
                    [one] => *one,
                    [] => return Err(RejectReason::MissingField(self.text.name.clone())),
                    _ => {
                        return Err(RejectReason::AmbiguousContent(format!(
                            "{}`, `{}` or `{}",
                            self.text.name, self.tokens.name, self.fingerprint.name
                        )));
                    }
                }
            }
            s => s,
        };
        let field = match select {
            Select::Tokens => &self.tokens,
            Select::Fingerprint => &self.fingerprint,
            _ => &self.text,
        };
        let value = field.take(record).ok_or_else(|| RejectReason::MissingField(field.name.clone()))?;
        Ok((id, content(select, &field.name, value)?))
    }
}

/// An id: a string, or an integer rendered in decimal.
fn id_string(field: &str, v: Value) -> Result<String, RejectReason> {
    match v {
        Value::String(s) => Ok(s),
        Value::Number(n) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
        // Integers are ids too, so a number here is one that is not an integer.
        Value::Number(_) => Err(RejectReason::NotAString { field: field.to_owned(), found: "non-integer number" }),
        other => Err(RejectReason::NotAString { field: field.to_owned(), found: kind(&other) }),
    }
}

/// The content of kind `select` held by `v` (the value of field `name`).
pub(crate) fn content(select: Select, name: &str, v: Value) -> Result<Content, RejectReason> {
    match select {
        Select::Tokens => tokens(name, v),
        Select::Fingerprint => fingerprint(name, v),
        _ => match v {
            Value::String(s) => Ok(Content::Text(s)),
            other => Err(RejectReason::NotAString { field: name.to_owned(), found: kind(&other) }),
        },
    }
}

/// An array of u64 (token hashes) or of strings (terms); an empty array is an empty token
/// list.
fn tokens(name: &str, v: Value) -> Result<Content, RejectReason> {
    let bad = || RejectReason::BadTokens(name.to_owned());
    let Value::Array(items) = v else { return Err(bad()) };
    if items.first().is_some_and(Value::is_string) {
        items
            .into_iter()
            .map(|t| if let Value::String(s) = t { Ok(s) } else { Err(bad()) })
            .collect::<Result<_, _>>()
            .map(Content::Terms)
    } else {
        items.iter().map(|t| t.as_u64().ok_or_else(bad)).collect::<Result<_, _>>().map(Content::Tokens)
    }
}

/// A hex string or an unsigned integer.
fn fingerprint(name: &str, v: Value) -> Result<Content, RejectReason> {
    let bad = |detail: String| RejectReason::BadFingerprint { field: name.to_owned(), detail };
    match v {
        Value::String(s) => parse_hex_fingerprint(&s).map(Content::Fingerprint).map_err(bad),
        Value::Number(n) => {
            n.as_u64().map(|v| Content::Fingerprint(u128::from(v))).ok_or_else(|| bad(format!("{n} is not a u64")))
        }
        other => Err(bad(format!("expected a hex string or an integer, found {}", kind(&other)))),
    }
}
