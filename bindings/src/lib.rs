//! The C ABI of the statestore client: `libstatestore` and `include/statestore.h`.
//!
//! This crate only translates: C arguments into core values, core results into C structs,
//! errors into status codes, completions into C callbacks. Behaviour (requests, timeouts,
//! reconnection, leases, the completion bridge, the event streams, handle ids) lives in the
//! core crate (`statestore::bindings`). The header is generated from these items by cbindgen
//! (`bindings/cbindgen.toml`); every doc comment here is header documentation.
#![allow(non_camel_case_types)]
// C hands this crate raw pointers: every unsafe operation says why it is sound where it
// happens (one operation per block), and every unsafe function states its contract in a
// `# Safety` section, which for the exported ones is the header's "Safety" paragraph. The
// contracts shared by many functions are stated once, in `util` (`bytes`, `string`,
// `Out::new`).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::multiple_unsafe_ops_per_block)]
#![deny(clippy::missing_safety_doc)]

mod batch;
mod callbacks;
mod client;
mod client_state;
mod event_loop;
mod lease;
mod logs;
mod observe;
mod options;
mod reply;
mod status;
mod util;

use std::ffi::c_char;
use std::time::Duration;

use crate::status::entry;

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

/// How long `statestore_shutdown()` lets the library's blocking jobs (a name lookup, a file
/// read) finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Ends the library's threads and waits until they have exited, for a program that must leave
/// no thread behind: call it last, once every handle other than options is freed (clients,
/// observations, locks, guards, leases, elections). A leak checker then finds nothing of the
/// library's but memory still reachable (valgrind: no "definitely" or "possibly lost" block,
/// without suppressions).
/// Later calls work: the library starts its threads again when it next needs them.
///
/// Fails with `STATESTORE_ERR_RUNTIME`, changing nothing, while a handle other than options
/// is live (the message counts them) and inside any callback of this library. Call it when no
/// other thread uses the library: a call that another thread is starting meanwhile (a
/// connect) fails.
#[no_mangle]
pub extern "C" fn statestore_shutdown() -> statestore_status {
    entry(|| {
        if callbacks::in_callback() {
            return Err(statestore_core::Error::Runtime(
                "statestore_shutdown cannot be called from a callback of this library: call it \
                 after the callback returns"
                    .into(),
            ));
        }
        let live: Vec<String> = [
            client::CLIENTS.live(),
            observe::OBSERVATIONS.live(),
            lease::LOCKS.live(),
            lease::GUARDS.live(),
            lease::LEASES.live(),
            lease::ELECTIONS.live(),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !live.is_empty() {
            return Err(statestore_core::Error::Runtime(format!(
                "statestore_shutdown: {} still live: free them first",
                live.join(", ")
            )));
        }
        statestore_core::bindings::shutdown(SHUTDOWN_GRACE)
    })
}
