//! The client: connect, the key-value operations (blocking and `_async`), close and free.

use std::ffi::{c_char, c_void, CString};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore_core::{
    Client, DeleteOptions, DeleteOutcome, DeleteResult, Error, Result, SetCondition, SetOptions,
    SetResult, Value,
};

use crate::callbacks::refuse_in_inline_callback;
use crate::client_state::{ClientState, Completions};
use crate::options::{statestore_options, with_settings, Settings};
use crate::reply::{Owned, PreparedCall, Reply, ToC};
use crate::status::{entry, statestore_status};
use crate::util::{self, CText, Handles, Out};

/// A connection to the state store. Create it with `statestore_connect()` or
/// `statestore_connect_async()`, close it with `statestore_close()`, free it with
/// `statestore_client_free()`. Usable from any thread at once.
pub struct statestore_client {
    _private: [u8; 0],
}

pub(crate) static CLIENTS: Handles<ClientState> = Handles::new(1, "statestore_client");

fn new_client(client: Client, completions: Completions) -> *mut statestore_client {
    CLIENTS.insert(Arc::new(ClientState::new(client, completions)))
}

fn connect_op(
    options: *const statestore_options,
) -> Result<PreparedCall<Client, *mut statestore_client>> {
    connect_with(with_settings(options, |settings| Ok(settings.clone()))?)
}

/// # Safety
/// `url` is NULL or NUL-terminated (as [`util::string`] requires).
unsafe fn connect_url_op(
    url: *const c_char,
    options: *const statestore_options,
) -> Result<PreparedCall<Client, *mut statestore_client>> {
    // SAFETY: `url` is NULL or NUL-terminated (this function's contract).
    let url = unsafe { util::string(url, "url") }?;
    let settings = if options.is_null() {
        Settings::default().with_url(&url)?
    } else {
        with_settings(options, |settings| settings.with_url(&url))?
    };
    connect_with(settings)
}

fn connect_with(settings: Settings) -> Result<PreparedCall<Client, *mut statestore_client>> {
    let completions = Completions::new(settings.callbacks)?;
    Ok(PreparedCall::detached(
        Client::connect(settings.connect),
        move |client| new_client(client, completions),
    ))
}

/// Connects to the broker with `options` (not consumed: free it when convenient) and waits
/// until the connection is up or the options' default timeout passes. On success `*client`
/// is a new client (free it with `statestore_client_free()`); on failure it is NULL.
///
/// # Safety
/// `client` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_connect(
    options: *const statestore_options,
    client: *mut *mut statestore_client,
) -> statestore_status {
    // SAFETY: `client` is NULL or writable during this call (this function's contract).
    let client = unsafe { Out::new(client) };
    Reply::required(client, "client").run(|| connect_op(options))
}

/// Connects with a connection URL, `mqtt://[user[:password]@]host[:port][?option=value&...]`
/// or `mqtts://...` (TLS; port 1883 or 8883 by default), and waits as `statestore_connect()`
/// does. Query options are the names `statestore_options_set()` takes (`?client_id=app&`
/// `keep_alive=30s&ca_file=/etc/ca.pem`); user and password are percent-decoded. `options`
/// may be NULL; if not, its callback mode and every option set on it with a setter apply on
/// top of the URL's (so they win); settings it got from `statestore_options_from_env()` do
/// not. It is not consumed. A NULL or malformed URL fails with
/// `STATESTORE_ERR_INVALID_ARGUMENT` naming the part at fault (scheme, host, port,
/// percent-encoding, an unknown option, a bad value); the message shows the URL with its
/// password as `***`.
///
/// # Safety
/// `url` is NULL or a NUL-terminated string; `client` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_connect_url(
    url: *const c_char,
    options: *const statestore_options,
    client: *mut *mut statestore_client,
) -> statestore_status {
    // SAFETY: `client` is NULL or writable during this call (this function's contract).
    let client = unsafe { Out::new(client) };
    // SAFETY: `url` is NULL or NUL-terminated (this function's contract).
    Reply::required(client, "client").run(|| unsafe { connect_url_op(url, options) })
}

/// `statestore_connect_url()` without blocking; `callback` runs once on a library thread as
/// for `statestore_connect_async()`.
///
/// # Safety
/// `url` is NULL or a NUL-terminated string; `callback` may be called with `user_data` on a
/// library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_connect_url_async(
    url: *const c_char,
    options: *const statestore_options,
    callback: statestore_connect_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    // SAFETY: `url` is NULL or NUL-terminated (this function's contract).
    reply.run(|| unsafe { connect_url_op(url, options) })
}

/// Completion of `statestore_connect_async()`: on success `client` is a new client that the
/// callback now owns (free it with `statestore_client_free()`); on failure it is NULL and
/// `message` says why (valid during the callback only).
pub type statestore_connect_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        client: *mut statestore_client,
    ),
