//! [`Call`]: one core operation in flight, waited for by a blocking method (GIL released,
//! Ctrl-C checked between slices) or delivered to an asyncio future from the library's
//! dispatcher thread.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use statestore::Result;

use crate::api::{Canceller, Pending};
use crate::errors::to_py;

/// Turns a core result into a Python object once the GIL is held.
pub type Conv = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// How long a blocking wait runs with the GIL released before it checks for signals
/// (Ctrl-C must interrupt within 100 ms).
pub const SLICE: Duration = Duration::from_millis(50);

/// Waits for `pending` with the GIL released; a signal handler that raises (Ctrl-C:
/// `KeyboardInterrupt`) cancels the call and propagates.
pub fn block<T: Send + 'static>(py: Python<'_>, mut pending: Pending<T>) -> PyResult<T> {
    loop {
        if let Some(result) = py.detach(|| pending.wait_timeout(SLICE)) {
            return result.map_err(|e| to_py(py, &e));
        }
        if let Err(interrupted) = py.check_signals() {
            pending.cancel();
            return Err(interrupted);
        }
    }
}

/// Deliveries to asyncio running on the dispatcher thread, and whether the interpreter is
/// shutting down. A thread that holds the GIL when finalization begins and gives it up (a
/// delivery does, inside `call_soon_threadsafe`'s socket write) is ended by CPython with
/// `pthread_exit`, which cannot unwind through Rust frames and aborts the process. So at exit
/// (an `atexit` hook, before finalization) new deliveries are refused and the ones under way
/// are waited for.
struct Deliveries {
    closed: bool,
    running: usize,
}

static DELIVERIES: Mutex<Deliveries> = Mutex::new(Deliveries {
    closed: false,
    running: 0,
});
static DELIVERED: Condvar = Condvar::new();

/// How long exit waits for a delivery under way (each is a few microseconds of Python).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Marks one delivery as running while it lives; `None` once shutting down.
struct Delivering;

impl Delivering {
    fn start() -> Option<Delivering> {
        let mut d = DELIVERIES.lock().unwrap_or_else(|e| e.into_inner());
        if d.closed {
            return None;
        }
        d.running += 1;
        Some(Delivering)
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        let mut d = DELIVERIES.lock().unwrap_or_else(|e| e.into_inner());
        d.running -= 1;
        DELIVERED.notify_all();
    }
}

/// Called at interpreter exit (atexit): stops delivering results to Python and waits for the
/// deliveries under way.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) {
    py.detach(|| {
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        let mut d = DELIVERIES.lock().unwrap_or_else(|e| e.into_inner());
        d.closed = true;
        while d.running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            d = DELIVERED
                .wait_timeout(d, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    });
}

/// Starts `future` on the core runtime; its output is converted by `conv` when delivered.
pub fn spawn<T, F, C>(future: F, conv: C) -> Call
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T>> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    Call::new(Pending::spawn(async move {
        let value = future.await?;
        Ok(Box::new(move |py: Python<'_>| conv(py, value)) as Conv)
    }))
}

/// [`spawn`] for an object created in process `pid`: in a forked child the call fails at once
/// with the `RUNTIME` error (the object's connection stayed in the parent) instead of waiting.
pub fn spawn_for<T, F, C>(pid: u32, future: F, conv: C) -> Call
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T>> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    if pid != std::process::id() {
        return Call::new(Pending::ready(Err(statestore::Error::Runtime(
            "this object was created before fork and its connection belongs to the parent \
             process: create a new client in the child"
                .into(),
        ))));
    }
    spawn(future, conv)
}

/// An operation in flight. Blocking: `wait()`. Asyncio: `deliver(loop, future, resolve)`.
#[pyclass(frozen, module = "statestore._native")]
pub struct Call {
    pending: Mutex<Option<Pending<Conv>>>,
    canceller: Canceller,
}

impl Call {
    pub fn new(pending: Pending<Conv>) -> Call {
        Call {
            canceller: pending.canceller(),
            pending: Mutex::new(Some(pending)),
        }
    }

    fn take(&self) -> PyResult<Pending<Conv>> {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this call was already waited for"))
    }
}

#[pymethods]
impl Call {
    /// Blocks until the operation completes and returns its result (raises its error).
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let pending = self.take()?;
        let conv = block(py, pending)?;
        conv(py)
    }

    /// On completion, schedules `resolve(future, ok, value)` on `loop` with
    /// `call_soon_threadsafe` (value: the result, or the exception when `ok` is false).
    fn deliver(
        &self,
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
        resolve: Py<PyAny>,
    ) -> PyResult<()> {
        let pending = self.take()?;
        pending.on_complete(move |result| {
            let Some(_delivering) = Delivering::start() else {
                // Exiting: nobody is left to tell. (The Python objects are released later by
                // PyO3's pool, or never, at exit.)
                return;
            };
            // None: the interpreter is finalizing.
            let _ = Python::try_attach(|py| {
                let (ok, value) = match result.map_err(|e| to_py(py, &e)).and_then(|c| c(py)) {
                    Ok(value) => (true, value),
                    Err(error) => (false, error.into_value(py).into_any()),
                };
                // Fails only when the loop is closed: the awaiting side is gone.
                let _ = event_loop.call_method1(
                    py,
                    "call_soon_threadsafe",
                    (resolve, future, ok, value),
                );
            });
        });
        Ok(())
    }

    /// Cancels the operation (it completes with `CancelledError` if not done yet).
    fn cancel(&self) {
        self.canceller.cancel();
    }
}
