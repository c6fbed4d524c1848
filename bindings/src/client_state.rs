//! A client handle's state and its live calls: every call of a client, blocking or `_async`,
//! is a `Pending` of core's bridge whose `Canceller` the client records, so that close ends
//! them all the same way and waits for their callbacks.

use std::collections::HashMap;
use std::ffi::CString;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use statestore_core::bindings::{Canceller, CompletionQueue, Pending};
use statestore_core::runtime;
use statestore_core::{Client, Error, Result};

use crate::callbacks::{in_callback, on_complete_inline, refuse_in_inline_callback, run_callback};
use crate::options::CallbackMode;
use crate::status::c_string;

/// Where a client's `_async` completions run.
pub(crate) enum Completions {
    /// On the dispatcher thread.
    Dispatcher,
    /// Where the call completed (`STATESTORE_CALLBACKS_INLINE`).
    Inline,
    /// In this queue, run by the program's own loop (`STATESTORE_CALLBACKS_LOOP`).
    Loop(CompletionQueue),
}

impl Completions {
    /// The delivery `mode` asks for; a loop needs its queue (a socket pair) made now.
    pub(crate) fn new(mode: CallbackMode) -> Result<Self> {
        Ok(match mode {
            CallbackMode::Dispatcher => Self::Dispatcher,
            CallbackMode::Inline => Self::Inline,
            CallbackMode::Loop => Self::Loop(CompletionQueue::new()?),
        })
    }
}

/// The live calls of one client, blocking and `_async` alike: what close cancels (through
/// each call's `Pending`) and waits for.
#[derive(Default)]
struct Calls {
    next: u64,
    live: HashMap<u64, Canceller>,
}

/// A client handle's state.
pub(crate) struct ClientState {
    pub(crate) client: Client,
    /// The MQTT client id as C borrows it (`statestore_client_id()`).
    pub(crate) client_id: CString,
    /// Where `_async` completions run.
    completions: Completions,
    calls: Mutex<Calls>,
    idle: Condvar,
    closing: AtomicBool,
    /// The process the client was created in: its connection does not survive `fork()`.
    pid: u32,
}

impl ClientState {
    /// The state of a new client handle for `client`.
    pub(crate) fn new(client: Client, completions: Completions) -> Self {
        Self {
            client_id: c_string(client.client_id()),
            client,
            completions,
            calls: Mutex::default(),
            idle: Condvar::new(),
            closing: AtomicBool::new(false),
            pid: runtime::current_pid(),
        }
    }

    fn lock_calls(&self) -> MutexGuard<'_, Calls> {
        // Calls is a map edited in single statements: a poisoned lock is still consistent.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this is the process the client was created in. Calls need no such check (core
    /// refuses a call of a client inherited across `fork()`), but core's close does not: in a
    /// child it would wait out its grace period for tasks of the parent's runtime, then
    /// report success.
    pub(crate) fn created_here(&self) -> bool {
        self.pid == runtime::current_pid()
    }