>;

/// Connects without blocking; `callback` runs once on a library thread with the new client
/// or the error.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_connect_async(
    options: *const statestore_options,
    callback: statestore_connect_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| connect_op(options))
}

/// Closes the client: the connection ends, every pending call (blocking or async, of the
/// client and of its locks, leases and elections) completes with `STATESTORE_ERR_CLOSED`,
/// observations end, and close returns after every pending callback has run (called from
/// inside a callback it cannot wait for the others: they run after the current callback
/// returns). A lock, lease or election being acquired is given back first, while the
/// connection is up (its request may have been applied), so close never leaves it taken until
/// its TTL ends. Later calls fail with `STATESTORE_ERR_CLOSED`. Closing twice is fine. The
/// handle stays valid until `statestore_client_free()`.
#[no_mangle]
pub extern "C" fn statestore_close(client: *mut statestore_client) -> statestore_status {
    entry(|| CLIENTS.get(client, "client")?.close())
}

/// Closes the client (see `statestore_close()`) if it is open, then frees the handle. NULL
/// does nothing. Locks, leases, elections and observations created from it must still be
/// freed. A free that fails changes nothing: where the client cannot be closed (inside an
/// inline or a log callback: `STATESTORE_ERR_RUNTIME`) it stays open and its handle valid.
#[no_mangle]
pub extern "C" fn statestore_client_free(client: *mut statestore_client) -> statestore_status {
    entry(|| {
        refuse_in_inline_callback()?;
        if client.is_null() {
            return Ok(());
        }
        let state = CLIENTS.get(client, "client")?;
        // Closed before the handle goes, so that a free that fails leaves a handle that still
        // works. In a child after fork() there is nothing to close: the connection is the
        // parent's.
        if state.created_here() {
            state.close()?;
        }
        CLIENTS.remove(client, "client").map(drop)
    })
}

/// The MQTT client id (generated when the options had none). `*client_id` is borrowed: valid
/// until the client is freed.
///
/// # Safety
/// `client_id` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_client_id(
    client: *const statestore_client,
    client_id: *mut *const c_char,
) -> statestore_status {
    // SAFETY: `client_id` is NULL or writable during this call (this function's contract).
    let client_id = unsafe { Out::new(client_id) };
    entry(|| {
        let state = CLIENTS.get(client, "client")?;
        client_id.put("client_id", state.client_id.as_ptr())
    })
}

// ---------------------------------------------------------------------------------------
// Results

/// A value read from the state store: `len` bytes at `data` (not NUL-terminated; `data` is
/// non-NULL even when `len` is 0) and the key's `version` (NULL if the service sent none).
#[repr(C)]
pub struct statestore_value {
    /// The value's bytes.
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
    /// The key's version (a hybrid logical clock as text), or NULL.
    pub version: *const c_char,
}

pub(crate) type OwnedValue = Owned<statestore_value, (Bytes, Option<CText>)>;

pub(crate) fn value_of(value: Bytes, version: Option<&statestore_core::Hlc>) -> OwnedValue {
    let version = util::version_string(version);
    let data = if value.is_empty() {
        b"".as_ptr()
    } else {
        value.as_ptr()
    };
    Owned {
        view: statestore_value {
            data,
            len: value.len(),
            version: CText::ptr(&version),
        },
        keep: (value, version),
    }
}

fn owned_value(value: &Value) -> OwnedValue {
    value_of(value.value.clone(), value.version.as_ref())
}

/// Frees a value returned by the library. NULL does nothing.
///
/// # Safety
/// `value` is NULL or a value from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_value_free(value: *mut statestore_value) {
    // SAFETY: the library makes every `statestore_value` as an `OwnedValue`; `value` is NULL
    // or one not yet freed (this function's contract).
    unsafe { OwnedValue::free(value) }
}

/// The outcome of a SET.
#[repr(C)]
pub struct statestore_set_result {
    /// Whether the value was written (false: the condition did not hold).
    pub applied: bool,
    /// The key's new version when applied (the fencing token of a lock taken with SET), or
    /// NULL.
    pub version: *const c_char,
}

pub(crate) type OwnedSetResult = Owned<statestore_set_result, Option<CText>>;

pub(crate) fn owned_set_result(
    applied: bool,
    version: Option<&statestore_core::Hlc>,
) -> OwnedSetResult {
    let version = util::version_string(version);
    Owned {
        view: statestore_set_result {
            applied,
            version: CText::ptr(&version),
        },
        keep: version,
    }
}

