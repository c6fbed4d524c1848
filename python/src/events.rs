//! Observations: key notifications, leadership changes and lease losses, as one `Event` type
//! pulled by a blocking iterator (`next`) or an async one (`next_call`).

use pyo3::prelude::*;
use statestore::bindings::{Event as CoreEvent, EventStream};
use statestore::lease::Loss as CoreLoss;

use crate::convert::out_bytes;
use crate::convert::{secs_arg, Version};
use crate::errors::to_py;
use crate::operation::{signals, spawn, Operation, SLICE};

/// Why a lease, lock or leadership was lost.
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct Loss {
    /// `"expired"`, `"taken_over"` or `"client_closed"`.
    pub reason: &'static str,
    /// The new holder, if known (`taken_over`).
    pub holder: Option<Py<PyAny>>,
    /// The last renewal's error (`expired`), if any.
    pub error: Option<Py<PyAny>>,
    /// One line saying what happened.
    pub message: String,
}

#[pymethods]
impl Loss {
    fn __repr__(&self) -> String {
        format!("Loss(reason='{}', message={:?})", self.reason, self.message)
    }
}

pub fn loss(py: Python<'_>, loss: &CoreLoss, decode: bool) -> PyResult<Loss> {
    Ok(Loss {
        reason: loss.reason.names().0,
        holder: loss
            .holder
            .as_ref()
            .map(|h| out_bytes(py, h, decode))
            .transpose()?,
        error: loss
            .error
            .as_ref()
            .map(|e| to_py(py, e).into_value(py).into_any()),
        message: loss.to_string(),
    })
}

/// One event: `kind` is `"set"`, `"delete"`, `"resynced"` (after a reconnect: `value` is the
/// current value, `None` if absent), `"elected"` (`holder`: the leader), `"vacant"` or `"lost"`
/// (`loss`).
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct Event {
    pub kind: &'static str,
    pub key: Py<PyAny>,
    pub value: Option<Py<PyAny>>,
    pub version: Option<Version>,
    pub holder: Option<Py<PyAny>>,
    pub loss: Option<Py<Loss>>,
}

#[pymethods]
impl Event {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let repr = |o: &Option<Py<PyAny>>| -> PyResult<String> {
            Ok(match o {
                Some(o) => o.bind(py).repr()?.to_string(),
                None => "None".into(),
            })
        };
        Ok(format!(
            "Event(kind='{}', key={}, value={}, version={}, holder={})",
            self.kind,
            self.key.bind(py).repr()?,
            repr(&self.value)?,
            match &self.version {
                Some(v) => format!("Version('{}')", v.0),
                None => "None".into(),
            },
            repr(&self.holder)?,
        ))
    }
}

pub fn event(py: Python<'_>, e: &CoreEvent, decode: bool) -> PyResult<Py<PyAny>> {
    let event = Event {
        kind: e.kind.name(),
        key: out_bytes(py, &e.key, decode)?,
        value: e
            .value
            .as_ref()
            .map(|v| out_bytes(py, v, decode))
            .transpose()?,
        version: e.version.clone().map(Version),
        holder: e
            .holder
            .as_ref()
            .map(|h| out_bytes(py, h, decode))
            .transpose()?,
        loss: e
            .loss
            .as_ref()
            .map(|l| Py::new(py, loss(py, l, decode)?))
            .transpose()?,
    };
    Ok(Py::new(py, event)?.into_any())
}

/// A stream of events. Dropping it (or `close()`) stops the observation behind it.
#[pyclass(frozen, module = "statestore._native")]
pub struct Observation {
    pub stream: EventStream,
    pub decode: bool,
}

impl Drop for Observation {
    fn drop(&mut self) {
        self.stream.close();
    }
}

#[pymethods]
impl Observation {
    /// The observed key.
    #[getter]
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.stream.key(), self.decode)
    }

    /// Whether the stream has ended.
    #[getter]
    fn closed(&self) -> bool {
        self.stream.is_closed()
    }

    /// Blocks (GIL released, Ctrl-C honoured) for the next event; `None` if none came within
    /// `timeout` seconds; raises `ClosedError` once the stream has ended.
    #[pyo3(signature = (timeout = None))]
    fn next(
        &self,
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let timeout = secs_arg(timeout, "timeout")?;
        let stream = &self.stream;
        let mut raised = None;
        let next = crate::finalizing::detach(py, || {
            stream.next_checked(timeout, SLICE, &mut signals(&mut raised))
        });
        match (raised, next) {
            (Some(interrupted), _) => Err(interrupted),
            (None, Ok(Some(e))) => event(py, &e, self.decode).map(Some),
            (None, Ok(None)) => Ok(None),
            (None, Err(error)) => Err(to_py(py, &error)),
        }
    }

    /// The next event as an `Operation` (for `__anext__`): an `Event`, or `None` once the stream has
    /// ended.
    fn next_call(&self) -> Operation {
        let decode = self.decode;
        let stream = self.stream.clone();
        spawn(
            async move { Ok(stream.next().await) },
            move |py, e: Option<CoreEvent>| match e {
                Some(e) => event(py, &e, decode),
                None => Ok(py.None()),
            },
        )
    }

    /// Ends the stream (waiters wake up; the observation stops).
    fn close(&self) {
        self.stream.close();
    }
}

/// Registers this file's classes in `_native` (a new class is added here, next to its
/// definition).
pub(crate) fn register(classes: &mut crate::Classes<'_, '_>) -> pyo3::PyResult<()> {
    classes
        .exported::<Event>()?
        .exported::<Loss>()?
        .internal::<Observation>()?;
    Ok(())
}
