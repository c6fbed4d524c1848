//! Leases, locks (with two-phase updates) and elections: core's `statestore::lease` types,
//! every waiting operation as an [`Operation`].

use std::sync::Mutex;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use statestore::bindings::{lost_within, EventStream};
use statestore::lease::{
    AcquireOutcome, Election as CoreElection, Lease as CoreLease, Lock as CoreLock,
    LockGuard as CoreGuard, Loss as CoreLoss, UpdateTxn,
};
use statestore::{Error, Result};

use crate::client::Client;
use crate::convert::out_bytes;
use crate::convert::{bytes_arg, secs, secs_arg, Version};
use crate::errors::to_py;
use crate::events::{loss, Loss, Observation};
use crate::operation::{spawn, Operation};
use crate::record::{self, record_methods, Record};

/// One acquisition attempt: `acquired`, the `fencing_token` if so, else the current `holder`.
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct AcquireResult {
    pub acquired: bool,
    pub fencing_token: Option<Version>,
    pub holder: Option<Py<PyAny>>,
}

record_methods! {
    impl AcquireResult {
        #[new]
        #[pyo3(signature = (acquired, fencing_token, holder=None))]
        fn new(
            acquired: bool,
            fencing_token: Option<Version>,
            holder: Option<Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            Ok(Self {
                acquired,
                fencing_token,
                holder: record::optional_bytes_or_str(holder, "holder")?,
            })
        }

        fn __bool__(&self) -> bool {
            self.acquired
        }

        fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
            Ok(format!(
                "AcquireResult(acquired={}, fencing_token={}, holder={})",
                if self.acquired { "True" } else { "False" },
                match &self.fencing_token {
                    Some(v) => format!("Version('{}')", v.0),
                    None => "None".into(),
                },
                match &self.holder {
                    Some(h) => h.bind(py).repr()?.to_string(),
                    None => "None".into(),
                }
            ))
        }
    }
}

impl Record for AcquireResult {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let holder = self.holder.as_ref().map(|h| h.clone_ref(py));
        (self.acquired, self.fencing_token.clone(), holder).into_pyobject(py)
    }
}

fn acquire_result(py: Python<'_>, outcome: AcquireOutcome, decode: bool) -> PyResult<Py<PyAny>> {
    let result = match outcome {
        AcquireOutcome::Acquired { token } => AcquireResult {
            acquired: true,
            fencing_token: Some(Version(token)),
            holder: None,
        },
        AcquireOutcome::HeldBy { holder } => AcquireResult {
            acquired: false,
            fencing_token: None,
            holder: holder.map(|h| out_bytes(py, &h, decode)).transpose()?,
        },
    };
    Ok(Py::new(py, result)?.into_any())
}

fn version(py: Python<'_>, token: statestore::Hlc) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, Version(token))?.into_any())
}

