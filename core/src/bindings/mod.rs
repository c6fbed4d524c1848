//! What the C, Python and Node bindings share, so that each stays a thin translation of types.
//!
//! - [`Pending`]: one bridge from a core future to any host: block on it ([`Pending::wait`],
//!   or in slices with [`Pending::wait_timeout`] to check for signals), get a callback
//!   ([`Pending::on_complete`], run on the library's dispatcher thread, or
//!   [`Pending::on_complete_in`] a [`CompletionQueue`] that the host's own event loop runs),
//!   await it, or cancel it.
//! - [`lost_within`]: `lost(timeout)` of a lease, lock guard or election, with one meaning of
//!   the timeout in every language.
//! - [`Event`] and [`EventStream`]: key notifications, leadership changes and lease losses as
//!   one flat event type, pulled (blocking or async) or pushed to a sink.
//! - [`ErrorInfo`] and the code table on [`ErrorCode`](crate::ErrorCode):
//!   errors as data, from which the C enum, the Python exception classes and the Node `code`
//!   strings are derived.
//! - [`CONNECT_OPTIONS`] and [`ConnectOptions::set_option`](crate::ConnectOptions::set_option):
//!   connection settings by name, with one table of names, `AIO_*` aliases, kinds, defaults and
//!   docs.
//! - [`HandleTable`]: ids with generations for handles given to C, so that a stale or freed
//!   handle is an error code rather than memory corruption.
//! - [`logs`]: the library's `tracing` records forwarded to the host's logger.
//! - [`duration`]: numbers of seconds or milliseconds from a host as durations and deadlines,
//!   by one rule (what a negative, NaN, infinite or huge value means).
//! - [`set_condition`], [`version`], [`compare_versions`] and the `names` of
//!   [`EventKind`], [`DeleteOutcome`](crate::DeleteOutcome),
//!   [`LeaseState`](crate::lease::LeaseState) and [`LossReason`](crate::lease::LossReason): one
//!   vocabulary, which every language reads rather than spelling it again.
//! - [`catch_panic`]: a panic as an error, never unwinding into a host.
//! - [`shutdown`]: the library's threads ended and joined, for hosts that must leave none.
//!
//! Also used by bindings from elsewhere in the crate: [`crate::lease::UpdateTxn`] (a lock
//! update in two phases, for callbacks that cannot be Rust closures) and
//! [`crate::runtime`] (the one internal runtime).

mod dispatch;
pub mod duration;
mod events;
mod handles;
pub mod logs;
mod loss;
use crate::options_by_name as options;
mod pending;
mod vocab;

pub use crate::error::{ErrorCategory, ErrorInfo};
pub use dispatch::CompletionQueue;
pub use events::{Event, EventKind, EventStream};
pub use handles::HandleTable;
pub use loss::lost_within;
pub use options::{OptionKind, OptionSpec, OptionValue, CONNECT_OPTIONS};
pub use pending::{Canceller, Pending, Started};
pub use vocab::{compare_versions, set_condition, version, vocabulary, word, Case};

/// The error for a text argument that is not valid Unicode (a string holding a lone UTF-16
/// surrogate, which has no UTF-8 form). Every binding refuses such a string with this error
/// rather than sending a replacement character (a different key than the caller meant).
pub fn not_unicode(name: &str) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "{name}: the string is not valid Unicode (it holds a lone surrogate, which has no UTF-8 \
         form); pass valid text, or bytes where the argument takes bytes"
    ))
}

/// Runs `f`, turning a panic into [`Error::Internal`](crate::Error::Internal) naming `what`
/// (with the panic's message): a panic must never unwind into a host language, where it would
/// abort the process (C, Node) or raise an exception that `except Exception` does not catch
/// (Python). [`Pending`] guards every call with it.
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> T) -> crate::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        crate::Error::Internal(format!("{what} panicked: {message}"))
    })
}

/// Ends the library's threads in this process and joins them: the internal runtime's (its tasks
/// are dropped; blocking jobs get up to `grace`) and the dispatcher's (after the callbacks
/// already queued). The next call that needs them starts them again. The host makes sure
/// nothing of the library is in use: a client still open loses its connection's tasks.
///
/// Fails with [`Error::Runtime`](crate::Error::Runtime), changing nothing, on the dispatcher
/// thread (inside a callback), on the runtime's own threads, and while another thread holds the
/// runtime (building it, or spawning on it); a call another thread starts meanwhile fails.
pub fn shutdown(grace: std::time::Duration) -> crate::Result<()> {
    if dispatch::on_dispatcher() {
        return Err(crate::Error::Runtime(
            "the library cannot be shut down from one of its callbacks, which run on its own \
             threads: shut down after the callback returns"
                .into(),
        ));
    }
    crate::runtime::shutdown(grace)?;
    dispatch::stop();
    Ok(())
}
