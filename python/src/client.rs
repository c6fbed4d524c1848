//! `_native.Client`: the core async client; every operation returns an [`Operation`].

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use statestore::{
    Client as CoreClient, ConnectOptions, DeleteOptions, Keys, SetCondition, SetOptions,
};

use crate::api::{EventStream, OptionValue};
use crate::convert::{bytes_arg, out_bytes, secs_arg, text, version_arg, Version};
use crate::events::Observation;
use crate::operation::{spawn, Operation};
use crate::options;
use crate::record::{self, record_methods, Record};

/// Result of `set`: whether it was applied (`NX`/`NEX`) and the key's new version.
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct SetResult {
    pub applied: bool,
    pub version: Option<Version>,
}

record_methods! {
    impl SetResult {
        #[new]
        fn new(applied: bool, version: Option<Version>) -> Self {
            Self { applied, version }
        }

        fn __bool__(&self) -> bool {
            self.applied
        }

        fn __repr__(&self) -> String {
            format!(
                "SetResult(applied={}, version={})",
                py_bool(self.applied),
                repr_version(&self.version)
            )
        }
    }
}

impl Record for SetResult {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (self.applied, self.version.clone()).into_pyobject(py)
    }
}

/// A value read by `get`, with its version.
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct Value {
    /// `bytes`, or `str` on a client with `decode_responses=True`.
    pub value: Py<PyAny>,
    pub version: Option<Version>,
}

record_methods! {
    impl Value {
        #[new]
        fn new(value: Bound<'_, PyAny>, version: Option<Version>) -> PyResult<Self> {
            Ok(Self {
                value: record::bytes_or_str(value, "value")?,
                version,
            })
        }

        fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
            Ok(format!(
                "Value(value={}, version={})",
                self.value.bind(py).repr()?,
                repr_version(&self.version)
            ))
        }

        /// The value as `str` (UTF-8 unless `encoding` says otherwise).
        #[pyo3(signature = (encoding = "utf-8"))]
        fn decode(&self, py: Python<'_>, encoding: &str) -> PyResult<Py<PyAny>> {
            let value = self.value.bind(py);
            if value.is_instance_of::<PyString>() {
                return Ok(value.clone().unbind());
            }
            Ok(value.call_method1("decode", (encoding,))?.unbind())
        }
    }
}

impl Record for Value {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (self.value.clone_ref(py), self.version.clone()).into_pyobject(py)
    }
}

/// Result of `delete`/`vdel`: `outcome` is `"deleted"`, `"not_found"` or `"value_mismatch"`.
#[pyclass(frozen, get_all, module = "statestore._native")]
pub struct DeleteResult {
    pub outcome: &'static str,
    pub version: Option<Version>,
}

record_methods! {
    impl DeleteResult {
        #[new]
        fn new(py: Python<'_>, outcome: &str, version: Option<Version>) -> PyResult<Self> {
            Ok(Self {
                outcome: record::word(py, "delete_outcome", outcome, "outcome")?,
                version,
            })
        }

        /// Whether the key was deleted.
        #[getter]
        fn deleted(&self) -> bool {
            self.outcome == "deleted"
        }

        fn __bool__(&self) -> bool {
            self.deleted()
        }

        fn __repr__(&self) -> String {
            format!(
                "DeleteResult(outcome='{}', version={})",
                self.outcome,
                repr_version(&self.version)
            )
        }
    }
}

impl Record for DeleteResult {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (self.outcome, self.version.clone()).into_pyobject(py)
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn repr_version(v: &Option<Version>) -> String {
    match v {
        Some(v) => format!("Version('{}')", v.0),
        None => "None".into(),
    }
}

/// The core async client (`statestore.Client` and `statestore.AsyncClient` wrap it).
#[pyclass(frozen, module = "statestore._native")]
pub struct Client {
    pub inner: CoreClient,
    pub decode: bool,
}

impl Client {
    fn conv_client(
        decode: bool,
    ) -> impl FnOnce(Python<'_>, CoreClient) -> PyResult<Py<PyAny>> + Send {
        move |py, inner| Ok(Py::new(py, Client { inner, decode })?.into_any())
    }

