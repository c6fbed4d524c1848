//! Batches: `statestore_get_many`, `statestore_set_many`, `statestore_delete_many` (blocking
//! and `_async`). One call into the library per batch; the batch runs pipelined inside it, and
//! the caller gets one result with an item per key.

use std::ffi::{c_char, c_void};

use bytes::Bytes;
use statestore_core::bindings::ErrorInfo;
use statestore_core::{Client, DeleteResult, Result, SetResult, Value};

use crate::client::{
    delete_options, owned_delete_result, owned_set_result, set_options, statestore_bytes,
    statestore_client, statestore_delete_options, statestore_delete_result, statestore_set_options,
    statestore_set_result, statestore_value, value_of, OwnedDeleteResult, OwnedSetResult,
    OwnedValue, CLIENTS,
};
use crate::reply::{Owned, PreparedCall, Reply};
use crate::status::statestore_status;
use crate::util::{self, CText, Out};

/// One key's item of a `statestore_get_many_result`.
#[repr(C)]
pub struct statestore_get_item {
    /// `STATESTORE_OK`, or this key's error (the others are unaffected).
    pub status: statestore_status,
    /// The error's message, or NULL when `status` is `STATESTORE_OK`.
    pub message: *const c_char,
    /// Whether the key exists (false also when `status` is an error).
    pub found: bool,
    /// The value and its version when `found`; all NULL and 0 otherwise.
    pub value: statestore_value,
}

/// One item of a `statestore_set_many_result`.
#[repr(C)]
pub struct statestore_set_item {
    /// `STATESTORE_OK`, or this item's error (e.g. a fencing token too old for its key).
    pub status: statestore_status,
    /// The error's message, or NULL when `status` is `STATESTORE_OK`.
    pub message: *const c_char,
    /// The outcome when `status` is `STATESTORE_OK`; false and NULL otherwise.
    pub result: statestore_set_result,
}

/// One key's item of a `statestore_delete_many_result`.
#[repr(C)]
pub struct statestore_delete_item {
    /// `STATESTORE_OK`, or this key's error.
    pub status: statestore_status,
    /// The error's message, or NULL when `status` is `STATESTORE_OK`.
    pub message: *const c_char,
    /// The outcome when `status` is `STATESTORE_OK`; `STATESTORE_DELETED` (0) and NULL
    /// otherwise: read `status` first.
    pub result: statestore_delete_result,
}

/// The result of `statestore_get_many()`: `count` items, in the order of the keys. Free it
/// with `statestore_get_many_result_free()`.
#[repr(C)]
pub struct statestore_get_many_result {
    /// The items (NULL when `count` is 0).
    pub items: *const statestore_get_item,
    /// The number of items: the number of keys.
    pub count: usize,
}

/// The result of `statestore_set_many()`: `count` items, in the order of the pairs. Free it
/// with `statestore_set_many_result_free()`.
#[repr(C)]
pub struct statestore_set_many_result {
    /// The items (NULL when `count` is 0).
    pub items: *const statestore_set_item,
    /// The number of items.
    pub count: usize,
}

/// The result of `statestore_delete_many()`: `count` items, in the order of the keys. Free
/// it with `statestore_delete_many_result_free()`.
#[repr(C)]
pub struct statestore_delete_many_result {
    /// The items (NULL when `count` is 0).
    pub items: *const statestore_delete_item,
    /// The number of items.
    pub count: usize,
}

/// Each key's message and converted result, which the item views point into.
type Kept<K> = Vec<(Option<CText>, Option<K>)>;

type OwnedGetMany = Owned<statestore_get_many_result, (Vec<statestore_get_item>, Kept<OwnedValue>)>;
type OwnedSetMany =
    Owned<statestore_set_many_result, (Vec<statestore_set_item>, Kept<OwnedSetResult>)>;
type OwnedDeleteMany =
    Owned<statestore_delete_many_result, (Vec<statestore_delete_item>, Kept<OwnedDeleteResult>)>;

/// A batch's results as item views (`item` of each key's status, message and converted
/// result) and what they point into. The views point into heap memory of `Kept` (strings,
/// bytes), which moving it does not move.
fn items<T, K, I>(
    results: Vec<Result<T>>,
    convert: impl Fn(T) -> K,
    item: impl Fn(statestore_status, *const c_char, Option<&K>) -> I,
) -> (Vec<I>, Kept<K>) {
    let kept: Vec<(statestore_status, Option<CText>, Option<K>)> = results
        .into_iter()
        .map(|result| match result {
            Ok(value) => (statestore_status::STATESTORE_OK, None, Some(convert(value))),
            Err(error) => {
                let info = ErrorInfo::from(&error);
                let status = statestore_status::from_code(info.code);
                (status, Some(CText::new(info.message)), None)
            }
        })
        .collect();
    let views = kept
        .iter()
        .map(|(status, message, converted)| item(*status, CText::ptr(message), converted.as_ref()))
        .collect();
    let kept = kept.into_iter().map(|(_, m, k)| (m, k)).collect();
    (views, kept)
}

