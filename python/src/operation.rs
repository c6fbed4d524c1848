//! [`Operation`]: one core operation, through core's bridge (`Pending`): either waited for by a
//! blocking method on the caller's thread (GIL released, Ctrl-C checked between slices) or
//! started for asyncio: its first steps on the caller's thread (a call refused there returns at
//! once), the rest on the core runtime, delivered to an asyncio future through its loop's
//! completion queue.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use statestore::Result;

use crate::api::{Canceller, CompletionQueue, Pending, Started};
use crate::errors::to_py;
use crate::finalizing::{self, detach};

/// Turns a core result into a Python object once the GIL is held.
pub type Conv = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// How long a blocking wait runs with the GIL released before it checks for signals
/// (Ctrl-C must interrupt within 100 ms).
pub const SLICE: Duration = Duration::from_millis(50);

/// A core operation not started yet, with the conversion of its output.
type Work = Pin<Box<dyn Future<Output = Result<Conv>> + Send>>;

/// Builds an [`Operation`] for `future`; its output is converted by `conv` when delivered.
pub fn spawn<T, F, C>(future: F, conv: C) -> Operation
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    Operation::lazy(Box::pin(async move {
        let value = future.await?;
        Ok(Box::new(move |py: Python<'_>| conv(py, value)) as Conv)
    }))
}

/// The check a blocking wait runs every [`SLICE`] with the GIL released (core's
/// `Pending::wait_checked`, `EventStream::next_checked`): Python's signal handlers. One that
/// raises (Ctrl-C) ends the wait, which cancels the call; its exception is kept in `raised`.
pub fn signals(raised: &mut Option<PyErr>) -> impl FnMut() -> Result<()> + '_ {
    move || match finalizing::try_attach(|py| py.check_signals()) {
        Some(Err(error)) => {
            *raised = Some(error);
            Err(statestore::Error::Cancelled)
        }
        _ => Ok(()),
    }
}

/// Converts a result for Python; a panic in the conversion is an `InternalError`, like one in
/// the call itself (core's bridge catches those).
fn convert(py: Python<'_>, result: Result<Conv>) -> PyResult<Py<PyAny>> {
    let conv = result.map_err(|e| to_py(py, &e))?;
    statestore::bindings::catch_panic("converting the result", || conv(py))
        .unwrap_or_else(|e| Err(to_py(py, &e)))
}

enum State {
    /// Not started: `wait()` runs it on the caller's thread, `start()` starts it.
    Lazy(Work),
    /// Started for asyncio.
    Spawned(Canceller),
    /// Waited for, or cancelled before it started.
    Gone,
}

/// One core operation, not started until it is waited for or delivered. Blocking: `wait()`.
/// Asyncio: `start(completions, loop)`.
#[pyclass(frozen, module = "statestore._native")]
pub struct Operation {
    state: Mutex<State>,
}

impl Operation {
    fn lazy(work: Work) -> Operation {
        Operation {
            state: Mutex::new(State::Lazy(work)),
        }
    }

    /// A call that fails with `error` (checked before anything runs).
    pub fn failed(error: statestore::Error) -> Operation {
        Operation::lazy(Box::pin(async move { Err(error) }))
    }

    fn take(&self) -> PyResult<Work> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *state, State::Gone) {
            State::Lazy(work) => Ok(work),
            other => {
                *state = other;
                Err(PyRuntimeError::new_err(
                    "this call was already waited for, delivered or cancelled",
                ))
            }
        }
    }
}

