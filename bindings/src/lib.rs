//! The C ABI of the statestore client: `libstatestore` and `include/statestore.h`.
//!
//! This crate only translates: C arguments into core values, core results into C structs,
//! errors into status codes, completions into C callbacks. Behaviour (requests, timeouts,
//! reconnection, leases, the completion bridge, the event streams, handle ids) lives in the
//! core crate (`statestore::bindings`). The header is generated from these items by cbindgen
//! (`bindings/cbindgen.toml`); every doc comment here is header documentation.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // each function's `# Safety` section is in its doc.

mod client;
mod lease;
mod logs;
mod observe;
mod options;
mod reply;
mod status;
mod util;

use std::ffi::c_char;

pub use client::*;
pub use lease::*;
pub use logs::*;
pub use observe::*;
pub use options::*;
pub use status::*;

/// The version of the library loaded at run time, `"MAJOR.MINOR.PATCH"` (e.g. `"0.1.0"`): a
/// static string, never free it. The header's `STATESTORE_VERSION` (and its `_MAJOR`, `_MINOR`,
/// `_PATCH` parts) is the version the program was compiled against; both come from the
/// workspace version in the root `Cargo.toml`. A program can compare them to detect a
/// library older than the header it was compiled with.
#[no_mangle]
pub extern "C" fn statestore_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
