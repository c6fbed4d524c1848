//! JavaScript errors: core's, with a stable `code`, and Node's own `TypeError`s.

use std::ptr;

use napi::bindgen_prelude::Object;
use napi::sys;
use napi::{Env, JsValue};
use statestore::bindings::ErrorInfo;

use crate::check;

/// Builds the JavaScript error for a core error: an `Error` whose `code` is
/// `'STATESTORE_' + name`, with the numeric core code in `errno` and `coreCode` (as a value:
/// an item of a batch's results).
pub fn js_error(env: &Env, error: &statestore::Error) -> napi::Error {
    match error_object(env, error) {
        Ok(object) => napi::Error::from(object.to_unknown()),
        Err(failed) => failed,
    }
}

/// Throws the [`js_error`] of a core error now, and returns the error that tells napi-rs an
/// exception is pending (it then throws nothing more): for a native function to return at
/// once. Cheaper than returning the [`js_error`], which napi-rs reads back (its message, its
/// cause) and keeps behind a reference until it throws it.
pub fn throw(env: &Env, error: &statestore::Error) -> napi::Error {
    let object = match error_object(env, error) {
        Ok(object) => object,
        Err(failed) => return failed,
    };
    // SAFETY: `env` is the environment of the JavaScript call running on this thread (a
    // `&Env` is only handed out there) and `object` a value made in it.
    let status = unsafe { sys::napi_throw(env.raw(), object.raw()) };
    if status == sys::Status::napi_ok {
        napi::Error::new(napi::Status::PendingException, String::new())
    } else {
        napi::Error::from(object.to_unknown())
    }
}

/// The `Error` of a core error, made with the fewest engine calls: a refused call's cost is
/// mostly this (the engine walks the stack as any `Error` is made), so `code` is given to
/// `napi_create_error` and the other fields are defined in one call.
pub fn error_object<'env>(env: &'env Env, error: &statestore::Error) -> napi::Result<Object<'env>> {
    let info = ErrorInfo::from(error);
    let raw = env.raw();
    let code = format!("STATESTORE_{}", info.name);
    let text = |text: &str| -> napi::Result<sys::napi_value> {
        let mut made = ptr::null_mut();
        // SAFETY: `raw` is the environment of the JavaScript call running on this thread (a
        // `&Env` is only handed out there); `text` is UTF-8 the call copies; `made` a local.
        check(unsafe {
            sys::napi_create_string_utf8(raw, text.as_ptr().cast(), text.len() as isize, &mut made)
        })?;
        Ok(made)
    };
    let (message, code, category) = (
        text(&info.message)?,
        text(&code)?,
        text(info.category.name())?,
    );
    let (mut number, mut outcome, mut object) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: as above; the values passed were made in `raw` just now, the results are locals.
    check(unsafe { sys::napi_create_int32(raw, info.code as i32, &mut number) })?;
    // SAFETY: as above.
    check(unsafe { sys::napi_get_boolean(raw, info.outcome_unknown, &mut outcome) })?;
    // `code` is set by the engine as the error is made.
    // SAFETY: as above.
    check(unsafe { sys::napi_create_error(raw, code, message, &mut object) })?;
    // Plain data properties, as an assignment makes them: one call for all four.
    let field = |name: &'static [u8], value: sys::napi_value| sys::napi_property_descriptor {
        utf8name: name.as_ptr().cast(),
        name: ptr::null_mut(),
        method: None,
        getter: None,
        setter: None,
        value,
        attributes: sys::PropertyAttributes::writable
            | sys::PropertyAttributes::enumerable
            | sys::PropertyAttributes::configurable,
        data: ptr::null_mut(),
    };
    let fields = [
        field(b"coreCode\0", number),
        field(b"errno\0", number),
        field(b"category\0", category),
        field(b"outcomeUnknown\0", outcome),
    ];
    // SAFETY: as above; each name is a NUL-terminated static string, each value made in `raw`.
    check(unsafe { sys::napi_define_properties(raw, object, fields.len(), fields.as_ptr()) })?;
    Ok(Object::from_raw(raw, object))
}

/// Throws a `TypeError` with Node's `code`, as `node:internal/errors` makes them.
pub fn type_error(env: &Env, code: &str, message: &str) -> napi::Error {
    let raw = env.raw();
    let made = (|| -> napi::Result<sys::napi_value> {
        let (code, message) = (
            crate::js::string(env, code)?,
            crate::js::string(env, message)?,
        );
        let mut error = ptr::null_mut();
        // SAFETY: `raw` is the environment of the JavaScript call running on this thread (a
        // `&Env` is only handed out there); the strings were made in it; `error` is a local.
        check(unsafe { sys::napi_create_type_error(raw, code, message, &mut error) })?;
        Ok(error)
    })();
    let error = match made {
        Ok(error) => error,
        Err(failed) => return failed,
    };
    // SAFETY: as above; `error` was made in `raw` just now.
    match check(unsafe { sys::napi_throw(raw, error) }) {
        Ok(()) => napi::Error::new(napi::Status::PendingException, String::new()),
        Err(failed) => failed,
    }
}