fn none(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

fn optional_bytes(
    decode: bool,
) -> impl FnOnce(Python<'_>, Option<Bytes>) -> PyResult<Py<PyAny>> + Send {
    move |py, b| match b {
        Some(b) => out_bytes(py, &b, decode),
        None => Ok(py.None()),
    }
}

fn raise<T>(result: Result<T>) -> PyResult<T> {
    result.map_err(|e| Python::attach(|py| to_py(py, &e)))
}

/// `lost(timeout)` of a lease, a lock guard or an election: core's one meaning of it
/// (`lost_within`): the loss, or `None` if released, never held, or still held when the
/// time is up.
fn lost_op(
    lease: &CoreLease,
    timeout: Option<&Bound<'_, PyAny>>,
    decode: bool,
) -> PyResult<Operation> {
    let timeout = secs_arg(timeout, "timeout")?;
    Ok(spawn(
        lost_within(lease, timeout),
        move |py, lost: Option<CoreLoss>| match lost {
            Some(lost) => Ok(Py::new(py, loss(py, &lost, decode)?)?.into_any()),
            None => Ok(py.None()),
        },
    ))
}

fn loss_stream(lease: &CoreLease, decode: bool) -> Observation {
    Observation {
        stream: EventStream::from_lease_loss(lease),
        decode,
    }
}

/// A lease: one key, one holder name.
#[pyclass(frozen, module = "statestore._native")]
pub struct Lease {
    lease: CoreLease,
    decode: bool,
}

#[pymethods]
impl Lease {
    #[new]
    #[pyo3(signature = (client, key, holder, auto_renew = false))]
    fn new(
        client: &Client,
        key: &Bound<'_, PyAny>,
        holder: &Bound<'_, PyAny>,
        auto_renew: bool,
    ) -> PyResult<Lease> {
        let key = bytes_arg(key, "key")?;
        let holder = bytes_arg(holder, "holder")?;
        let lease = raise(CoreLease::new(&client.inner, key, holder))?.auto_renew(auto_renew);
        Ok(Lease {
            lease,
            decode: client.decode,
        })
    }

    #[getter]
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.lease.key(), self.decode)
    }

    #[getter]
    fn holder_name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.lease.holder_name(), self.decode)
    }

    #[getter]
    fn auto_renew(&self) -> bool {
        self.lease.is_auto_renew()
    }

    #[setter]
    fn set_auto_renew(&self, on: bool) {
        self.lease.set_auto_renew(on);
    }

    #[getter]
    fn held(&self) -> bool {
        self.lease.is_held()
    }

    #[getter]
    fn fencing_token(&self) -> Option<Version> {
        self.lease.fencing_token().map(Version)
    }

    /// `"not_held"`, `"held"` or `"lost"`.
    #[getter]
    fn state(&self) -> &'static str {
        self.lease.state().names().0
    }

    /// Why the last holding was lost (state `"lost"`), else `None`.
    #[getter]
    fn loss(&self, py: Python<'_>) -> PyResult<Option<Loss>> {
        self.lease
            .state()
            .loss()
            .map(|l| crate::events::loss(py, l, self.decode))
            .transpose()
    }

    fn try_acquire(&self, ttl: &Bound<'_, PyAny>) -> PyResult<Operation> {
        let ttl = secs(ttl, "ttl")?;
        let lease = self.lease.clone();
        let decode = self.decode;
        Ok(spawn(
            async move { lease.try_acquire(ttl).await },
            move |py, o| acquire_result(py, o, decode),
        ))
    }

    #[pyo3(signature = (ttl, timeout = None))]
    fn acquire(
        &self,
        ttl: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let ttl = secs(ttl, "ttl")?;
        let timeout = secs_arg(timeout, "timeout")?;
        let lease = self.lease.clone();
        Ok(spawn(
            async move {
                match timeout {
                    Some(timeout) => lease.acquire_timeout(ttl, timeout).await,
                    None => lease.acquire(ttl).await,
                }
            },
            version,
        ))
    }

    fn renew(&self) -> Operation {
        let lease = self.lease.clone();
        spawn(async move { lease.renew().await }, none)
    }

    /// Releases (VDEL with the holder name); the result says whether a key was deleted.
    fn release(&self) -> Operation {
        let lease = self.lease.clone();
        spawn(async move { lease.release().await }, |py, deleted: bool| {
            Ok(deleted.into_pyobject(py)?.to_owned().into_any().unbind())
        })
    }

    /// The current holder name read from the service (`None`: free).
    fn holder(&self) -> Operation {
        let lease = self.lease.clone();
        spawn(
            async move { lease.holder().await },
            optional_bytes(self.decode),
        )
    }

    /// A stream with one `lost` event when the lease is lost (it ends if released instead).
    fn loss_events(&self) -> Observation {
        loss_stream(&self.lease, self.decode)
    }

    #[pyo3(signature = (timeout = None))]
    fn lost(&self, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Operation> {
        lost_op(&self.lease, timeout, self.decode)
    }
}

/// A lock: `lock()` waits for it, `try_lock()` tries once, `begin_update()` starts a
/// read-modify-write under it.
#[pyclass(frozen, module = "statestore._native")]
pub struct Lock {
    lock: CoreLock,
    decode: bool,
}

