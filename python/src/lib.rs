//! The `statestore._native` Python extension module: translates Python calls into core calls
//! (`statestore::bindings`) and core results back. The public Python API is the pure Python
//! part of the package (`python/statestore/`); this module is its private engine.

mod call;
mod client;
mod convert;
mod errors;
mod options;
mod server;
mod shim;

/// The core pieces this binding builds on.
mod api {
    pub use crate::shim::*;
}

use pyo3::prelude::*;

/// `(code, name, class_name)` of every core error code but `OK`.
#[pyfunction]
fn error_codes() -> Vec<(i32, &'static str, &'static str)> {
    shim::ALL
        .iter()
        .map(|(c, n, cn)| (*c as i32, *n, *cn))
        .collect()
}

/// Names of the connection options `connect()` accepts as keywords.
#[pyfunction]
fn connect_options() -> Vec<&'static str> {
    api::CONNECT_OPTIONS.iter().map(|s| s.name).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<call::Call>()?;
    m.add_class::<client::Client>()?;
    m.add_class::<client::KeyPager>()?;
    m.add_class::<client::SetResult>()?;
    m.add_class::<client::Value>()?;
    m.add_class::<client::DeleteResult>()?;
    m.add_class::<convert::Version>()?;
    m.add_class::<server::Server>()?;
    m.add_function(wrap_pyfunction!(errors::_set_error_factory, m)?)?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(connect_options, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