fn first<I>(views: &[I]) -> *const I {
    if views.is_empty() {
        std::ptr::null()
    } else {
        views.as_ptr()
    }
}

fn get_many_result(results: Vec<Result<Option<Value>>>) -> OwnedGetMany {
    let (views, kept) = items(
        results,
        |found| found.map(|v| value_of(v.value, v.version.as_ref())),
        |status, message, found: Option<&Option<OwnedValue>>| {
            let value = found.and_then(Option::as_ref);
            statestore_get_item {
                status,
                message,
                found: value.is_some(),
                value: statestore_value {
                    data: value.map_or(std::ptr::null(), |v| v.view.data),
                    len: value.map_or(0, |v| v.view.len),
                    version: value.map_or(std::ptr::null(), |v| v.view.version),
                },
            }
        },
    );
    Owned {
        view: statestore_get_many_result {
            items: first(&views),
            count: views.len(),
        },
        keep: (
            views,
            kept.into_iter().map(|(m, k)| (m, k.flatten())).collect(),
        ),
    }
}

fn set_many_result(results: Vec<Result<SetResult>>) -> OwnedSetMany {
    let (views, kept) = items(
        results,
        |r| owned_set_result(r.applied, r.version.as_ref()),
        |status, message, result: Option<&OwnedSetResult>| statestore_set_item {
            status,
            message,
            result: statestore_set_result {
                applied: result.is_some_and(|r| r.view.applied),
                version: result.map_or(std::ptr::null(), |r| r.view.version),
            },
        },
    );
    Owned {
        view: statestore_set_many_result {
            items: first(&views),
            count: views.len(),
        },
        keep: (views, kept),
    }
}

fn delete_many_result(results: Vec<Result<DeleteResult>>) -> OwnedDeleteMany {
    let (views, kept) = items(
        results,
        |r| owned_delete_result(r.outcome, r.version.as_ref()),
        |status, message, result: Option<&OwnedDeleteResult>| statestore_delete_item {
            status,
            message,
            result: statestore_delete_result {
                outcome: result.map_or(0, |r| r.view.outcome),
                version: result.map_or(std::ptr::null(), |r| r.view.version),
            },
        },
    );
    Owned {
        view: statestore_delete_many_result {
            items: first(&views),
            count: views.len(),
        },
        keep: (views, kept),
    }
}

/// The `count` byte strings at `list` (the argument `name`), copied; each a key when `keys`.
/// NULL is allowed only with `count` 0 (an empty batch).
///
/// # Safety
/// `list` is NULL or points to `count` readable `statestore_bytes`, each pointing to its
/// `len` readable bytes.
unsafe fn byte_list(
    list: *const statestore_bytes,
    count: usize,
    name: &str,
    keys: bool,
) -> Result<Vec<Bytes>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(util::null(name));
    }
    // SAFETY: not NULL, so `count` readable items (this function's contract).
    let items = unsafe { std::slice::from_raw_parts(list, count) };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let name = format!("{name}[{i}]");
            if keys {
                // SAFETY: each item points to its `len` readable bytes (this function's
                // contract).
                unsafe { util::key(item.data, item.len, &name) }
            } else {
                // SAFETY: as for a key.
                unsafe { util::bytes(item.data, item.len, &name) }
            }
        })
        .collect()
}

/// A GET of each key from the C arguments, which are copied before it returns.
///
/// # Safety
/// As `statestore_get_many()` for `keys`.
unsafe fn get_many_op(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    count: usize,
    timeout_ms: i64,
) -> Result<PreparedCall<Vec<Result<Option<Value>>>, OwnedGetMany>> {
    let state = CLIENTS.get(client, "client")?;
    let timeout = match u64::try_from(timeout_ms) {
        Ok(ms) => Some(util::positive_millis(ms, "timeout_ms")?),
        Err(_) => None,
    };
    // SAFETY: as `statestore_get_many()` requires of `keys` (this function's contract).
    let keys = unsafe { byte_list(keys, count, "keys", true) }?;
    let client: Client = state.client.clone();
    Ok(PreparedCall::new(
        &state,
        async move { client.get_many_with_timeout(keys, timeout).await },
        get_many_result,
    ))
}

