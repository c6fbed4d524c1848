//! Threads that would take the GIL back while the interpreter finalizes.
//!
//! Before Python 3.14, a thread that takes the GIL once finalization has begun (any thread but
//! the one finalizing) is ended with `pthread_exit`. Its forced unwinding runs through Rust
//! frames, the `catch_unwind` that guards every PyO3 method catches it, and the process aborts
//! ("FATAL: exception not rethrown"). A daemon thread blocked in the library when the program
//! ends does just that when its call returns, or while it waits for the GIL to return.
//!
//! So the library's exit handler (`statestore._lifecycle`, before finalization) calls
//! [`exiting`]: from then on a thread that returns from the library parks for good instead of
//! taking the GIL, as Python 3.14 does with every such thread, and the process ends around it.
//! [`exiting`] also waits (GIL released) for the threads already on their way back to Python,
//! so that none is left waiting for the GIL when finalization begins.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use pyo3::marker::Ungil;
use pyo3::prelude::*;

struct State {
    /// The thread that ends the program, once its exit handler ran.
    exiting: Option<ThreadId>,
    /// Threads between leaving the library and holding the GIL again.
    returning: usize,
}

/// A std lock, not a spinning or parking-table one: its state lives in itself (fork-safe).
static STATE: Mutex<State> = Mutex::new(State {
    exiting: None,
    returning: 0,
});
static RETURNED: Condvar = Condvar::new();

/// How long the exit handler waits for the threads on their way back to Python; one stuck in
/// a Python-level lock must not hang the exit.
const EXIT_WAIT: Duration = Duration::from_secs(1);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records the calling thread as the one that ends the program, then waits (GIL released) for
/// the threads returning from the library to Python.
#[pyfunction]
pub fn exiting(py: Python<'_>) {
    state().exiting = Some(std::thread::current().id());
    py.detach(|| {
        let deadline = Instant::now() + EXIT_WAIT;
        let mut state = state();
        while state.returning > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = RETURNED
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    });
}

/// Marks the calling thread (GIL released) as returning to Python until the guard is dropped
/// (GIL held); once the program is ending, parks it for good instead, unless it is the thread
/// that ends the program.
fn returning() -> Returning {
    let mut state = state();
    match state.exiting {
        Some(exiting) if exiting != std::thread::current().id() => {
            drop(state);
            loop {
                std::thread::park();
            }
        }
        _ => {
            state.returning += 1;
            Returning
        }
    }
}

/// A thread returning to Python: see [`returning`].
struct Returning;

impl Drop for Returning {
    fn drop(&mut self) {
        let mut state = state();
        state.returning -= 1;
        if state.returning == 0 {
            RETURNED.notify_all();
        }
    }
}

/// `py.detach(f)`, except that a thread that would return to a finalizing interpreter parks
/// instead.
pub fn detach<T: Ungil + Send, F: Ungil + Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    let (output, guard) = py.detach(|| {
        let output = f();
        (output, returning())
    });
    drop(guard);
    output
}

/// `Python::try_attach(f)` from a thread that released the GIL, with the same care as
/// [`detach`].
pub fn try_attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    let _guard = returning();
    Python::try_attach(f)
}
