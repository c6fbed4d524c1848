//! The shared scenarios of `tests/scenarios` (format in `tests/scenarios/README.md`) and the
//! Rust runners: [`run_async::run_all`] for `statestore::Client` and
//! [`run_blocking::run_all`] for `statestore::blocking::Client`.

pub mod convert;
pub mod data;
mod exec;
pub mod run_async;
pub mod run_blocking;
pub mod runner;
pub mod scenario;
