//! Python values to core types and back: keys and values as bytes, durations in seconds,
//! versions.

use std::time::Duration;

use bytes::Bytes;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use statestore::Hlc;

/// `str` (UTF-8), `bytes`, `bytearray` or `memoryview`, copied into `Bytes`.
pub struct BytesArg(pub Bytes);

impl<'a, 'py> FromPyObject<'a, 'py> for BytesArg {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = ob.cast::<PyBytes>() {
            return Ok(BytesArg(Bytes::copy_from_slice(b.as_bytes())));
        }
        if let Ok(s) = ob.cast::<PyString>() {
            return Ok(BytesArg(Bytes::copy_from_slice(s.to_cow()?.as_bytes())));
        }
        if let Ok(b) = ob.cast::<PyByteArray>() {
            return Ok(BytesArg(Bytes::from(b.to_vec())));
        }
        // The buffer protocol is not part of the abi3 API before 3.11: let Python copy.
        let memoryview = ob.py().import("builtins")?.getattr("memoryview")?;
        if ob.is_instance(&memoryview)? {
            let copy = ob.call_method0("tobytes")?;
            let copy = copy.cast::<PyBytes>()?;
            return Ok(BytesArg(Bytes::copy_from_slice(copy.as_bytes())));
        }
        Err(PyTypeError::new_err(format!(
            "expected str, bytes, bytearray or memoryview, got {}",
            ob.get_type().name()?
        )))
    }
}

/// A number of seconds (`int`/`float`) or a `datetime.timedelta`, read as a duration by core's
/// rule ([`statestore::bindings::duration`]) once the argument's name is known ([`secs`]).
pub struct Secs(f64);

impl<'a, 'py> FromPyObject<'a, 'py> for Secs {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if ob.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err(
                "expected seconds (int or float) or a datetime.timedelta, got bool",
            ));
        }
        if ob.hasattr("total_seconds")? {
            return ob.call_method0("total_seconds")?.extract().map(Secs);
        }
        ob.extract().map(Secs).map_err(|_| {
            PyTypeError::new_err(format!(
                "expected seconds (int or float) or a datetime.timedelta, got {}",
                ob.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })
    }
}

/// The duration argument `name` (seconds or timedelta): a wrong type is a `TypeError`, a value
/// that is no duration (negative, NaN) the library's `InvalidArgumentError`.
pub fn secs(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<Duration> {
    let Secs(seconds) = ob.extract::<Secs>().map_err(|e| named(ob.py(), name, e))?;
    statestore::bindings::duration::seconds(name, seconds)
        .map_err(|e| crate::errors::to_py(ob.py(), &e))
}

/// A key's version (a hybrid logical clock), also used as fencing token: immutable, ordered,
/// hashable; `str()` gives the service's text form and `Version(text)` parses it.
#[pyclass(
    frozen,
    eq,
    ord,
    hash,
    str,
    from_py_object,
    module = "statestore._native"
)]
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub Hlc);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Version {
    fn parse(py: Python<'_>, text: &str, argument: &str) -> PyResult<Self> {
        statestore::bindings::version(text, argument)
            .map(Version)
            .map_err(|e| crate::errors::to_py(py, &e))
    }
}

#[pymethods]
impl Version {
    /// Parses the text form (`wallMs:counter:node`).
    #[new]
    fn new(text: &Bound<'_, PyString>) -> PyResult<Self> {
        Self::parse(text.py(), &self::text(text, "text")?, "text")
    }

    /// Milliseconds since the Unix epoch.
    #[getter]
    fn wall_ms(&self) -> u64 {
        self.0.wall_ms
    }

    /// Logical counter.
    #[getter]
    fn counter(&self) -> u64 {
        self.0.counter
    }

    /// Node id of the clock that issued it.
    #[getter]
    fn node(&self) -> &str {
        &self.0.node
    }

    fn __repr__(&self) -> String {
        format!("Version('{}')", self.0)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, (String,))> {
        Ok((
            py.get_type::<Version>().into_any().unbind(),
            (self.0.to_string(),),
        ))
    }
}

pub fn bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

/// Bytes from the service as `bytes`, or `str` when the client decodes responses.
pub fn out_bytes(py: Python<'_>, b: &[u8], decode: bool) -> PyResult<Py<PyAny>> {
    let bytes = bytes(py, b);
    if decode {
        Ok(bytes.call_method1("decode", ("utf-8",))?.unbind())
    } else {
        Ok(bytes.into_any().unbind())
    }
}

/// Names the parameter in an argument's conversion error (`argument 'key': expected ...`):
/// a wrong type stays a `TypeError`, a wrong value becomes the library's
/// `InvalidArgumentError` (a `ValueError` too), as core's own argument checks give.
pub fn named(py: Python<'_>, name: &str, error: PyErr) -> PyErr {
    let message = format!("argument '{name}': {}", error.value(py));
    if error.is_instance_of::<PyValueError>(py) {
        invalid(py, message)
    } else {
        PyTypeError::new_err(message)
    }
}

/// The library's `InvalidArgumentError` with `message`.
pub fn invalid(py: Python<'_>, message: String) -> PyErr {
    crate::errors::to_py(py, &statestore::Error::InvalidArgument(message))
}

/// A `str` argument as UTF-8. A string that is not valid Unicode (a lone surrogate, which has
/// no UTF-8 form) is core's invalid-argument error naming the argument, as in every binding,
/// not a bare `UnicodeEncodeError`.
pub fn text<'a>(s: &'a Bound<'_, PyString>, name: &str) -> PyResult<std::borrow::Cow<'a, str>> {
    s.to_cow()
        .map_err(|_| crate::errors::to_py(s.py(), &crate::api::not_unicode(name)))
}

/// A key or value argument.
pub fn bytes_arg(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<Bytes> {
    if let Ok(s) = ob.cast::<PyString>() {
        return Ok(Bytes::copy_from_slice(text(s, name)?.as_bytes()));
    }
    ob.extract::<BytesArg>()
        .map(|b| b.0)
        .map_err(|e| named(ob.py(), name, e))
}

/// An optional duration argument (seconds or timedelta; `None` = not given).
pub fn secs_arg(ob: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Duration>> {
    match ob {
        Some(ob) if !ob.is_none() => secs(ob, name).map(Some),
        _ => Ok(None),
    }
}

/// An optional version argument (a `Version`, or its text form).
pub fn version_arg(ob: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Hlc>> {
    match ob {
        Some(ob) if !ob.is_none() => {
            if let Ok(v) = ob.cast::<Version>() {
                return Ok(Some(v.get().0.clone()));
            }
            if let Ok(s) = ob.cast::<PyString>() {
                return Version::parse(ob.py(), &text(s, name)?, name).map(|v| Some(v.0));
            }
            Err(named(
                ob.py(),
                name,
                PyTypeError::new_err(format!(
                    "expected statestore.Version, got {}",
                    ob.get_type().name()?
                )),
            ))
        }
        _ => Ok(None),
    }
}

/// Registers this file's classes in `_native` (a new class is added here, next to its
/// definition).
pub(crate) fn register(classes: &mut crate::Classes<'_, '_>) -> pyo3::PyResult<()> {
    classes.exported::<Version>()?;
    Ok(())
}