#[pymethods]
impl Lock {
    #[new]
    #[pyo3(signature = (client, name, ttl, timeout = None, auto_renew = true))]
    fn new(
        client: &Client,
        name: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
        auto_renew: bool,
    ) -> PyResult<Lock> {
        let name = bytes_arg(name, "name")?;
        let ttl = secs(ttl, "ttl")?;
        let timeout = secs_arg(timeout, "timeout")?;
        let mut lock = raise(CoreLock::new(&client.inner, name, ttl))?.auto_renew(auto_renew);
        if let Some(timeout) = timeout {
            lock = lock.timeout(timeout);
        }
        Ok(Lock {
            lock,
            decode: client.decode,
        })
    }

    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.lock.name(), self.decode)
    }

    #[getter]
    fn ttl(&self) -> f64 {
        self.lock.ttl().as_secs_f64()
    }

    fn lock(&self) -> Operation {
        let lock = self.lock.clone();
        let decode = self.decode;
        spawn(async move { lock.lock().await }, move |py, guard| {
            Ok(Py::new(py, LockGuard::new(guard, decode))?.into_any())
        })
    }

    fn try_lock(&self) -> Operation {
        let lock = self.lock.clone();
        let decode = self.decode;
        spawn(
            async move { lock.try_lock().await },
            move |py, guard| match guard {
                Some(guard) => Ok(Py::new(py, LockGuard::new(guard, decode))?.into_any()),
                None => Ok(py.None()),
            },
        )
    }

    fn holder(&self) -> Operation {
        let lock = self.lock.clone();
        spawn(
            async move { lock.holder().await },
            optional_bytes(self.decode),
        )
    }

    /// Acquires the lock and reads `key`: the `Update` then commits a new value (fenced) or
    /// aborts, and releases the lock either way.
    fn begin_update(&self, key: &Bound<'_, PyAny>) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let lock = self.lock.clone();
        let decode = self.decode;
        Ok(spawn(
            async move { lock.begin_update(key).await },
            move |py, txn| {
                Ok(Py::new(
                    py,
                    Update {
                        txn: Mutex::new(Some(txn)),
                        decode,
                    },
                )?
                .into_any())
            },
        ))
    }
}

/// A held lock. `release()` releases it; dropping it releases it in the background.
#[pyclass(frozen, module = "statestore._native")]
pub struct LockGuard {
    guard: Mutex<Option<CoreGuard>>,
    token: Version,
    lease: CoreLease,
    decode: bool,
}

impl LockGuard {
    fn new(guard: CoreGuard, decode: bool) -> LockGuard {
        LockGuard {
            token: Version(guard.fencing_token().clone()),
            lease: guard.lease().clone(),
            guard: Mutex::new(Some(guard)),
            decode,
        }
    }
}

#[pymethods]
impl LockGuard {
    /// The fencing token: write guarded keys with it.
    #[getter]
    fn fencing_token(&self) -> Version {
        self.token.clone()
    }

    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.lease.key(), self.decode)
    }

    #[getter]
    fn holder_name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.lease.holder_name(), self.decode)
    }

    #[getter]
    fn held(&self) -> bool {
        self.guard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
            && self.lease.is_held()
    }

    fn renew(&self) -> Operation {
        let lease = self.lease.clone();
        spawn(async move { lease.renew().await }, none)
    }

    /// Releases the lock and waits for the answer (idempotent).
    fn release(&self) -> Operation {
        let guard = self.guard.lock().unwrap_or_else(|e| e.into_inner()).take();
        spawn(
            async move {
                match guard {
                    Some(guard) => guard.release().await,
                    None => Ok(()),
                }
            },
            none,
        )
    }

    fn loss_events(&self) -> Observation {
        loss_stream(&self.lease, self.decode)
    }

    #[pyo3(signature = (timeout = None))]
    fn lost(&self, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Operation> {
        lost_op(&self.lease, timeout, self.decode)
    }
}

/// A read-modify-write in progress under a lock (see `Lock.begin_update`).
#[pyclass(frozen, module = "statestore._native")]
pub struct Update {
    txn: Mutex<Option<UpdateTxn>>,
    decode: bool,
}

impl Update {
    fn take(&self) -> Result<UpdateTxn> {
        self.txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                Error::InvalidArgument("this update was already committed or aborted".into())
            })
    }

    fn with<R>(&self, f: impl FnOnce(&UpdateTxn) -> R) -> Option<R> {
        self.txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(f)
    }
}

#[pymethods]
impl Update {
    /// The key's value when the lock was taken (`None`: absent).
    #[getter]
    fn old_value(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let old = self.with(|t| t.old_value().cloned()).flatten();
        old.map(|v| out_bytes(py, &v, self.decode)).transpose()
    }

