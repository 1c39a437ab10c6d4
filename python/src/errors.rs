//! Maps sketchdb's errors onto the Python exception hierarchy defined in
//! `sketchdb/_errors.py`: `Error` and its subclasses `CorruptError`, `IncompatibleError`,
//! `BusyError`, `NotFoundError`; argument problems become `ValueError`. Every message is the
//! Rust error's `Display`, unchanged.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use sketchdb::{CodecError, Error, IndexError, QueryError, SketchError, StorageError};

/// The Python class an error maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Error,
    Corrupt,
    Incompatible,
    Busy,
    NotFound,
    ReadOnly,
    Value,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Error => "Error",
            Class::Corrupt => "CorruptError",
            Class::Incompatible => "IncompatibleError",
            Class::Busy => "BusyError",
            Class::NotFound => "NotFoundError",
            Class::ReadOnly => "ReadOnlyError",
            Class::Value => "ValueError",
        }
    }
}

fn sketch_class(e: &SketchError) -> Class {
    match e {
        SketchError::Incompatible { .. } => Class::Incompatible,
        SketchError::InvalidParam { .. } | SketchError::EmptySet | SketchError::Malformed { .. } => Class::Value,
        _ => Class::Error,
    }
}

fn index_class(e: &IndexError) -> Class {
    match e {
        IndexError::InvalidParam { .. } | IndexError::NotBanded { .. } => Class::Value,
        IndexError::Sketch(s) => sketch_class(s),
        IndexError::Storage(s) => storage_class(s),
        IndexError::Collection { source, .. } => index_class(source),
        _ => Class::Corrupt,
    }
}

fn storage_class(e: &StorageError) -> Class {
    match e {
        StorageError::Busy { .. } => Class::Busy,
        // A second open of a file this process or another holds.
        StorageError::Locked { .. } => Class::Busy,
        StorageError::ReadOnly { .. } => Class::ReadOnly,
        StorageError::UnknownCollection { .. } => Class::NotFound,
        StorageError::Incompatible { .. } | StorageError::UnsupportedFormat { .. } => Class::Incompatible,
        StorageError::InvalidCollectionName { .. }
        | StorageError::EmptyKey { .. }
        | StorageError::KeyTooLong { .. }
        | StorageError::ShinglesRequired { .. } => Class::Value,
        StorageError::NotSketchdb { .. }
        | StorageError::CorruptMeta { .. }
        | StorageError::CorruptPage { .. }
        | StorageError::CorruptRow { .. }
        | StorageError::Inconsistent { .. }
        | StorageError::EnginePanic { .. } => Class::Corrupt,
        _ => Class::Error,
    }
}

/// The class of a root error, by layer and variant.
pub(crate) fn class_of(e: &Error) -> Class {
    match e {
        Error::Sketch(s) => sketch_class(s),
        Error::Index(i) => index_class(i),
        Error::Query(q) => match q {
            QueryError::Unsupported { .. } | QueryError::InvalidParam { .. } => Class::Value,
            QueryError::UnknownKey { .. } => Class::NotFound,
            QueryError::Sketch(s) => sketch_class(s),
            QueryError::Index(i) => index_class(i),
            QueryError::Storage(s) => storage_class(s),
            _ => Class::Error,
        },
        Error::Codec(CodecError::Sketch { .. }) | Error::Codec(_) => Class::Corrupt,
        Error::Storage(s) => storage_class(s),
        _ => Class::Error,
    }
}

/// A Python exception of `class` carrying `msg`.
pub(crate) fn raise(class: Class, msg: String) -> PyErr {
    if class == Class::Value {
        return PyValueError::new_err(msg);
    }
    Python::attach(|py| {
        let made = py
            .import("sketchdb._errors")
            .and_then(|m| m.getattr(class.name()))
            .and_then(|cls| cls.call1((msg.clone(),)));
        match made {
            Ok(obj) => PyErr::from_value(obj),
            // The package's Python half is missing (module imported on its own).
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// Converts a sketchdb error to its Python exception.
pub(crate) fn to_py(e: Error) -> PyErr {
    raise(class_of(&e), e.to_string())
}

/// Converts a sketch-layer error to its Python exception.
pub(crate) fn sketch_to_py(e: SketchError) -> PyErr {
    raise(sketch_class(&e), e.to_string())
}

/// `.map_err` helpers.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

impl<T> IntoPy<T> for Result<T, SketchError> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(sketch_to_py)
    }
}
