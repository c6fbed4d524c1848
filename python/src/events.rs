//! Observations: key notifications, leadership changes and lease losses, as one `Event` type
//! pulled by a blocking iterator (`next`) or an async one (`next_call`).

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use statestore::bindings::{Event as CoreEvent, EventStream};
use statestore::lease::Loss as CoreLoss;
use statestore::ConnectionEvent as CoreConnectionEvent;

use crate::convert::out_bytes;
use crate::convert::{secs_arg, Version};
use crate::errors::to_py;
use crate::operation::{signals, spawn, Operation, SLICE};
use crate::record::{self, record_methods, Record};

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

record_methods! {
    impl Loss {
        #[new]
        #[pyo3(
            signature = (reason, holder=None, error=None, message=String::new()),
            text_signature = "(reason, holder=None, error=None, message='')"
        )]
        fn new(
            py: Python<'_>,
            reason: &str,
            holder: Option<Bound<'_, PyAny>>,
            error: Option<Bound<'_, PyAny>>,
            message: String,
        ) -> PyResult<Self> {
            Ok(Self {
                reason: record::word(py, "loss_reason", reason, "reason")?,
                holder: record::optional_bytes_or_str(holder, "holder")?,
                error: error.filter(|e| !e.is_none()).map(Bound::unbind),
                message,
            })
        }

        fn __repr__(&self) -> String {
            format!("Loss(reason='{}', message={:?})", self.reason, self.message)
        }
    }
}