/// Frees a SET result. NULL does nothing.
///
/// # Safety
/// `result` is NULL or a SET result from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_set_result_free(result: *mut statestore_set_result) {
    // SAFETY: the library makes every `statestore_set_result` as an `OwnedSetResult`;
    // `result` is NULL or one not yet freed (this function's contract).
    unsafe { OwnedSetResult::free(result) }
}

/// What a DEL or VDEL did.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_delete_outcome {
    /// The key was deleted.
    STATESTORE_DELETED = 0,
    /// The key did not exist.
    STATESTORE_NOT_FOUND = 1,
    /// VDEL only: the key holds another value, so it was kept.
    STATESTORE_VALUE_MISMATCH = 2,
}

/// The outcome of a DEL or VDEL.
#[repr(C)]
pub struct statestore_delete_result {
    /// A `statestore_delete_outcome` value.
    pub outcome: i32,
    /// The version the service sent with its answer, or NULL.
    pub version: *const c_char,
}

pub(crate) type OwnedDeleteResult = Owned<statestore_delete_result, Option<CText>>;

pub(crate) fn owned_delete_result(
    outcome: DeleteOutcome,
    version: Option<&statestore_core::Hlc>,
) -> OwnedDeleteResult {
    let version = util::version_string(version);
    let outcome = match outcome {
        DeleteOutcome::Deleted => statestore_delete_outcome::STATESTORE_DELETED,
        DeleteOutcome::NotFound => statestore_delete_outcome::STATESTORE_NOT_FOUND,
        DeleteOutcome::ValueMismatch => statestore_delete_outcome::STATESTORE_VALUE_MISMATCH,
    };
    Owned {
        view: statestore_delete_result {
            outcome: outcome as i32,
            version: CText::ptr(&version),
        },
        keep: version,
    }
}

/// Frees a DEL/VDEL result. NULL does nothing.
///
/// # Safety
/// `result` is NULL or a DEL/VDEL result from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_delete_result_free(result: *mut statestore_delete_result) {
    // SAFETY: the library makes every `statestore_delete_result` as an `OwnedDeleteResult`;
    // `result` is NULL or one not yet freed (this function's contract).
    unsafe { OwnedDeleteResult::free(result) }
}

/// A byte string inside a result (not NUL-terminated).
#[repr(C)]
pub struct statestore_bytes {
    /// The bytes (non-NULL even when `len` is 0).
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
}

/// The keys matching a pattern.
#[repr(C)]
pub struct statestore_key_list {
    /// `count` keys (NULL when `count` is 0).
    pub keys: *const statestore_bytes,
    /// The number of keys.
    pub count: usize,
}

type OwnedKeyList = Owned<statestore_key_list, (Vec<Bytes>, Vec<statestore_bytes>)>;

fn owned_key_list(keys: &[Bytes]) -> OwnedKeyList {
    let keys = keys.to_vec();
    let views: Vec<statestore_bytes> = keys
        .iter()
        .map(|k| statestore_bytes {
            data: k.as_ptr(),
            len: k.len(),
        })
        .collect();
    Owned {
        view: statestore_key_list {
            keys: if views.is_empty() {
                std::ptr::null()
            } else {
                views.as_ptr()
            },
            count: views.len(),
        },
        keep: (keys, views),
    }
}

/// Frees a key list. NULL does nothing.
///
/// # Safety
/// `list` is NULL or a key list from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_key_list_free(list: *mut statestore_key_list) {
    // SAFETY: the library makes every `statestore_key_list` as an `OwnedKeyList`; `list` is
    // NULL or one not yet freed (this function's contract).
    unsafe { OwnedKeyList::free(list) }
}

/// Frees a string returned by the library (fencing tokens...). NULL does nothing.
///
/// # Safety
/// `text` is NULL or a string this library gave to be freed here, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_string_free(text: *mut c_char) {
    if !text.is_null() {
        // SAFETY: every string the library gives to be freed here comes from
        // `CString::into_raw`; `text` is one not yet freed (this function's contract).
        drop(unsafe { CString::from_raw(text) });
    }
}

// ---------------------------------------------------------------------------------------
// Per-call options

/// When a SET applies.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_condition {
    /// Always.
    STATESTORE_SET_ALWAYS = 0,
    /// Only if the key does not exist (`NX`).
    STATESTORE_SET_IF_ABSENT = 1,
    /// Only if the key does not exist or already holds this value (`NEX`): how a lock is
    /// taken and renewed.
    STATESTORE_SET_IF_ABSENT_OR_EQUAL = 2,
}

impl From<SetCondition> for statestore_condition {
    fn from(condition: SetCondition) -> Self {
        match condition {
            SetCondition::Always => Self::STATESTORE_SET_ALWAYS,
            SetCondition::OnlyIfAbsent => Self::STATESTORE_SET_IF_ABSENT,
            SetCondition::OnlyIfAbsentOrEqual => Self::STATESTORE_SET_IF_ABSENT_OR_EQUAL,
        }
    }
}