    #[getter]
    fn fencing_token(&self) -> Option<Version> {
        self.with(|t| Version(t.fencing_token().clone()))
    }

    /// Calls `function(old_value)` on this thread and returns its result. While it runs,
    /// waiting for this same lock on this thread (a nested `update`, `acquire`, `with lock:`)
    /// raises `InvalidArgumentError` at once instead of waiting for itself forever.
    fn call(&self, py: Python<'_>, function: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let old = self.old_value(py)?;
        let _scope = self.with(|t| t.enter_callback());
        function.call1((old,)).map(Bound::unbind)
    }

    /// Writes `value` (`None`: deletes the key) with the fencing token, then releases.
    fn commit(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<Operation> {
        let value = match value {
            Some(v) if !v.is_none() => Some(bytes_arg(v, "value")?),
            _ => None,
        };
        let decode = self.decode;
        let txn = self.take();
        Ok(spawn(
            async move { txn?.commit(value).await },
            optional_bytes(decode),
        ))
    }

    /// Releases the lock without writing.
    fn abort(&self) -> Operation {
        let txn = self.take();
        spawn(async move { txn?.abort().await }, none)
    }
}

/// Leader election among candidates.
#[pyclass(frozen, module = "statestore._native")]
pub struct Election {
    election: CoreElection,
    decode: bool,
}

#[pymethods]
impl Election {
    #[new]
    fn new(
        client: &Client,
        name: &Bound<'_, PyAny>,
        candidate: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Election> {
        let name = bytes_arg(name, "name")?;
        let candidate = bytes_arg(candidate, "candidate")?;
        let ttl = secs(ttl, "ttl")?;
        Ok(Election {
            election: raise(CoreElection::new(&client.inner, name, candidate, ttl))?,
            decode: client.decode,
        })
    }

    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.election.name(), self.decode)
    }

    #[getter]
    fn candidate(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        out_bytes(py, self.election.candidate(), self.decode)
    }

    #[getter]
    fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    #[getter]
    fn fencing_token(&self) -> Option<Version> {
        self.election.fencing_token().map(Version)
    }

    #[pyo3(signature = (timeout = None))]
    fn campaign(&self, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Operation> {
        let timeout = secs_arg(timeout, "timeout")?;
        let election = self.election.clone();
        Ok(spawn(
            async move {
                match timeout {
                    Some(timeout) => election.campaign_timeout(timeout).await,
                    None => election.campaign().await,
                }
            },
            version,
        ))
    }

    fn try_campaign(&self) -> Operation {
        let election = self.election.clone();
        let decode = self.decode;
        spawn(
            async move { election.try_campaign().await },
            move |py, o| acquire_result(py, o, decode),
        )
    }

    fn resign(&self) -> Operation {
        let election = self.election.clone();
        spawn(async move { election.resign().await }, none)
    }

    fn leader(&self) -> Operation {
        let election = self.election.clone();
        spawn(
            async move { election.leader().await },
            optional_bytes(self.decode),
        )
    }

    /// Leadership changes (`elected` / `vacant` events).
    fn observe(&self) -> Operation {
        let election = self.election.clone();
        let decode = self.decode;
        spawn(
            async move {
                let key = election.name().clone();
                Ok(EventStream::from_leader(election.observe().await?, key))
            },
            move |py, stream| Ok(Py::new(py, Observation { stream, decode })?.into_any()),
        )
    }

    fn loss_events(&self) -> Observation {
        loss_stream(self.election.lease(), self.decode)
    }

    #[pyo3(signature = (timeout = None))]
    fn lost(&self, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Operation> {
        lost_op(self.election.lease(), timeout, self.decode)
    }
}

/// Registers this file's classes in `_native` (a new class is added here, next to its
/// definition).
pub(crate) fn register(classes: &mut crate::Classes<'_, '_>) -> pyo3::PyResult<()> {
    classes
        .exported::<AcquireResult>()?
        .internal::<Lease>()?
        .internal::<Lock>()?
        .internal::<LockGuard>()?
        .internal::<Update>()?
        .internal::<Election>()?;
    Ok(())
}