/// A SET of each pair from the C arguments, which are copied before it returns.
///
/// # Safety
/// As `statestore_set_many()` for `keys`, `values` and `options`.
unsafe fn set_many_op(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    values: *const statestore_bytes,
    count: usize,
    options: *const statestore_set_options,
) -> Result<PreparedCall<Vec<Result<SetResult>>, OwnedSetMany>> {
    let state = CLIENTS.get(client, "client")?;
    // SAFETY: as `statestore_set_many()` requires (this function's contract).
    let keys = unsafe { byte_list(keys, count, "keys", true) }?;
    // SAFETY: as `statestore_set_many()` requires (this function's contract).
    let values = unsafe { byte_list(values, count, "values", false) }?;
    // SAFETY: NULL or a readable `statestore_set_options` (this function's contract).
    let options = unsafe { set_options(options) }?;
    let client: Client = state.client.clone();
    Ok(PreparedCall::new(
        &state,
        async move { client.set_many(keys.into_iter().zip(values), options).await },
        set_many_result,
    ))
}

/// A DEL of each key from the C arguments, which are copied before it returns.
///
/// # Safety
/// As `statestore_delete_many()` for `keys` and `options`.
unsafe fn delete_many_op(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    count: usize,
    options: *const statestore_delete_options,
) -> Result<PreparedCall<Vec<Result<DeleteResult>>, OwnedDeleteMany>> {
    let state = CLIENTS.get(client, "client")?;
    // SAFETY: as `statestore_delete_many()` requires (this function's contract).
    let keys = unsafe { byte_list(keys, count, "keys", true) }?;
    // SAFETY: NULL or a readable `statestore_delete_options` (this function's contract).
    let options = unsafe { delete_options(options) }?;
    let client: Client = state.client.clone();
    Ok(PreparedCall::new(
        &state,
        async move { client.delete_many(keys, options).await },
        delete_many_result,
    ))
}

/// Reads `count` keys in one call: `*result` gets one item per key, in their order, each
/// with its own status (a key's failure does not fail the others); free it with
/// `statestore_get_many_result_free()`. The protocol has no multi-key command: the GETs are
/// pipelined inside the library, at most the connect option `max_in_flight` at a time.
/// Returns an error status, with nothing sent, when an argument is wrong (NULL `keys` with
/// `count` > 0, an empty key: the message names `keys[i]`). `timeout_ms` < 0: the client's
/// default timeout for each GET (0 is refused).
///
/// # Safety
/// `keys` is NULL (only with `count` 0) or points to `count` `statestore_bytes`, each
/// pointing to `len` readable bytes; `result` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_get_many(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    count: usize,
    timeout_ms: i64,
    result: *mut *mut statestore_get_many_result,
) -> statestore_status {
    // SAFETY: `result` is NULL or writable during this call (this function's contract).
    let result = unsafe { Out::new(result) };
    Reply::required(result, "result").run(|| {
        // SAFETY: `keys` as `get_many_op` requires (this function's contract); read before
        // `run` returns.
        unsafe { get_many_op(client, keys, count, timeout_ms) }
    })
}

/// Completion of `statestore_get_many_async()`: `result` is borrowed for the callback (NULL
/// on failure of the whole call); `message` is NULL on success.
pub type statestore_get_many_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        result: *const statestore_get_many_result,
    ),
>;

/// `statestore_get_many()` without blocking: `callback` runs once, with every key's item.
///
/// # Safety
/// `keys` as for `statestore_get_many()` (copied before the function returns); `callback` may
/// be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_get_many_async(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    count: usize,
    timeout_ms: i64,
    callback: statestore_get_many_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `keys` as `get_many_op` requires (this function's contract); copied before
        // `run` returns.
        unsafe { get_many_op(client, keys, count, timeout_ms) }
    })
}

/// Sets `keys[i]` to `values[i]` for each of the `count` pairs, all with `options` (NULL:
/// defaults). `*result` gets one item per pair, in their order, each with its own status;
/// free it with `statestore_set_many_result_free()`. Pipelined and checked as
/// `statestore_get_many()`: an invalid pair (an empty key, a value too large for the broker)
/// fails the call, naming it, before anything is sent.
///
/// # Safety
/// `keys` and `values` are NULL (only with `count` 0) or point to `count` `statestore_bytes`
/// each; `options` as for `statestore_set()`; `result` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_set_many(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    values: *const statestore_bytes,
    count: usize,
    options: *const statestore_set_options,
    result: *mut *mut statestore_set_many_result,
) -> statestore_status {
    // SAFETY: `result` is NULL or writable during this call (this function's contract).
    let result = unsafe { Out::new(result) };
    Reply::required(result, "result").run(|| {
        // SAFETY: the arguments as `set_many_op` requires (this function's contract).
        unsafe { set_many_op(client, keys, values, count, options) }
    })
}

