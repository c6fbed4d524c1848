//! Core errors as the package's exception classes.
//!
//! The classes are built in Python (`statestore/_errors.py`) from the code table exported here,
//! so that they can also derive from `ValueError`, `TimeoutError` and so on; the package
//! registers a factory that turns (code, message, outcome_unknown) into an exception instance.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use statestore::Error;

static FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Registers the factory `f(code: int, message: str, outcome_unknown: bool) -> BaseException`.
#[pyfunction]
pub fn _set_error_factory(py: Python<'_>, factory: Py<PyAny>) -> PyResult<()> {
    FACTORY
        .set(py, factory)
        .map_err(|_| PyRuntimeError::new_err("the error factory is already set"))
}

/// The Python exception for a core error.
pub fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    let info = crate::api::ErrorInfo::from(error);
    match FACTORY.get(py) {
        Some(factory) => {
            match factory.call1(py, (info.code as i32, info.message, info.outcome_unknown)) {
                Ok(exception) => PyErr::from_value(exception.into_bound(py)),
                Err(e) => e,
            }
        }
        None => PyRuntimeError::new_err(info.message),
    }
}