/// The SET condition called `name`, for `statestore_set_options.condition`: `"always"`,
/// `"nx"` or `"only_if_absent"`, `"nex"` or `"only_if_absent_or_equal"`, in any ASCII case
/// (the names the Python, Node and command line APIs accept, read from the library's one
/// table). An unknown name fails with `STATESTORE_ERR_INVALID_ARGUMENT`, whose message names
/// it and lists the accepted ones; so does NULL for either argument. On failure
/// `*condition` is left as it was.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `condition` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_condition_from_name(
    name: *const c_char,
    condition: *mut statestore_condition,
) -> statestore_status {
    // SAFETY: `condition` is NULL or writable during this call (this function's contract).
    let condition = unsafe { Out::new(condition) };
    entry(|| {
        if condition.is_null() {
            return Err(util::null("condition"));
        }
        // SAFETY: `name` is NULL or NUL-terminated (this function's contract).
        let name = unsafe { util::string(name, "name") }?;
        let parsed = statestore_core::bindings::set_condition(&name, "name")?;
        condition.put("condition", parsed.into())
    })
}

/// Options of a SET. All zero (`statestore_set_options o = {0};`) is the default: always,
/// no expiry, no fencing token, not persisted, the client's default timeout. Passing NULL
/// means the same. An expiry or timeout counts only with its `has_` flag set; then it must
/// be at least 1 ms (0 is refused with `STATESTORE_ERR_INVALID_ARGUMENT`).
#[repr(C)]
pub struct statestore_set_options {
    /// A `statestore_condition` value.
    pub condition: i32,
    /// Whether `expiry_ms` is set (otherwise the key never expires).
    pub has_expiry: bool,
    /// Expiry in milliseconds (at least 1).
    pub expiry_ms: u64,
    /// A fencing token (a version string from this library), or NULL. Borrowed for the call.
    pub fencing_token: *const c_char,
    /// Ask the broker to persist the key (`aio-persistence`).
    pub persist: bool,
    /// Whether `timeout_ms` is set (otherwise the client's default timeout).
    pub has_timeout: bool,
    /// Timeout in milliseconds (at least 1).
    pub timeout_ms: u64,
}

/// Options of a DEL or VDEL. All zero (or NULL) is the default.
#[repr(C)]
pub struct statestore_delete_options {
    /// A fencing token (a version string from this library), or NULL. Borrowed for the call.
    pub fencing_token: *const c_char,
    /// Whether `timeout_ms` is set (otherwise the client's default timeout).
    pub has_timeout: bool,
    /// Timeout in milliseconds (at least 1).
    pub timeout_ms: u64,
}

/// The SET options of a call (NULL: the defaults).
///
/// # Safety
/// `options` is NULL or points to an initialised `statestore_set_options` whose
/// `fencing_token` is NULL or NUL-terminated, readable during the call.
pub(crate) unsafe fn set_options(options: *const statestore_set_options) -> Result<SetOptions> {
    let mut set = SetOptions::default();
    // SAFETY: NULL or a readable, initialised struct (this function's contract).
    let Some(options) = (unsafe { options.as_ref() }) else {
        return Ok(set);
    };
    set = set.condition(match options.condition {
        0 => SetCondition::Always,
        1 => SetCondition::OnlyIfAbsent,
        2 => SetCondition::OnlyIfAbsentOrEqual,
        other => {
            return Err(Error::InvalidArgument(format!(
                "options->condition is {other}, not a statestore_condition"
            )))
        }
    });
    if options.has_expiry {
        set = set.expiry(Duration::from_millis(options.expiry_ms));
    }
    // SAFETY: the token is NULL or NUL-terminated (this function's contract).
    if let Some(token) = unsafe { util::token(options.fencing_token, "options->fencing_token") }? {
        set = set.fencing_token(token);
    }
    if options.has_timeout {
        set = set.timeout(Duration::from_millis(options.timeout_ms));
    }
    let set = set.persist(options.persist);
    set.validate().map_err(refused_option)?;
    Ok(set)
}

/// A per-call option that core refused, said to be one of `options`.
fn refused_option(error: Error) -> Error {
    match error {
        Error::InvalidArgument(message) => Error::InvalidArgument(format!("options: {message}")),
        other => other,
    }
}

