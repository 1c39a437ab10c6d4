//! Errors of the pure sketch layer.

use thiserror::Error;

/// An error from building, comparing or estimating with sketches.
///
/// Every variant names the offending parameter or field and the values involved, so a caller
/// can report it without further context.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SketchError {
    /// A sketch parameter is outside its allowed range.
    #[error("invalid sketch parameter `{param}` = {value}: {expected}")]
    InvalidParam {
        /// The parameter's name (`k`, `b`, `bins`, `bits`, `level`, ...).
        param: &'static str,
        /// The value that was given, rendered as text.
        value: String,
        /// What the parameter must be.
        expected: &'static str,
    },
    /// Two sketches (or a sketch and a collection) disagree on a parameter.
    #[error("incompatible sketches: `{field}` differs ({left} vs {right})")]
    Incompatible {
        /// The parameter that differs (`kind`, `seed`, `k`, `bits`, `family`, ...).
        field: &'static str,
        /// The left-hand sketch's value.
        left: String,
        /// The right-hand sketch's value.
        right: String,
    },
    /// A set sketch was asked for over an empty set; its minima are undefined.
    #[error("cannot sketch an empty set: the input has no tokens")]
    EmptySet,
    /// A sketch's stored values do not match its own parameters (wrong length, bits set
    /// beyond the declared width, an empty-bin bitmap that marks a filled bin, ...).
    #[error("malformed {kind} sketch: {detail}")]
    Malformed {
        /// The sketch kind's name.
        kind: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// An estimate is undefined for these inputs (for example two all-empty OPH sketches).
    #[error("estimate undefined: {reason}")]
    Undefined {
        /// Why no estimate exists.
        reason: &'static str,
    },
}

impl SketchError {
    pub(crate) fn invalid(param: &'static str, value: impl ToString, expected: &'static str) -> Self {
        SketchError::InvalidParam { param, value: value.to_string(), expected }
    }

    pub(crate) fn incompatible(field: &'static str, left: impl ToString, right: impl ToString) -> Self {
        SketchError::Incompatible { field, left: left.to_string(), right: right.to_string() }
    }

    pub(crate) fn malformed(kind: &'static str, detail: impl ToString) -> Self {
        SketchError::Malformed { kind, detail: detail.to_string() }
    }
}

/// `r`'s value, `None` where no estimate exists for the inputs (`Undefined`: two sketches
/// of empty sets). A query or a join treats such a pair as no match, as it treats an empty
/// document; any other error stays an error.
pub(crate) fn defined<T>(r: Result<T, SketchError>) -> Result<Option<T>, SketchError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(SketchError::Undefined { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
