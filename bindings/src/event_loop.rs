//! A client's `_async` completions run from the program's own event loop
//! (`STATESTORE_CALLBACKS_LOOP`): the descriptor to watch and the call that runs what is ready.

use std::ffi::c_int;

use statestore_core::Error;

use crate::callbacks::in_callback;
use crate::client::{statestore_client, CLIENTS};
use crate::status::{entry, statestore_status};
use crate::util::Out;

/// The file descriptor that is readable while `_async` completions of `client` wait to be
/// run by `statestore_dispatch()`: watch it for reading in poll, epoll, select, libuv's
/// `uv_poll_t` or any loop of your own. The client must have been connected with
/// `STATESTORE_CALLBACKS_LOOP` (`STATESTORE_ERR_INVALID_ARGUMENT` otherwise). The
/// descriptor belongs to the client, stays the same for its life and is closed by
/// `statestore_client_free()`: do not read, write or close it.
///
/// # Safety
/// `fd` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_completion_fd(
    client: *const statestore_client,
    fd: *mut c_int,
) -> statestore_status {
    // SAFETY: `fd` is NULL or writable during this call (this function's contract).
    let fd = unsafe { Out::new(fd) };
    entry(|| {
        let state = CLIENTS.get(client, "client")?;
        fd.put("fd", state.completion_queue()?.fd())
    })
}

/// Runs, on the calling thread, every `_async` completion of `client` that is ready, in the
/// order the calls completed, and writes how many ran to `ran` (may be NULL). Completions
/// that arrive meanwhile wait for the next call (the descriptor is readable again then). Call
/// it when `statestore_completion_fd()` is readable; a call with nothing ready returns at once
/// with 0. The client must have been connected with `STATESTORE_CALLBACKS_LOOP`; it may not be
/// called from inside a callback of this library (`STATESTORE_ERR_RUNTIME`).
///
/// # Safety
/// `ran` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_dispatch(
    client: *const statestore_client,
    ran: *mut usize,
) -> statestore_status {
    // SAFETY: `ran` is NULL or writable during this call (this function's contract).
    let ran = unsafe { Out::new(ran) };
    entry(|| {
        let state = CLIENTS.get(client, "client")?;
        let queue = state.completion_queue()?;
        if in_callback() {
            return Err(Error::Runtime(
                "statestore_dispatch() was called inside a callback of this library: return \
                 from the callback and call it from your loop"
                    .into(),
            ));
        }
        ran.set(queue.run_ready());
        Ok(())
    })
}