/// The DEL/VDEL options of a call (NULL: the defaults).
///
/// # Safety
/// `options` is NULL or points to an initialised `statestore_delete_options` whose
/// `fencing_token` is NULL or NUL-terminated, readable during the call.
pub(crate) unsafe fn delete_options(
    options: *const statestore_delete_options,
) -> Result<DeleteOptions> {
    let mut delete = DeleteOptions::default();
    // SAFETY: NULL or a readable, initialised struct (this function's contract).
    let Some(options) = (unsafe { options.as_ref() }) else {
        return Ok(delete);
    };
    // SAFETY: the token is NULL or NUL-terminated (this function's contract).
    if let Some(token) = unsafe { util::token(options.fencing_token, "options->fencing_token") }? {
        delete = delete.fencing_token(token);
    }
    if options.has_timeout {
        delete = delete.timeout(Duration::from_millis(options.timeout_ms));
    }
    delete.validate().map_err(refused_option)?;
    Ok(delete)
}

// ---------------------------------------------------------------------------------------
// Operations: each turns C arguments into a `PreparedCall` once; its blocking entry point waits for
// the result, its `_async` twin hands the result to a callback (`crate::reply`).

/// A SET from its C arguments, which are copied before it returns.
///
/// # Safety
/// As `statestore_set()` for `key`, `value` and `options`.
unsafe fn set_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const statestore_set_options,
) -> Result<PreparedCall<SetResult, OwnedSetResult>> {
    let state = CLIENTS.get(client, "client")?;
    // SAFETY: `key` points to `key_len` readable bytes, or is NULL (this function's contract).
    let key = unsafe { util::key(key, key_len, "key") }?;
    // SAFETY: `value` points to `value_len` readable bytes, or is NULL (as for `key`).
    let value = unsafe { util::bytes(value, value_len, "value") }?;
    // SAFETY: `options` is NULL or a readable struct (this function's contract).
    let options = unsafe { set_options(options) }?;
    let client = state.client.clone();
    Ok(PreparedCall::new(
        &state,
        async move { client.set(key, value, options).await },
        |outcome: SetResult| owned_set_result(outcome.applied, outcome.version.as_ref()),
    ))
}

/// A call of the client with one key-like argument (`name`, for the message if refused),
/// copied before it returns.
///
/// # Safety
/// `key` points to `key_len` readable bytes, or is NULL (as for [`util::key`]).
pub(crate) unsafe fn key_op<T, R, F>(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    name: &str,
    op: impl FnOnce(Client, Bytes) -> F,
    convert: impl FnOnce(T) -> R + Send + 'static,
) -> Result<PreparedCall<T, R>>
where
    T: Send + 'static,
    R: ToC + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let state = CLIENTS.get(client, "client")?;
    // SAFETY: `key` points to `key_len` readable bytes, or is NULL (this function's contract).
    let key = unsafe { util::key(key, key_len, name) }?;
    Ok(PreparedCall::new(
        &state,
        op(state.client.clone(), key),
        convert,
    ))
}

/// A GET from its C arguments.
///
/// # Safety
/// As [`key_op`].
unsafe fn get_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    timeout_ms: i64,
) -> Result<PreparedCall<Option<Value>, Option<OwnedValue>>> {
    let timeout = match u64::try_from(timeout_ms) {
        Ok(ms) => Some(util::positive_millis(ms, "timeout_ms")?),
        Err(_) => None,
    };
    let get = move |client: Client, key| async move { client.get_with_timeout(key, timeout).await };
    // SAFETY: `key` as `key_op` requires (this function's contract).
    unsafe {
        key_op(client, key, key_len, "key", get, |found| {
            found.as_ref().map(owned_value)
        })
    }
}

/// A DEL (`value` None) or VDEL from its C arguments, which are copied before it returns.
///
/// # Safety
/// As `statestore_vdel()` for `key`, `value` and `options`.
unsafe fn delete_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    value: Option<(*const u8, usize)>,
    options: *const statestore_delete_options,
) -> Result<PreparedCall<DeleteResult, OwnedDeleteResult>> {
    let state = CLIENTS.get(client, "client")?;
    // SAFETY: `key` points to `key_len` readable bytes, or is NULL (this function's contract).
    let key = unsafe { util::key(key, key_len, "key") }?;
    let value = match value {
        // SAFETY: `data` points to `len` readable bytes, or is NULL (as for `key`).
        Some((data, len)) => Some(unsafe { util::bytes(data, len, "value") }?),
        None => None,
    };
    // SAFETY: `options` is NULL or a readable struct (this function's contract).
    let options = unsafe { delete_options(options) }?;
    let client = state.client.clone();
    Ok(PreparedCall::new(
        &state,
        async move {
            match value {
                Some(value) => client.vdel(key, value, options).await,
                None => client.delete(key, options).await,
            }
        },
        |outcome: DeleteResult| owned_delete_result(outcome.outcome, outcome.version.as_ref()),
    ))
}

