//! The client addon's side of argument checking (the checks themselves are the
//! `statestore-node-convert` crate's, shared with the testing addon): a Promise method's
//! `options.signal`.

pub use statestore_node_convert::args::{arg, options, Arg, Named, Options};

use napi::bindgen_prelude::Object;
use napi::Env;

use crate::bridge::{self, Call};

/// The Promise method's `options.signal`, an `AbortSignal`: handed back (`Some`) when the call
/// came without a `NativeCall` the signal can cancel, so that the package makes one and calls
/// again; with one, a signal already aborted fails the call with core's `CANCELLED` (the
/// package's `AbortError`) before anything is sent. A `…Sync` twin takes none (its options
/// refused `signal` as unknown).
pub fn signal<'e>(
    env: &Env,
    options: &Options<'e>,
    call: Call,
) -> napi::Result<Option<Object<'e>>> {
    if bridge::blocking(call) {
        return Ok(None);
    }
    match (options.read("signal", Named::abort_signal)?, call) {
        (None, _) => Ok(None),
        (Some((signal, _)), None) => Ok(Some(signal)),
        (Some((_, true)), Some(_)) => Err(bridge::throw(env, &statestore::Error::Cancelled)),
        (Some((_, false)), Some(_)) => Ok(None),
    }
}

/// [`options()`] in a native operation, which returns the `signal` to the package when it must
/// call again with a `NativeCall` (see [`signal`]).
macro_rules! call_options {
    ($env:expr, $value:expr, $allowed:expr, $call:expr) => {{
        let signal = !$crate::bridge::blocking($call);
        let options = $crate::args::options($env, &$value, "options", $allowed, signal)?;
        if let Some(signal) = $crate::args::signal($env, &options, $call)? {
            return Ok(napi::bindgen_prelude::Either::B(signal));
        }
        options
    }};
}
pub(crate) use call_options;
