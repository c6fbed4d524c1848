//! Which thread runs a callback of this library: what close, free and shutdown must refuse
//! there, and how an inline completion avoids running inside the `_async` function that
//! started its call.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use statestore_core::bindings::Pending;
use statestore_core::{Error, Result};

thread_local! {
    /// Set while a callback of this library runs on this thread.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
    /// Set while an inline callback runs on this (runtime) thread.
    static IN_INLINE_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Whether a callback of this library runs on this thread.
pub(crate) fn in_callback() -> bool {
    IN_CALLBACK.with(Cell::get)
}

/// Runs a C callback (through `call`): marks the thread as inside a callback and keeps any
/// panic of the translation code from unwinding into the dispatcher.
pub(crate) fn run_callback(call: impl FnOnce()) {
    let outer = IN_CALLBACK.with(|c| c.replace(true));
    let _ = catch_unwind(AssertUnwindSafe(call));
    IN_CALLBACK.with(|c| c.set(outer));
}

/// Close and free wait for the runtime threads; an inline callback runs on one of them.
pub(crate) fn refuse_in_inline_callback() -> Result<()> {
    if IN_INLINE_CALLBACK.with(Cell::get) {
        return Err(Error::Runtime(
            "a client cannot be closed or freed in an inline callback (STATESTORE_CALLBACKS_INLINE)"
                .into(),
        ));
    }
    Ok(())
}

/// Delivers `pending`'s result to `complete` on the runtime thread that completes the call
/// (`STATESTORE_CALLBACKS_INLINE`); core's bridge runs it on another runtime thread instead
/// when the call completes inside the `_async` function, where no callback may run.
pub(crate) fn on_complete_inline<T: Send + 'static>(
    pending: Pending<T>,
    complete: impl FnOnce(Result<T>) + Send + 'static,
) {
    pending.on_complete_inline(move |result| {
        let outer = IN_INLINE_CALLBACK.with(|c| c.replace(true));
        complete(result);
        IN_INLINE_CALLBACK.with(|c| c.set(outer));
    });
}