/// A KEYS from its C arguments.
///
/// # Safety
/// `pattern` as [`key_op`] requires of its key.
unsafe fn keys_op(
    client: *const statestore_client,
    pattern: *const u8,
    len: usize,
) -> Result<PreparedCall<Vec<Bytes>, OwnedKeyList>> {
    let keys = |client: Client, pattern| async move { client.keys_all(pattern).await };
    // SAFETY: `pattern` as `key_op` requires (this function's contract).
    unsafe {
        key_op(client, pattern, len, "pattern", keys, |found| {
            owned_key_list(&found)
        })
    }
}

/// Sets `key` to `value`. `options` may be NULL (defaults). `*result` (if `result` is not
/// NULL) receives the outcome; free it with `statestore_set_result_free()`.
///
/// # Safety
/// `key` points to `key_len` readable bytes and `value` to `value_len` (either NULL when its
/// length is 0); `options` is NULL or points to a `statestore_set_options` (its
/// `fencing_token` NULL or NUL-terminated); `result` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_set(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const statestore_set_options,
    result: *mut *mut statestore_set_result,
) -> statestore_status {
    // SAFETY: `result` is NULL or writable during this call (this function's contract).
    let result = unsafe { Out::new(result) };
    Reply::optional(result).run(|| {
        // SAFETY: `key`, `value` and `options` are as `set_op` requires (this function's
        // contract), and it reads them before `run` returns.
        unsafe { set_op(client, key, key_len, value, value_len, options) }
    })
}

/// Completion of `statestore_set_async()`: `result` is borrowed for the callback (NULL on
/// failure); `message` is NULL on success.
pub type statestore_set_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        result: *const statestore_set_result,
    ),
>;

/// `statestore_set()` without blocking: `callback` runs once on a library thread.
///
/// # Safety
/// `key`, `value` and `options` as for `statestore_set()` (read before the function returns);
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_set_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const statestore_set_options,
    callback: statestore_set_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `key`, `value` and `options` are as `set_op` requires (this function's
        // contract), and it copies them before `run` returns.
        unsafe { set_op(client, key, key_len, value, value_len, options) }
    })
}

/// Reads `key`. `*value` is the value (free it with `statestore_value_free()`) or NULL if the
/// key does not exist (status `STATESTORE_OK` either way). `timeout_ms` < 0: the client's
/// default timeout (0 is refused).
///
/// # Safety
/// `key` points to `key_len` readable bytes; `value` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_get(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    timeout_ms: i64,
    value: *mut *mut statestore_value,
) -> statestore_status {
    // SAFETY: `value` is NULL or writable during this call (this function's contract).
    let value = unsafe { Out::new(value) };
    Reply::required(value, "value").run(|| {
        // SAFETY: `key` is as `get_op` requires (this function's contract), and it reads it
        // before `run` returns.
        unsafe { get_op(client, key, key_len, timeout_ms) }
    })
}

/// Completion of `statestore_get_async()`: `value` is borrowed for the callback; NULL when
/// the key does not exist (status OK) or on failure.
pub type statestore_get_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        value: *const statestore_value,
    ),
>;

/// `statestore_get()` without blocking: `callback` runs once on a library thread.
///
/// # Safety
/// `key` as for `statestore_get()`; `callback` may be called with `user_data` on a library
/// thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_get_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    timeout_ms: i64,
    callback: statestore_get_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `key` is as `get_op` requires (this function's contract), and it copies it
        // before `run` returns.
        unsafe { get_op(client, key, key_len, timeout_ms) }
    })
}

/// Deletes `key` (DEL). `options` may be NULL; `*result` (if `result` is not NULL) receives
/// the outcome (free with `statestore_delete_result_free()`).
///
/// # Safety
/// `key` points to `key_len` readable bytes; `options` is NULL or points to a
/// `statestore_delete_options` (its `fencing_token` NULL or NUL-terminated); `result` is NULL
/// or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_delete(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    options: *const statestore_delete_options,
    result: *mut *mut statestore_delete_result,
) -> statestore_status {
    // SAFETY: `result` is NULL or writable during this call (this function's contract).
    let result = unsafe { Out::new(result) };
    Reply::optional(result).run(|| {
        // SAFETY: `key` and `options` are as `delete_op` requires (this function's
        // contract), and it reads them before `run` returns.
        unsafe { delete_op(client, key, key_len, None, options) }
    })
}

/// Deletes `key` only if it holds `value` (VDEL); otherwise the outcome is
/// `STATESTORE_VALUE_MISMATCH`.
///
/// # Safety
/// As `statestore_delete()`, and `value` points to `value_len` readable bytes (NULL when
/// `value_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn statestore_vdel(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const statestore_delete_options,
    result: *mut *mut statestore_delete_result,
) -> statestore_status {
    let value = Some((value, value_len));
    // SAFETY: `result` is NULL or writable during this call (this function's contract).
    let result = unsafe { Out::new(result) };
    Reply::optional(result).run(|| {
        // SAFETY: `key`, `value` and `options` are as `delete_op` requires (this function's
        // contract), and it reads them before `run` returns.
        unsafe { delete_op(client, key, key_len, value, options) }
    })
}

