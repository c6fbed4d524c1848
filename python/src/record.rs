//! The result records (`SetResult`, `Value`, `DeleteResult`, `AcquireResult`, `Loss`, `Event`,
//! `ConnectionEvent`) behave as named tuples do: equal when their fields are, hashable, and
//! picklable. Each has a constructor taking its fields in order (what a test builds an expected
//! result with, and what unpickling calls), and gives them back through [`Record::fields`].

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple, PyType};
use pyo3::PyClass;

use crate::api::{self, Case};
use crate::errors::to_py;

/// The `#[pymethods]` block of a [`Record`] class: the methods given, then `__eq__`,
/// `__hash__` and `__reduce__` by its fields.
macro_rules! record_methods {
    (impl $class:ident { $($methods:tt)* }) => {
        #[pyo3::pymethods]
        impl $class {
            $($methods)*

            fn __eq__(
                &self,
                other: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                $crate::record::eq(self, other)
            }

            fn __hash__(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<isize> {
                $crate::record::hash(self, py)
            }

            fn __reduce__<'py>(
                slf: &pyo3::Bound<'py, Self>,
            ) -> pyo3::PyResult<$crate::record::Reduced<'py>> {
                $crate::record::reduce(slf)
            }
        }
    };
}
pub(crate) use record_methods;

/// A result record: its fields, in its constructor's order.
pub trait Record: PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync {
    /// The fields, as the constructor takes them.
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>>;
}

/// `record == other`: `NotImplemented` for another class, else whether the fields are equal.
pub fn eq<R: Record>(record: &R, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let py = other.py();
    let Ok(other) = other.cast::<R>() else {
        return Ok(py.NotImplemented());
    };
    let equal = record.fields(py)?.eq(other.get().fields(py)?)?;
    Ok(pyo3::types::PyBool::new(py, equal)
        .to_owned()
        .into_any()
        .unbind())
}

/// `hash(record)`: the hash of its fields.
pub fn hash<R: Record>(record: &R, py: Python<'_>) -> PyResult<isize> {
    record.fields(py)?.hash()
}

/// What `__reduce__` gives: the class and the arguments of its constructor.
pub type Reduced<'py> = (Bound<'py, PyType>, Bound<'py, PyTuple>);

/// `record.__reduce__()`: its class and fields, so that pickle rebuilds it by the constructor.
pub fn reduce<'py, R: Record>(record: &Bound<'py, R>) -> PyResult<Reduced<'py>> {
    Ok((
        record.as_any().get_type(),
        record.get().fields(record.py())?,
    ))
}

/// A constructor's argument `argument` that must be one of the words of core's vocabulary
/// `list` (`delete_outcome`, `event_kind`, ...).
pub fn word(py: Python<'_>, list: &str, value: &str, argument: &str) -> PyResult<&'static str> {
    api::word(list, Case::Snake, value, argument).map_err(|e| to_py(py, &e))
}

/// A constructor's argument `argument` that holds a key, value or name: `bytes` or `str`, as
/// the library gives them.
pub fn bytes_or_str(ob: Bound<'_, PyAny>, argument: &str) -> PyResult<Py<PyAny>> {
    if ob.is_instance_of::<PyBytes>() || ob.is_instance_of::<PyString>() {
        return Ok(ob.unbind());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "argument '{argument}': expected bytes or str, got {}",
        ob.get_type().name()?
    )))
}

/// [`bytes_or_str`] of an optional argument.
pub fn optional_bytes_or_str(
    ob: Option<Bound<'_, PyAny>>,
    argument: &str,
) -> PyResult<Option<Py<PyAny>>> {
    ob.filter(|o| !o.is_none())
        .map(|o| bytes_or_str(o, argument))
        .transpose()
}