    /// Connects with `base` (from the environment or a URL) and the keyword `options` on top;
    /// a `base` that failed fails the operation, as connecting would.
    fn connect_over(
        base: statestore::Result<ConnectOptions>,
        options: Option<&Bound<'_, PyDict>>,
        decode_responses: bool,
    ) -> PyResult<Operation> {
        let mut connect = match base {
            Ok(c) => c,
            Err(e) => return Ok(Operation::failed(e)),
        };
        if let Some(options) = options {
            options::apply(&mut connect, options)?;
        }
        Ok(spawn(
            CoreClient::connect(connect),
            Self::conv_client(decode_responses),
        ))
    }
}

#[pymethods]
impl Client {
    /// Connects to `host:port` with `options` (names of `CONNECT_OPTIONS`).
    #[staticmethod]
    #[pyo3(signature = (host, port, options = None, decode_responses = false))]
    fn connect(
        py: Python<'_>,
        host: &Bound<'_, PyString>,
        port: i64,
        options: Option<&Bound<'_, PyDict>>,
        decode_responses: bool,
    ) -> PyResult<Operation> {
        // Host and port go through core's option parser too, so they are checked the same way
        // (port 0 or out of range: InvalidArgumentError).
        let mut connect = ConnectOptions::new("localhost", 1883);
        for (name, value) in [
            ("host", OptionValue::Str(text(host, "host")?.into_owned())),
            ("port", OptionValue::Int(port)),
        ] {
            connect
                .set_option(name, value)
                .map_err(|e| crate::errors::to_py(py, &e))?;
        }
        if let Some(options) = options {
            options::apply(&mut connect, options)?;
        }
        Ok(spawn(
            CoreClient::connect(connect),
            Self::conv_client(decode_responses),
        ))
    }

    /// Connects with the settings of the `AIO_*` environment variables, then `options`.
    #[staticmethod]
    #[pyo3(signature = (options = None, decode_responses = false))]
    fn from_env(
        options: Option<&Bound<'_, PyDict>>,
        decode_responses: bool,
    ) -> PyResult<Operation> {
        // A host among the options need not be in the environment too.
        let host = match options {
            Some(options) => options
                .get_item("host")?
                .and_then(|host| host.extract::<String>().ok()),
            None => None,
        };
        let base = ConnectOptions::from_env_or_host(host.as_deref());
        Self::connect_over(base, options, decode_responses)
    }

    /// Connects with the settings of a connection URL (`ConnectOptions::from_url`), then
    /// `options`.
    #[staticmethod]
    #[pyo3(signature = (url, options = None, decode_responses = false))]
    fn from_url(
        url: &Bound<'_, PyString>,
        options: Option<&Bound<'_, PyDict>>,
        decode_responses: bool,
    ) -> PyResult<Operation> {
        let base = ConnectOptions::from_url(&text(url, "url")?);
        Self::connect_over(base, options, decode_responses)
    }

    /// The MQTT client id.
    #[getter]
    fn client_id(&self) -> &str {
        self.inner.client_id()
    }

    /// Whether values come back as `str`.
    #[getter]
    fn decode_responses(&self) -> bool {
        self.decode
    }

    // `condition` is read as a Python `str` (so that a lone surrogate is refused as every text
    // argument is); the text signature keeps its default as callers see it.
    #[pyo3(
        signature = (key, value, condition = None, expiry = None, fencing_token = None, persist = false, timeout = None),
        text_signature = "($self, key, value, condition='always', expiry=None, fencing_token=None, persist=False, timeout=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn set(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        condition: Option<&Bound<'_, PyString>>,
        expiry: Option<&Bound<'_, PyAny>>,
        fencing_token: Option<&Bound<'_, PyAny>>,
        persist: bool,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let value = bytes_arg(value, "value")?;
        let options = set_options(condition, expiry, fencing_token, persist, timeout)?;
        let client = self.inner.clone();
        Ok(spawn(
            async move { client.set(key, value, options).await },
            conv_set,
        ))
    }