#[pymethods]
impl Operation {
    /// Blocks until the operation completes (GIL released, Ctrl-C honoured) and returns its
    /// result (raises its error).
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let pending = Pending::spawn(self.take()?);
        let mut raised = None;
        let result = detach(py, || {
            pending.wait_checked(SLICE, &mut signals(&mut raised))
        });
        match raised {
            Some(interrupted) => Err(interrupted),
            None => convert(py, result),
        }
    }

    /// Starts the operation for asyncio: its first steps run on this thread, the rest on the
    /// core runtime. `(True, result)` if it completed in them (its error is raised), which
    /// spares the event loop a round trip; otherwise `(False, future)`, a future of
    /// `event_loop` resolved through `completions`, the loop's completion queue.
    fn start(
        &self,
        py: Python<'_>,
        completions: &Completions,
        event_loop: &Bound<'_, PyAny>,
    ) -> PyResult<(bool, Py<PyAny>)> {
        let pending = match Pending::spawn(self.take()?).start() {
            Started::Done(result) => return Ok((true, convert(py, result)?)),
            Started::Running(pending) => pending,
        };
        let future = event_loop.call_method0("create_future")?.unbind();
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = State::Spawned(pending.canceller());
        // Queued by the worker that completed the call, which never takes the GIL; resolved
        // by the loop's `drain()`.
        let resolved = future.clone_ref(py);
        pending.on_complete_in(&completions.queue, move |result| {
            Python::attach(|py| {
                if let Err(error) = resolve(py, resolved, result) {
                    // The loop's own error path (the future is gone or its loop closed).
                    error.write_unraisable(py, None);
                }
            })
        });
        Ok((false, future))
    }

    /// Cancels the operation (a spawned one completes with `CancelledError` if not done yet).
    fn cancel(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &*state {
            State::Spawned(canceller) => canceller.cancel(),
            _ => *state = State::Gone,
        }
    }
}

/// The completion queue of one asyncio event loop (core's [`CompletionQueue`]): calls completed
/// on the library's threads are queued there without the GIL, and the loop, woken by its
/// descriptor (`fileno()`, registered with `loop.add_reader`), resolves their futures in
/// `drain()` on its own thread. Many completions share one wake-up, and no library thread ever
/// waits for the GIL.
#[pyclass(frozen, module = "statestore._native")]
pub struct Completions {
    queue: CompletionQueue,
}

#[pymethods]
impl Completions {
    #[new]
    fn new() -> PyResult<Completions> {
        let queue = CompletionQueue::new().map_err(|e| Python::attach(|py| to_py(py, &e)))?;
        Ok(Completions { queue })
    }

    /// The file descriptor to watch for reading.
    fn fileno(&self) -> i32 {
        self.queue.fd()
    }

    /// Resolves every queued future (skipping the ones cancelled meanwhile).
    fn drain(&self) {
        // Each queued completion attaches to the interpreter this thread holds already.
        self.queue.run_ready();
    }
}

/// Sets `future`'s result or exception, unless it was cancelled meanwhile; on the event
/// loop's thread, inside `drain()`.
fn resolve(py: Python<'_>, future: Py<PyAny>, result: Result<Conv>) -> PyResult<()> {
    let future = future.bind(py);
    if future.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    match convert(py, result) {
        Ok(value) => future.call_method1("set_result", (value,))?,
        Err(error) => future.call_method1("set_exception", (error.into_value(py),))?,
    };
    Ok(())
}

/// A call that panics, in its operation or (`in_conversion`) in converting its result: for the
/// test suite, which checks that both reach Python as `InternalError`, an `Exception`, in the
/// blocking and the asyncio path, never as PyO3's `PanicException` (a `BaseException`).
#[pyfunction]
pub fn panicking_call(in_conversion: bool) -> Operation {
    spawn(
        async move {
            if !in_conversion {
                panic!("a panic injected by the test suite");
            }
            Ok(())
        },
        |_py, ()| panic!("a panic injected by the test suite, in a conversion"),
    )
}

/// Registers this file's classes in `_native` (a new class is added here, next to its
/// definition).
pub(crate) fn register(classes: &mut crate::Classes<'_, '_>) -> pyo3::PyResult<()> {
    classes.internal::<Operation>()?.internal::<Completions>()?;
    Ok(())
}