impl Record for Loss {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let holder = self.holder.as_ref().map(|h| h.clone_ref(py));
        let error = self.error.as_ref().map(|e| e.clone_ref(py));
        (self.reason, holder, error, &self.message).into_pyobject(py)
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

record_methods! {
    impl Event {
        #[new]
        #[pyo3(signature = (kind, key, value=None, version=None, holder=None, loss=None))]
        fn new(
            py: Python<'_>,
            kind: &str,
            key: Bound<'_, PyAny>,
            value: Option<Bound<'_, PyAny>>,
            version: Option<Version>,
            holder: Option<Bound<'_, PyAny>>,
            loss: Option<Py<Loss>>,
        ) -> PyResult<Self> {
            Ok(Self {
                kind: record::word(py, "event_kind", kind, "kind")?,
                key: record::bytes_or_str(key, "key")?,
                value: record::optional_bytes_or_str(value, "value")?,
                version,
                holder: record::optional_bytes_or_str(holder, "holder")?,
                loss,
            })
        }

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
}

impl Record for Event {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let optional = |o: &Option<Py<PyAny>>| o.as_ref().map(|o| o.clone_ref(py));
        let loss = self.loss.as_ref().map(|l| l.clone_ref(py));
        let (key, value, holder) = (
            self.key.clone_ref(py),
            optional(&self.value),
            optional(&self.holder),
        );
        (self.kind, key, value, self.version.clone(), holder, loss).into_pyobject(py)
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

/// Waits for the next event of `stream` as `Observation.next` does, converted by `convert`.
fn next_blocking(
    py: Python<'_>,
    stream: &EventStream,
    timeout: Option<&Bound<'_, PyAny>>,
    convert: impl FnOnce(Python<'_>, &CoreEvent) -> PyResult<Py<PyAny>>,
) -> PyResult<Option<Py<PyAny>>> {
    let timeout = secs_arg(timeout, "timeout")?;
    let mut raised = None;
    let next = crate::finalizing::detach(py, || {
        stream.next_checked(timeout, SLICE, &mut signals(&mut raised))
    });
    match (raised, next) {
        (Some(interrupted), _) => Err(interrupted),
        (None, Ok(Some(e))) => convert(py, &e).map(Some),
        (None, Ok(None)) => Ok(None),
        (None, Err(error)) => Err(to_py(py, &error)),
    }
}

/// The next event of `stream` as an `Operation`, converted by `convert`; `None` at the end.
fn next_operation(
    stream: &EventStream,
    convert: impl FnOnce(Python<'_>, &CoreEvent) -> PyResult<Py<PyAny>> + Send + 'static,
) -> Operation {
    let stream = stream.clone();
    spawn(
        async move { Ok(stream.next().await) },
        move |py, e: Option<CoreEvent>| match e {
            Some(e) => convert(py, &e),
            None => Ok(py.None()),
        },
    )
}

/// A change of the client's connection state: `state` is `"connecting"`, `"connected"`,
/// `"reconnecting"`, `"gave_up"` or `"closed"`; `reason` why it dropped, an attempt failed or
/// reconnecting gave up; `attempt` the next attempt's number (`reconnecting`) or the attempts
/// made (`gave_up`); `delay` the seconds before the next attempt (`reconnecting`);
/// `session_lost` whether a reconnect found the broker's session gone.
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct ConnectionEvent {
    pub state: &'static str,
    pub reason: Option<String>,
    pub attempt: u32,
    pub delay: Option<f64>,
    pub session_lost: bool,
}

record_methods! {
    impl ConnectionEvent {
        #[new]
        #[pyo3(signature = (state, reason=None, attempt=0, delay=None, session_lost=false))]
        fn new(
            py: Python<'_>,
            state: &str,
            reason: Option<String>,
            attempt: u32,
            delay: Option<f64>,
            session_lost: bool,
        ) -> PyResult<Self> {
            Ok(Self {
                state: record::word(py, "connection_state", state, "state")?,
                reason,
                attempt,
                delay,
                session_lost,
            })
        }

        fn __repr__(&self) -> String {
            format!(
                "ConnectionEvent(state='{}', reason={}, attempt={}, delay={}, session_lost={})",
                self.state,
                self.reason
                    .as_ref()
                    .map_or("None".into(), |r| format!("{r:?}")),
                self.attempt,
                self.delay.map_or("None".into(), |d| d.to_string()),
                if self.session_lost { "True" } else { "False" },
            )
        }
    }
}

impl Record for ConnectionEvent {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let Self {
            state,
            reason,
            attempt,
            delay,
            session_lost,
        } = self;
        (*state, reason.clone(), *attempt, *delay, *session_lost).into_pyobject(py)
    }
}

fn connection_event(py: Python<'_>, e: &CoreEvent) -> PyResult<Py<PyAny>> {
    let Some(c) = &e.connection else {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "a {} event in a stream of connection events",
            e.kind.name()
        )));
    };
    Ok(Py::new(py, from_core(c))?.into_any())
}

pub fn from_core(c: &CoreConnectionEvent) -> ConnectionEvent {
    ConnectionEvent {
        state: c.state.name(),
        reason: c.reason.clone(),
        attempt: c.attempt,
        delay: c.delay.map(|d| d.as_secs_f64()),
        session_lost: c.session_lost,
    }
}

/// The connection changes of a client (`Client.connection_events()`): `next(timeout)` blocks,
/// `next_call()` is awaited; `None` / `ClosedError` after the client is closed.
#[pyclass(frozen, module = "statestore._native")]
pub struct ConnectionEvents {
    pub stream: EventStream,
}

impl Drop for ConnectionEvents {
    fn drop(&mut self) {
        self.stream.close();
    }
}

#[pymethods]
impl ConnectionEvents {
    /// Blocks for the next change; `None` if none came within `timeout` seconds; raises
    /// `ClosedError` once the client is closed and its changes consumed.
    #[pyo3(signature = (timeout = None))]
    fn next(
        &self,
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        next_blocking(py, &self.stream, timeout, connection_event)
    }

    /// The next change as an `Operation`; `None` once the client is closed.
    fn next_call(&self) -> Operation {
        next_operation(&self.stream, connection_event)
    }

    /// Stops listening.
    fn close(&self) {
        self.stream.close();
    }
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
        let decode = self.decode;
        next_blocking(py, &self.stream, timeout, |py, e| event(py, e, decode))
    }

    /// The next event as an `Operation` (for `__anext__`): an `Event`, or `None` once the stream has
    /// ended.
    fn next_call(&self) -> Operation {
        let decode = self.decode;
        next_operation(&self.stream, move |py, e| event(py, e, decode))
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
        .exported::<ConnectionEvent>()?
        .internal::<Observation>()?
        .internal::<ConnectionEvents>()?;
    Ok(())
}