/// Completion of `statestore_delete_async()` and `statestore_vdel_async()`: `result` is
/// borrowed for the callback (NULL on failure).
pub type statestore_delete_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        result: *const statestore_delete_result,
    ),
>;

/// `statestore_delete()` without blocking.
///
/// # Safety
/// `key` and `options` as for `statestore_delete()`; `callback` may be called with
/// `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_delete_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    options: *const statestore_delete_options,
    callback: statestore_delete_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `key` and `options` are as `delete_op` requires (this function's contract),
        // and it copies them before `run` returns.
        unsafe { delete_op(client, key, key_len, None, options) }
    })
}

/// `statestore_vdel()` without blocking.
///
/// # Safety
/// `key`, `value` and `options` as for `statestore_vdel()`; `callback` may be called with
/// `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_vdel_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const statestore_delete_options,
    callback: statestore_delete_cb,
    user_data: *mut c_void,
) -> statestore_status {
    let value = Some((value, value_len));
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `key`, `value` and `options` are as `delete_op` requires (this function's
        // contract), and it copies them before `run` returns.
        unsafe { delete_op(client, key, key_len, value, options) }
    })
}

/// Lists the keys matching `pattern`, all pages. Patterns follow the service's dialect (the
/// Rust glob crate's `Pattern`): `*`, `?`, `[abc]`, `[a-z]`, `[!0-9]` negates (`[^...]` does
/// not), `[*]` matches a literal `*`; no backslash escape. Free `*keys` with
/// `statestore_key_list_free()`.
///
/// # Safety
/// `pattern` points to `pattern_len` readable bytes; `keys` is NULL or points to writable
/// storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_keys(
    client: *const statestore_client,
    pattern: *const u8,
    pattern_len: usize,
    keys: *mut *mut statestore_key_list,
) -> statestore_status {
    // SAFETY: `keys` is NULL or writable during this call (this function's contract).
    let keys = unsafe { Out::new(keys) };
    Reply::required(keys, "keys").run(|| {
        // SAFETY: `pattern` is as `keys_op` requires (this function's contract), and it reads
        // it before `run` returns.
        unsafe { keys_op(client, pattern, pattern_len) }
    })
}

/// Completion of `statestore_keys_async()`: `keys` is borrowed for the callback (NULL on
/// failure).
pub type statestore_keys_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        keys: *const statestore_key_list,
    ),
>;

/// `statestore_keys()` without blocking.
///
/// # Safety
/// `pattern` as for `statestore_keys()`; `callback` may be called with `user_data` on a
/// library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_keys_async(
    client: *const statestore_client,
    pattern: *const u8,
    pattern_len: usize,
    callback: statestore_keys_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `pattern` is as `keys_op` requires (this function's contract), and it copies
        // it before `run` returns.
        unsafe { keys_op(client, pattern, pattern_len) }
    })
}

/// Completion of calls that return nothing but a status (`message` NULL on success).
pub type statestore_done_cb = Option<
    unsafe extern "C" fn(user_data: *mut c_void, status: statestore_status, message: *const c_char),
