//! The `statestore._native` Python extension module: translates Python calls into core calls
//! (`statestore::bindings`) and core results back. The public Python API is the pure Python
//! part of the package (`python/statestore/`); this module is its private engine.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::multiple_unsafe_ops_per_block)]

mod client;
mod convert;
mod errors;
mod events;
mod finalizing;
mod lease;
mod logs;
mod operation;
mod options;
mod record;

/// The core pieces this binding builds on.
mod api {
    pub use statestore::bindings::*;

    /// Sets one connection setting by name (core parses and validates it).
    pub fn set_option(
        options: &mut statestore::ConnectOptions,
        name: &str,
        value: OptionValue,
    ) -> statestore::Result<()> {
        options.set_option(name, value)
    }
}

use pyo3::prelude::*;
use pyo3::PyClass;

/// `(code, name, class_name, category, description)` of every core error code but `OK`.
#[pyfunction]
fn error_codes() -> Vec<(i32, &'static str, &'static str, &'static str, &'static str)> {
    statestore::ErrorCode::ALL
        .iter()
        .filter(|code| **code != statestore::ErrorCode::Ok)
        .map(|code| {
            (
                *code as i32,
                code.name(),
                code.class_name(),
                code.category().name(),
                code.description(),
            )
        })
        .collect()
}

/// Core's SET conditions, each the names it accepts with its canonical name first
/// (`SetCondition::NAMES`).
#[pyfunction]
fn set_conditions() -> Vec<Vec<&'static str>> {
    statestore::SetCondition::NAMES
        .iter()
        .map(|(_, names)| names.to_vec())
        .collect()
}

/// `(name, kind, default, doc)` of every connection setting `connect()` accepts as keyword.
#[pyfunction]
fn connect_options() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    api::CONNECT_OPTIONS
        .iter()
        .map(|spec| (spec.name, spec.kind.name(), spec.default, spec.doc))
        .collect()
}

/// Core's vocabulary (`bindings::vocabulary`), `{name: [word, ...]}`: the stubs' `Literal`s
/// are checked against it.
#[pyfunction]
fn vocabulary() -> std::collections::HashMap<&'static str, Vec<&'static str>> {
    api::vocabulary(api::Case::Snake).into_iter().collect()
}

/// Raises the library's `InvalidArgumentError` naming `name` if `value` is not valid Unicode
/// (for the pure Python part's own text arguments, refused as the native ones are).
#[pyfunction]
fn check_text(value: &Bound<'_, pyo3::types::PyString>, name: &str) -> PyResult<()> {
    convert::text(value, name).map(drop)
}

/// The classes of `_native`, registered by the file that defines them (its `register`), each
/// as exported (a type users of `statestore` name: `_native.__all__`, which `statestore`
/// re-exports) or internal.
pub(crate) struct Classes<'a, 'py> {
    module: &'a Bound<'py, PyModule>,
    exported: Vec<&'static str>,
}

impl Classes<'_, '_> {
    /// Registers `T` as a type `statestore` exports.
    pub(crate) fn exported<T: PyClass>(&mut self) -> PyResult<&mut Self> {
        self.module.add_class::<T>()?;
        self.exported.push(<T as PyClass>::NAME);
        Ok(self)
    }

    /// Registers `T` for the pure Python part only.
    pub(crate) fn internal<T: PyClass>(&mut self) -> PyResult<&mut Self> {
        self.module.add_class::<T>()?;
        Ok(self)
    }
}

/// mimalloc for every Rust allocation of the module (Python's own objects keep Python's
/// allocator): the client allocates per request and per answer (docs/architecture.md#allocators).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let mut classes = Classes {
        module: m,
        exported: Vec::new(),
    };
    operation::register(&mut classes)?;
    client::register(&mut classes)?;
    convert::register(&mut classes)?;
    events::register(&mut classes)?;
    lease::register(&mut classes)?;
    logs::register(&mut classes)?;
    m.add_function(wrap_pyfunction!(logs::stop_logs, m)?)?;
    m.add_function(wrap_pyfunction!(finalizing::exiting, m)?)?;
    m.add_function(wrap_pyfunction!(check_text, m)?)?;
    m.add_function(wrap_pyfunction!(operation::panicking_call, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_set_error_factory, m)?)?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(connect_options, m)?)?;
    m.add_function(wrap_pyfunction!(set_conditions, m)?)?;
    m.add_function(wrap_pyfunction!(vocabulary, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Last: `add` appends every name to `__all__`, and `from ._native import *` in `statestore`
    // must take the exported classes only.
    m.setattr("__all__", classes.exported)?;
    Ok(())
}