    /// `set` of each `(key, value)` pair of `items` with the same options: an `Operation`
    /// giving a list with each item's `SetResult`, or its error as an exception instance.
    #[pyo3(
        signature = (items, condition = None, expiry = None, fencing_token = None, persist = false, timeout = None),
        text_signature = "($self, items, condition='always', expiry=None, fencing_token=None, persist=False, timeout=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn set_many(
        &self,
        items: &Bound<'_, PyAny>,
        condition: Option<&Bound<'_, PyString>>,
        expiry: Option<&Bound<'_, PyAny>>,
        fencing_token: Option<&Bound<'_, PyAny>>,
        persist: bool,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let items = pairs_arg(items, "items")?;
        let options = set_options(condition, expiry, fencing_token, persist, timeout)?;
        let client = self.inner.clone();
        Ok(spawn(
            async move { client.set_many(items, options).await },
            |py, results| batch_list(py, results, conv_set),
        ))
    }

    /// `get` of each of `keys`: an `Operation` giving a list with each key's `Value` (or
    /// `None`), or its error as an exception instance.
    #[pyo3(signature = (keys, timeout = None))]
    fn get_many(
        &self,
        keys: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let keys = keys_arg(keys, "keys")?;
        let timeout = secs_arg(timeout, "timeout")?;
        let client = self.inner.clone();
        let decode = self.decode;
        Ok(spawn(
            async move { client.get_many_with_timeout(keys, timeout).await },
            move |py, results| batch_list(py, results, |py, v| conv_value(py, v, decode)),
        ))
    }

    /// `delete` of each of `keys`: an `Operation` giving a list with each key's
    /// `DeleteResult`, or its error as an exception instance.
    #[pyo3(signature = (keys, fencing_token = None, timeout = None))]
    fn delete_many(
        &self,
        keys: &Bound<'_, PyAny>,
        fencing_token: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let keys = keys_arg(keys, "keys")?;
        let options = delete_options(fencing_token, timeout)?;
        let client = self.inner.clone();
        Ok(spawn(
            async move { client.delete_many(keys, options).await },
            |py, results| batch_list(py, results, conv_delete),
        ))
    }

    #[pyo3(signature = (key, timeout = None))]
    fn get(
        &self,
        key: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let timeout = secs_arg(timeout, "timeout")?;
        let client = self.inner.clone();
        let decode = self.decode;
        Ok(spawn(
            async move { client.get_with_timeout(key, timeout).await },
            move |py, r| conv_value(py, r, decode),
        ))
    }

    #[pyo3(signature = (key, fencing_token = None, timeout = None))]
    fn delete(
        &self,
        key: &Bound<'_, PyAny>,
        fencing_token: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let options = delete_options(fencing_token, timeout)?;
        let client = self.inner.clone();
        Ok(spawn(
            async move { client.delete(key, options).await },
            conv_delete,
        ))
    }

    #[pyo3(signature = (key, value, fencing_token = None, timeout = None))]
    fn vdel(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        fencing_token: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let value = bytes_arg(value, "value")?;
        let options = delete_options(fencing_token, timeout)?;
        let client = self.inner.clone();
        Ok(spawn(
            async move { client.vdel(key, value, options).await },
            conv_delete,
        ))
    }

    /// A pager over the keys matching `pattern` (SCAN).
    fn keys(&self, pattern: &Bound<'_, PyAny>) -> PyResult<KeyPager> {
        let keys = self
            .inner
            .keys(bytes_arg(pattern, "pattern")?)
            .map_err(|e| Python::attach(|py| crate::errors::to_py(py, &e)))?;
        Ok(KeyPager {
            keys: Arc::new(Mutex::new(Some(keys))),
            decode: self.decode,
        })
    }

    /// Starts observing `key`: an `Operation` giving an `Observation`.
    fn observe(&self, key: &Bound<'_, PyAny>) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let client = self.inner.clone();
        let decode = self.decode;
        Ok(spawn(
            async move { Ok(EventStream::from_observation(client.observe(key).await?)) },
            move |py, stream| Ok(Py::new(py, Observation { stream, decode })?.into_any()),
        ))
    }

    /// Ends every observation of `key` on this client.
    fn unobserve(&self, key: &Bound<'_, PyAny>) -> PyResult<Operation> {
        let key = bytes_arg(key, "key")?;
        let client = self.inner.clone();
        Ok(spawn(
            async move { client.unobserve(key).await },
            |py, ()| Ok(py.None()),
        ))
    }

    fn close(&self) -> Operation {
        let client = self.inner.clone();
        spawn(async move { client.close().await }, |py, ()| Ok(py.None()))
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The connection's state: `"connecting"`, `"connected"`, `"reconnecting"`, `"gave_up"`
    /// or `"closed"`.
    #[getter]
    fn connection_state(&self) -> &'static str {
        self.inner.connection_state().name()
    }

    /// The connection's changes from now on.
    fn connection_events(&self) -> crate::events::ConnectionEvents {
        crate::events::ConnectionEvents {
            stream: EventStream::from_connection(self.inner.connection_events()),
        }
    }
}