>;

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use statestore_core::Hlc;

    use super::*;

    fn version() -> Hlc {
        Hlc {
            wall_ms: 1_700_000_000_000,
            counter: 1,
            node: "n1".into(),
        }
    }

    /// `len` bytes at `data`, read the way a C program reads a result.
    ///
    /// # Safety
    /// `data` is valid for reads of `len` bytes.
    unsafe fn read(data: *const u8, len: usize) -> Vec<u8> {
        assert!(!data.is_null());
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(data, len) }.to_vec()
    }

    /// A C string of a result, or `None` for NULL.
    ///
    /// # Safety
    /// `text` is NULL or a NUL-terminated string.
    unsafe fn text(text: *const c_char) -> Option<String> {
        // SAFETY: the caller's promise.
        (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_str().unwrap().to_owned())
    }

    #[test]
    fn a_value_points_into_itself_until_freed() {
        let raw = value_of(Bytes::from_static(b"blue"), Some(&version())).into_raw();
        // SAFETY: a value the library just made, not yet freed.
        let view = unsafe { &*raw };
        // SAFETY: the view's pointers point into the value.
        assert_eq!(unsafe { read(view.data, view.len) }, b"blue");
        // SAFETY: as above.
        assert_eq!(unsafe { text(view.version) }, Some(version().to_string()));
        // SAFETY: made by the library, freed once.
        unsafe { statestore_value_free(raw) };

        let empty = value_of(Bytes::new(), None).into_raw();
        // SAFETY: a value the library just made.
        let view = unsafe { &*empty };
        assert!(!view.data.is_null() && view.len == 0 && view.version.is_null());
        // SAFETY: made by the library, freed once.
        unsafe { statestore_value_free(empty) };
        // SAFETY: NULL does nothing.
        unsafe { statestore_value_free(std::ptr::null_mut()) };
    }

    #[test]
    fn a_key_list_points_into_itself_until_freed() {
        let keys = [
            Bytes::from_static(b"a"),
            Bytes::new(),
            Bytes::from(vec![0u8, 1, 2]),
        ];
        let raw = owned_key_list(&keys).into_raw();
        // SAFETY: a list the library just made, not yet freed.
        let list = unsafe { &*raw };
        assert_eq!(list.count, 3);
        // SAFETY: `keys` points to `count` entries.
        let entries = unsafe { std::slice::from_raw_parts(list.keys, list.count) };
        for (entry, expected) in entries.iter().zip(&keys) {
            // SAFETY: each entry points into the list.
            assert_eq!(unsafe { read(entry.data, entry.len) }, &expected[..]);
        }
        // SAFETY: made by the library, freed once.
        unsafe { statestore_key_list_free(raw) };

        let none = owned_key_list(&[]).into_raw();
        // SAFETY: a list the library just made.
        let list = unsafe { &*none };
        assert!(list.keys.is_null() && list.count == 0);
        // SAFETY: made by the library, freed once.
        unsafe { statestore_key_list_free(none) };
    }

    #[test]
    fn set_and_delete_results_point_into_themselves_until_freed() {
        let set = owned_set_result(true, Some(&version())).into_raw();
        // SAFETY: a result the library just made.
        let view = unsafe { &*set };
        // SAFETY: the version points into the result.
        assert!(view.applied && unsafe { text(view.version) } == Some(version().to_string()));
        // SAFETY: made by the library, freed once.
        unsafe { statestore_set_result_free(set) };

        let deleted = owned_delete_result(DeleteOutcome::ValueMismatch, None).into_raw();
        // SAFETY: a result the library just made.
        let view = unsafe { &*deleted };
        assert_eq!(
            view.outcome,
            statestore_delete_outcome::STATESTORE_VALUE_MISMATCH as i32
        );
        assert!(view.version.is_null());
        // SAFETY: made by the library, freed once.
        unsafe { statestore_delete_result_free(deleted) };
        // SAFETY: NULL does nothing.
        unsafe { statestore_set_result_free(std::ptr::null_mut()) };
        // SAFETY: NULL does nothing.
        unsafe { statestore_delete_result_free(std::ptr::null_mut()) };
    }

    #[test]
    fn strings_given_out_are_freed_by_string_free() {
        let token = CString::new(version().to_string()).unwrap().into_raw();
        // SAFETY: a string the library made, freed once.
        unsafe { statestore_string_free(token) };
        // SAFETY: NULL does nothing.
        unsafe { statestore_string_free(std::ptr::null_mut()) };
    }

    #[test]
    fn per_call_options_are_read_from_the_c_struct_or_refused() {
        let token = CString::new(version().to_string()).unwrap();
        let options = statestore_set_options {
            condition: statestore_condition::STATESTORE_SET_IF_ABSENT as i32,
            has_expiry: true,
            expiry_ms: 1500,
            fencing_token: token.as_ptr(),
            persist: true,
            has_timeout: false,
            timeout_ms: 0,
        };
        // SAFETY: a live struct whose token is NUL-terminated.
        let set = unsafe { set_options(&options) }.unwrap();
        let expected = SetOptions::default()
            .condition(SetCondition::OnlyIfAbsent)
            .expiry(Duration::from_millis(1500))
            .fencing_token(version())
            .persist(true);
        assert_eq!(set, expected);
        // SAFETY: NULL is the default.
        assert!(unsafe { set_options(std::ptr::null()) }.is_ok());
        let bad = statestore_set_options {
            condition: 7,
            ..options
        };
        // SAFETY: a live struct.
        let error = unsafe { set_options(&bad) }.unwrap_err().to_string();
        assert!(error.contains("options->condition is 7"), "{error}");
        let zero = statestore_delete_options {
            fencing_token: std::ptr::null(),
            has_timeout: true,
            timeout_ms: 0,
        };
        // SAFETY: a live struct.
        let error = unsafe { delete_options(&zero) }.unwrap_err().to_string();
        assert!(error.starts_with("invalid argument: options: "), "{error}");
        // SAFETY: NULL is the default.
        assert!(unsafe { delete_options(std::ptr::null()) }.is_ok());
    }
}
