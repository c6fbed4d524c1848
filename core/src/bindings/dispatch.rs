//! The dispatcher thread: where completion callbacks and pushed events run.
//!
//! Callbacks must not run on a tokio worker: a host callback may block (a C function calling a
//! blocking API, Python waiting for the GIL) and would stall the runtime that completes every
//! other call. One thread keeps callbacks in completion order; like the runtime it is keyed by
//! process id, so a forked child starts its own.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use once_cell::sync::Lazy;

/// Work for the dispatcher thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The dispatcher's queue and the process it was started in, and its thread (to join it at
/// [`stop`]).
type Owned = (u32, Sender<Job>, Option<JoinHandle<()>>);

thread_local! {
    /// Set on the dispatcher thread, which cannot wait for its own end.
    static ON_DISPATCHER: Cell<bool> = const { Cell::new(false) };
}

static DISPATCHER: Lazy<Mutex<Option<Owned>>> = Lazy::new(|| Mutex::new(None));

/// Runs `job` on the dispatcher thread, after the jobs dispatched before it.
pub(crate) fn dispatch(job: Job) {
    let pid = crate::runtime::current_pid();
    let mut slot = DISPATCHER.lock().unwrap_or_else(|e| e.into_inner());
    let job = match slot.as_ref() {
        Some((owner, sender, _)) if *owner == pid => match sender.send(job) {
            Ok(()) => return,
            // The thread is gone (it never exits on its own): start another.
            Err(returned) => returned.0,
        },
        _ => job,
    };
    let (sender, receiver) = channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("statestore-cb".into())
        .spawn(move || {
            ON_DISPATCHER.with(|flag| flag.set(true));
            crate::runtime::ignore_sigpipe_here();
            while let Ok(job) = receiver.recv() {
                // A panicking callback must not take the others down with it.
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!("a completion callback panicked");
                }
            }
        });
    match spawned {
        Ok(thread) => {
            // The receiver lives in the thread just started: the send cannot fail.
            let _ = sender.send(job);
            if let Some((owner, inherited, _)) = slot.replace((pid, sender, Some(thread))) {
                if owner != pid {
                    // The parent's queue, whose thread is not in this process: dropping it
                    // would wake that thread through locks it may have held at the fork.
                    std::mem::forget(inherited);
                }
            }
        }
        Err(error) => {
            // No thread can be had: run it here rather than lose it.
            tracing::error!(%error, "cannot start the callback thread");
            drop(slot);
            job();
        }
    }
}

/// Ends the dispatcher thread of this process after the jobs already queued, and joins it. The
/// next [`dispatch`] starts a new one. Not on the dispatcher thread ([`on_dispatcher`]), which
/// would wait for its own end.
pub(crate) fn stop() {
    let pid = crate::runtime::current_pid();
    let taken = {
        let mut slot = DISPATCHER.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some((owner, _, _)) if *owner == pid => slot.take(),
            _ => None,
        }
    };
    if let Some((_, sender, thread)) = taken {
        // The thread's loop ends once its queue is empty and the sender gone.
        drop(sender);
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

/// Whether this is the dispatcher thread.
pub(crate) fn on_dispatcher() -> bool {
    ON_DISPATCHER.with(Cell::get)
}