/// Completion of `statestore_set_many_async()`: `result` is borrowed for the callback.
pub type statestore_set_many_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        result: *const statestore_set_many_result,
    ),
>;

/// `statestore_set_many()` without blocking.
///
/// # Safety
/// The arguments as for `statestore_set_many()` (copied before the function returns);
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_set_many_async(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    values: *const statestore_bytes,
    count: usize,
    options: *const statestore_set_options,
    callback: statestore_set_many_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: the arguments as `set_many_op` requires (this function's contract).
        unsafe { set_many_op(client, keys, values, count, options) }
    })
}

/// Deletes each of `count` keys with `options` (NULL: defaults). `*result` gets one item per
/// key, in their order, each with its own status; free it with
/// `statestore_delete_many_result_free()`. Pipelined and checked as `statestore_get_many()`.
///
/// # Safety
/// `keys` as for `statestore_get_many()`; `options` as for `statestore_delete()`; `result` is
/// NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_delete_many(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    count: usize,
    options: *const statestore_delete_options,
    result: *mut *mut statestore_delete_many_result,
) -> statestore_status {
    // SAFETY: `result` is NULL or writable during this call (this function's contract).
    let result = unsafe { Out::new(result) };
    Reply::required(result, "result").run(|| {
        // SAFETY: the arguments as `delete_many_op` requires (this function's contract).
        unsafe { delete_many_op(client, keys, count, options) }
    })
}

/// Completion of `statestore_delete_many_async()`: `result` is borrowed for the callback.
pub type statestore_delete_many_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        result: *const statestore_delete_many_result,
    ),
>;

/// `statestore_delete_many()` without blocking.
///
/// # Safety
/// The arguments as for `statestore_delete_many()` (copied before the function returns);
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_delete_many_async(
    client: *const statestore_client,
    keys: *const statestore_bytes,
    count: usize,
    options: *const statestore_delete_options,
    callback: statestore_delete_many_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: the arguments as `delete_many_op` requires (this function's contract).
        unsafe { delete_many_op(client, keys, count, options) }
    })
}

/// Frees a `statestore_get_many()` result. NULL does nothing.
///
/// # Safety
/// `result` is NULL or a result of `statestore_get_many()`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_get_many_result_free(result: *mut statestore_get_many_result) {
    // SAFETY: the library makes every such result as an `OwnedGetMany`; `result` is NULL or
    // one not yet freed (this function's contract).
    unsafe { OwnedGetMany::free(result) }
}

/// Frees a `statestore_set_many()` result. NULL does nothing.
///
/// # Safety
/// `result` is NULL or a result of `statestore_set_many()`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_set_many_result_free(result: *mut statestore_set_many_result) {
    // SAFETY: as `statestore_get_many_result_free()`, for an `OwnedSetMany`.
    unsafe { OwnedSetMany::free(result) }
}

/// Frees a `statestore_delete_many()` result. NULL does nothing.
///
/// # Safety
/// `result` is NULL or a result of `statestore_delete_many()`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_delete_many_result_free(
    result: *mut statestore_delete_many_result,
) {
    // SAFETY: as `statestore_get_many_result_free()`, for an `OwnedDeleteMany`.
    unsafe { OwnedDeleteMany::free(result) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statestore_core::Error;

    #[test]
    fn a_batch_result_points_into_itself_and_keeps_each_keys_status() {
        let results = vec![Ok(None), Err(Error::InvalidArgument("bad".into()))];
        let raw = get_many_result(results).into_raw();
        // SAFETY: `raw` is a live result until freed below.
        let view = unsafe { &*raw };
        // SAFETY: `count` items at `items`, alive with the result.
        let items = unsafe { std::slice::from_raw_parts(view.items, view.count) };
        assert_eq!(items.len(), 2);
        assert!(!items[0].found && items[0].value.data.is_null() && items[0].message.is_null());
        assert_eq!(items[0].status, statestore_status::STATESTORE_OK);
        assert_eq!(
            items[1].status,
            statestore_status::STATESTORE_ERR_INVALID_ARGUMENT
        );
        assert!(!items[1].message.is_null());
        // SAFETY: `raw` came from `into_raw` and is freed once.
        unsafe { statestore_get_many_result_free(raw) };
        // SAFETY: NULL does nothing.
        unsafe { statestore_get_many_result_free(std::ptr::null_mut()) };
        let empty = get_many_result(Vec::new()).into_raw();
        // SAFETY: as above.
        let view = unsafe { &*empty };
        assert!(view.items.is_null() && view.count == 0);
        // SAFETY: as above.
        unsafe { statestore_get_many_result_free(empty) };
    }
}
