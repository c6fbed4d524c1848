//! [`Call`]: one core operation in flight, waited for by a blocking method (GIL released,
//! Ctrl-C checked between slices) or delivered to an asyncio future from the library's
//! dispatcher thread.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

    /// On completion, queues `(future, result)` on `completions` (the completion queue of the
    /// future's event loop), which resolves it on the loop's thread.
    fn deliver_to(&self, completions: &Completions, future: Py<PyAny>) -> PyResult<()> {
        let pending = self.take()?;
        let queue = completions.queue.clone();
        // Inline: on the worker that completed the call; it only queues and maybe writes one
        // byte, never takes the GIL.
        pending.on_complete_inline(move |result| queue.push(future, result));
        Ok(())
    }

    /// Cancels the operation (it completes with `CancelledError` if not done yet).
    fn cancel(&self) {
        self.canceller.cancel();
    }
}

type Completed = (Py<PyAny>, Result<Conv>);

/// The shared part of a [`Completions`]: results waiting for their event loop, and the
/// socket that wakes it.
struct Queue {
    items: Mutex<Vec<Completed>>,
    wake: UnixStream,
}

impl Queue {
    fn push(&self, future: Py<PyAny>, result: Result<Conv>) {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let first = items.is_empty();
        items.push((future, result));
        drop(items);
        // One byte per batch: the loop drains every queued result when it reads. A full
        // socket (WouldBlock) or a loop that is gone (the reader closed) needs no byte.
        if first {
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// The completion queue of one asyncio event loop: calls completed on the library's threads
/// are queued here without the GIL, and the loop, woken by a byte on `fileno()` (registered
/// with `loop.add_reader`), resolves their futures in `drain()` on its own thread. Many
/// completions share one wake-up, and no library thread ever waits for the GIL.
#[pyclass(frozen, module = "statestore._native")]
pub struct Completions {
    queue: Arc<Queue>,
    reader: UnixStream,
}

#[pymethods]
impl Completions {
    #[new]
    fn new() -> PyResult<Completions> {
        let (reader, wake) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        wake.set_nonblocking(true)?;
        Ok(Completions {
            queue: Arc::new(Queue {
                items: Mutex::new(Vec::new()),
                wake,
            }),
            reader,
        })
    }

    /// The file descriptor to watch for reading.
    fn fileno(&self) -> i32 {
        self.reader.as_raw_fd()
    }

    /// Resolves every queued future (skipping the ones cancelled meanwhile).
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        // Bytes first, then the queue: a result queued after the take writes a new byte.
        let mut buf = [0u8; 256];
        while let Ok(n) = (&self.reader).read(&mut buf) {
            if n < buf.len() {
                break;
            }
        }
        let items =
            std::mem::take(&mut *self.queue.items.lock().unwrap_or_else(|e| e.into_inner()));
        for (future, result) in items {
            let future = future.bind(py);
            if future.call_method0("done")?.is_truthy()? {
                continue;
            }
            match result.map_err(|e| to_py(py, &e)).and_then(|c| c(py)) {
                Ok(value) => future.call_method1("set_result", (value,))?,
                Err(error) => future.call_method1("set_exception", (error.into_value(py),))?,
            };
        }
        Ok(())
    }
}