    /// Makes the `Pending` of a call of this client and records its canceller, so that close
    /// ends it; once the client is closing, the call is not made and completes with
    /// `Error::Closed`. Unregister the id once the result is delivered.
    fn track<T, F>(&self, future: F) -> (Pending<T>, u64)
    where
        T: Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let mut calls = self.lock_calls();
        let pending = if self.closing.load(Ordering::Acquire) {
            Pending::ready(Err(Error::Closed))
        } else {
            Pending::spawn(future)
        };
        calls.next += 1;
        let id = calls.next;
        calls.live.insert(id, pending.canceller());
        (pending, id)
    }

    fn unregister(&self, id: u64) {
        let mut calls = self.lock_calls();
        calls.live.remove(&id);
        if calls.live.is_empty() {
            self.idle.notify_all();
        }
    }

    /// A call cancelled by `close` reports that the client closed.
    fn closed_if_cancelled<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(Error::Cancelled) if self.closing.load(Ordering::Acquire) => Err(Error::Closed),
            other => other,
        }
    }

    /// Runs `future` to completion on the calling thread (within the library's runtime) and
    /// returns its result, or `Error::Closed` when the client closes first.
    pub(crate) fn call<T, F>(&self, future: F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let (pending, id) = self.track(future);
        let result = pending.wait();
        self.unregister(id);
        self.closed_if_cancelled(result)
    }

    /// The queue of a client whose completions the program's loop runs
    /// (`STATESTORE_CALLBACKS_LOOP`).
    pub(crate) fn completion_queue(&self) -> Result<&CompletionQueue> {
        match &self.completions {
            Completions::Loop(queue) => Ok(queue),
            _ => Err(Error::InvalidArgument(
                "this client's callbacks run on library threads: connect it with \
                 statestore_options_set_callback_mode(options, STATESTORE_CALLBACKS_LOOP) to run \
                 them from your own loop"
                    .into(),
            )),
        }
    }

    /// Runs `future` on the library's runtime; `done` runs exactly once with the result
    /// (`STATESTORE_ERR_CLOSED` if the client closes first), where the client's completions
    /// run ([`Completions`]). Every such call is tracked, so that close waits for its callback.
    pub(crate) fn call_async<T, F>(
        self: &Arc<Self>,
        future: F,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) where
        T: Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        self.call_async_on(future, done, true)
    }

    /// [`ClientState::call_async`]; `done` runs on the dispatcher thread instead of inline
    /// unless `inline_allowed` (a callback that may block).
    pub(crate) fn call_async_on<T, F>(
        self: &Arc<Self>,
        future: F,
        done: impl FnOnce(Result<T>) + Send + 'static,
        inline_allowed: bool,
    ) where
        T: Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let (pending, id) = self.track(future);
        let state = self.clone();
        let complete = move |result: Result<T>| {
            let result = state.closed_if_cancelled(result);
            run_callback(|| done(result));
            state.unregister(id);
        };
        match &self.completions {
            Completions::Inline if inline_allowed => on_complete_inline(pending, complete),
            Completions::Loop(queue) => pending.on_complete_in(queue, complete),
            _ => pending.on_complete(complete),
        }
    }

    /// Closes the connection, completes every pending call with `STATESTORE_ERR_CLOSED`, and
    /// (unless called from a callback, which would wait for itself) waits until every
    /// callback has run.
    pub(crate) fn close(&self) -> Result<()> {
        refuse_in_inline_callback()?;
        if !self.created_here() {
            return Err(Error::Runtime(
                "this client was created before fork() and its connection belongs to the parent \
                 process: create a new client in the child"
                    .into(),
            ));
        }
        // Before the client is marked closing: a close refused here leaves it open.
        runtime::ensure_blocking_allowed()?;
        let first = {
            let _calls = self.lock_calls();
            !self.closing.swap(true, Ordering::AcqRel)
        };
        if first {
            let client = self.client.clone();
            // Not tracked: the close itself must not be cancelled below.
            Pending::spawn(async move { client.close().await }).wait()?;
        }
        let live: Vec<Canceller> = self.lock_calls().live.values().cloned().collect();
        for call in live {
            call.cancel();
        }
        if in_callback() {
            return Ok(());
        }
        if let Completions::Loop(queue) = &self.completions {
            // Nothing else runs this client's callbacks: run them here as they arrive.
            loop {
                queue.run_ready();
                if self.lock_calls().live.is_empty() {
                    return Ok(());
                }
                // A bounded wait: a call may unregister without queueing anything.
                queue.wait_nonempty(std::time::Duration::from_millis(50));
            }
        }
        let mut calls = self.lock_calls();
        while !calls.live.is_empty() {
            calls = self.idle.wait(calls).unwrap_or_else(|e| e.into_inner());
        }
        Ok(())
    }
}