fn delete_options(
    fencing_token: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<DeleteOptions> {
    let mut options = DeleteOptions::default();
    if let Some(token) = version_arg(fencing_token, "fencing_token")? {
        options = options.fencing_token(token);
    }
    if let Some(timeout) = secs_arg(timeout, "timeout")? {
        options = options.timeout(timeout);
    }
    Ok(options)
}

fn set_options(
    condition: Option<&Bound<'_, PyString>>,
    expiry: Option<&Bound<'_, PyAny>>,
    fencing_token: Option<&Bound<'_, PyAny>>,
    persist: bool,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<SetOptions> {
    let mut options = SetOptions::default()
        .condition(match condition {
            Some(condition) => {
                statestore::bindings::set_condition(&text(condition, "condition")?, "condition")
                    .map_err(|e| crate::errors::to_py(condition.py(), &e))?
            }
            None => SetCondition::Always,
        })
        .persist(persist);
    if let Some(expiry) = secs_arg(expiry, "expiry")? {
        options = options.expiry(expiry);
    }
    if let Some(token) = version_arg(fencing_token, "fencing_token")? {
        options = options.fencing_token(token);
    }
    if let Some(timeout) = secs_arg(timeout, "timeout")? {
        options = options.timeout(timeout);
    }
    Ok(options)
}

/// Keys of a batch: any iterable of keys, but not one key (a `str` or bytes would otherwise
/// be taken apart into one-character keys).
fn keys_arg(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<Bytes>> {
    batch_items(ob, name, bytes_arg)
}

/// `(key, value)` pairs of `set_many`: an iterable of 2-item sequences.
fn pairs_arg(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<(Bytes, Bytes)>> {
    batch_items(ob, name, |item, label| {
        let pair: (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "argument '{label}': expected a (key, value) pair, got {}",
                type_name(item)
            ))
        })?;
        Ok((bytes_arg(&pair.0, label)?, bytes_arg(&pair.1, label)?))
    })
}

/// Each item of the iterable `ob` converted by `convert`, whose errors name the item
/// (`items[3]`).
fn batch_items<T>(
    ob: &Bound<'_, PyAny>,
    name: &str,
    convert: impl Fn(&Bound<'_, PyAny>, &str) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    let not_iterable = || {
        PyTypeError::new_err(format!(
            "argument '{name}': expected an iterable (a list, a tuple...), got {}",
            type_name(ob)
        ))
    };
    if ob.is_instance_of::<PyString>() || ob.is_instance_of::<PyBytes>() {
        return Err(not_iterable());
    }
    let iter = ob.try_iter().map_err(|_| not_iterable())?;
    let mut items = Vec::with_capacity(ob.len().unwrap_or(0));
    for (index, item) in iter.enumerate() {
        items.push(convert(&item?, &format!("{name}[{index}]"))?);
    }
    Ok(items)
}

fn type_name(ob: &Bound<'_, PyAny>) -> String {
    ob.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// A batch's results as a Python list: each result converted by `conv`, each error an
/// exception instance (as redis-py pipelines give with `raise_on_error=False`).
fn batch_list<T>(
    py: Python<'_>,
    results: Vec<statestore::Result<T>>,
    conv: impl Fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let items = results
        .into_iter()
        .map(|result| match result {
            Ok(value) => conv(py, value),
            Err(error) => Ok(crate::errors::to_py(py, &error).into_value(py).into_any()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any().unbind())
}

fn conv_set(py: Python<'_>, r: statestore::SetResult) -> PyResult<Py<PyAny>> {
    Ok(Py::new(
        py,
        SetResult {
            applied: r.applied,
            version: r.version.map(Version),
        },
    )?
    .into_any())
}

fn conv_value(
    py: Python<'_>,
    value: Option<statestore::Value>,
    decode: bool,
) -> PyResult<Py<PyAny>> {
    match value {
        None => Ok(py.None()),
        Some(v) => Ok(Py::new(
            py,
            Value {
                value: out_bytes(py, &v.value, decode)?,
                version: v.version.map(Version),
            },
        )?
        .into_any()),
    }
}

fn conv_delete(py: Python<'_>, r: statestore::DeleteResult) -> PyResult<Py<PyAny>> {
    let outcome = r.outcome.names().0;
    Ok(Py::new(
        py,
        DeleteResult {
            outcome,
            version: r.version.map(Version),
        },
    )?
    .into_any())
}

/// Pages of SCAN results; `next_page()` returns an `Operation` giving a list of keys, or `None` at
/// the end.
#[pyclass(frozen, module = "statestore._native")]
pub struct KeyPager {
    keys: Arc<Mutex<Option<Keys>>>,
    decode: bool,
}

#[pymethods]
impl KeyPager {
    fn next_page(&self) -> PyResult<Operation> {
        // One page at a time: the pager is taken for the duration of the request.
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                PyRuntimeError::new_err("a page of this key listing is already being read")
            })?;
        let slot = self.keys.clone();
        let decode = self.decode;
        Ok(spawn(
            async move {
                let page = keys.next_page().await;
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(keys);
                page
            },
            move |py, page: Option<Vec<Bytes>>| match page {
                None => Ok(py.None()),
                Some(page) => {
                    let items = page
                        .iter()
                        .map(|k| out_bytes(py, k, decode))
                        .collect::<PyResult<Vec<_>>>()?;
                    Ok(PyList::new(py, items)?.into_any().unbind())
                }
            },
        ))
    }
}

/// Registers this file's classes in `_native` (a new class is added here, next to its
/// definition).
pub(crate) fn register(classes: &mut crate::Classes<'_, '_>) -> pyo3::PyResult<()> {
    classes
        .internal::<Client>()?
        .internal::<KeyPager>()?
        .exported::<SetResult>()?
        .exported::<Value>()?
        .exported::<DeleteResult>()?;
    Ok(())
}
