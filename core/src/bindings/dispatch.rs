//! The dispatcher thread: where completion callbacks and pushed events run.
//!
//! Callbacks must not run on a tokio worker: a host callback may block (a C function calling a
//! blocking API, Python waiting for the GIL) and would stall the runtime that completes every
//! other call. One thread keeps callbacks in completion order; like the runtime it is keyed by
//! process id, so a forked child starts its own.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

use once_cell::sync::Lazy;

/// Work for the dispatcher thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The dispatcher's queue and the process it was started in.
type Owned = (u32, Sender<Job>);

static DISPATCHER: Lazy<Mutex<Option<Owned>>> = Lazy::new(|| Mutex::new(None));

/// Runs `job` on the dispatcher thread, after the jobs dispatched before it.
pub(crate) fn dispatch(job: Job) {
    let pid = crate::runtime::current_pid();
    let mut slot = DISPATCHER.lock().unwrap_or_else(|e| e.into_inner());
    let job = match slot.as_ref() {
        Some((owner, sender)) if *owner == pid => match sender.send(job) {
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
            crate::runtime::ignore_sigpipe_here();
            while let Ok(job) = receiver.recv() {
                // A panicking callback must not take the others down with it.
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!("a completion callback panicked");
                }
            }
        });
    match spawned {
        Ok(_) => {
            // The receiver lives in the thread just started: the send cannot fail.
            let _ = sender.send(job);
            if let Some((owner, inherited)) = slot.replace((pid, sender)) {
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
