//! Keyword-only arguments read straight from the call's keyword dict, for the hot query
//! methods (`Collection.query`, `top_k`, `hamming`).
//!
//! Under the abi3 floor of Python 3.9 a method receives its keywords as a dict, and PyO3's
//! general parser reads each keyword's name through a new UTF-8 bytes object before comparing
//! it with every parameter name (about a thousand instructions per call). A method declared
//! `(*args, **kwargs)` gets the tuple and dict as they are; [`Keywords::parse`] matches each
//! name by identity against the interned parameter names (the interpreter interns the names
//! written in a call), falling back to comparing the text, and gives the same `TypeError`s
//! as the generated parser for positional arguments and unknown names.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};

/// The keyword-only parameter names of one method, interned once per interpreter.
pub(crate) struct Keywords<const N: usize> {
    method: &'static str,
    names: [&'static str; N],
    interned: PyOnceLock<[Py<PyString>; N]>,
}

/// The values given for a method's parameters, by position in its name list.
pub(crate) struct Given<'py, const N: usize> {
    names: [&'static str; N],
    values: [Option<Bound<'py, PyAny>>; N],
}

impl<const N: usize> Keywords<N> {
    /// The parameters `names` of `method` (as Python names it: `Collection.query`).
    pub(crate) const fn new(method: &'static str, names: [&'static str; N]) -> Self {
        Keywords { method, names, interned: PyOnceLock::new() }
    }

    /// The keyword arguments of one call: no positional argument, every name one of ours.
    pub(crate) fn parse<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Given<'py, N>> {
        let py = args.py();
        if !args.is_empty() {
            return Err(PyTypeError::new_err(format!(
                "{}() takes 0 positional arguments but {} {} given (every argument is a keyword: {}=...)",
                self.method,
                args.len(),
                if args.len() == 1 { "was" } else { "were" },
                self.names[0]
            )));
        }
        let mut values = [const { None }; N];
        if let Some(kwargs) = kwargs {
            let interned = self.interned.get_or_init(py, || self.names.map(|n| PyString::intern(py, n).unbind()));
            for (name, value) in kwargs.iter() {
                let i = match interned.iter().position(|n| n.as_ptr() == name.as_ptr()) {
                    Some(i) => i,
                    None => self.by_text(&name)?,
                };
                values[i] = Some(value);
            }
        }
        Ok(Given { names: self.names, values })
    }

    /// The position of a keyword name that is not the interned string itself (built at run
    /// time, e.g. `**{"ke" + "y": ...}`), or the `TypeError` of an unknown name.
    fn by_text(&self, name: &Bound<'_, PyAny>) -> PyResult<usize> {
        let text = name.cast::<PyString>().map_err(|_| PyTypeError::new_err("keywords must be strings"))?.to_cow()?;
        self.names.iter().position(|n| *n == text).ok_or_else(|| {
            PyTypeError::new_err(format!("{}() got an unexpected keyword argument '{text}'", self.method))
        })
    }
}

impl<'py, const N: usize> Given<'py, N> {
    /// The value of parameter `i` as it was given (None when left out).
    pub(crate) fn raw(&self, i: usize) -> Option<&Bound<'py, PyAny>> {
        self.values[i].as_ref()
    }

    /// Parameter `i` converted, or None when left out or given as None.
    pub(crate) fn opt<T: for<'a> FromPyObject<'a, 'py, Error = PyErr>>(&self, i: usize) -> PyResult<Option<T>> {
        match &self.values[i] {
            Some(v) if !v.is_none() => self.convert(i, v).map(Some),
            _ => Ok(None),
        }
    }

    /// Parameter `i` converted, or `default` when left out.
    pub(crate) fn or<T: for<'a> FromPyObject<'a, 'py, Error = PyErr>>(&self, i: usize, default: T) -> PyResult<T> {
        match &self.values[i] {
            Some(v) => self.convert(i, v),
            None => Ok(default),
        }
    }

    /// The `TypeError` of a value of the wrong type names the parameter, as PyO3's parser's does.
    fn convert<T: for<'a> FromPyObject<'a, 'py, Error = PyErr>>(&self, i: usize, v: &Bound<'py, PyAny>) -> PyResult<T> {
        v.extract::<T>().map_err(|e| {
            let py = v.py();
            if e.is_instance_of::<PyTypeError>(py) {
                let err = PyTypeError::new_err(format!("argument '{}': {}", self.names[i], e.value(py)));
                err.set_cause(py, Some(e));
                err
            } else {
                e
            }
        })
    }
}
