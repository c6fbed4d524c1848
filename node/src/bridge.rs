//! Translation between core results and JavaScript: promises settled from core's runtime,
//! blocking twins, errors with a stable `code`, bytes in and out.

use std::time::Duration;

use bytes::Bytes;
use napi::bindgen_prelude::{Buffer, Either, JsObjectValue, Object, ToNapiValue, Unknown};
use napi::{Env, JsValue};

use crate::bindings::{ErrorInfo, Pending};

/// A key or value as JavaScript passes it: a string (UTF-8) or a Buffer (the JS wrapper turns
/// any other Uint8Array into a Buffer over the same memory).
pub type JsBytes = Either<String, Buffer>;

/// Copies JavaScript bytes into core's `Bytes` (a string is moved, not copied again).
pub fn bytes(value: JsBytes) -> Bytes {
    match value {
        Either::A(text) => Bytes::from(text),
        Either::B(buffer) => Bytes::copy_from_slice(&buffer),
    }
}

/// A JavaScript number of milliseconds as a duration. The JS wrapper checked the type; a
/// negative, NaN or unrepresentable value is core's `INVALID_ARGUMENT`, naming the parameter
/// (as every binding reports bad values).
pub fn millis(name: &str, ms: f64) -> statestore::Result<Duration> {
    if ms.is_nan() || ms < 0.0 {
        return Err(statestore::Error::InvalidArgument(format!(
            "{name}: {ms} ms is not a duration (it must be a number >= 0)"
        )));
    }
    Duration::try_from_secs_f64(ms / 1000.0)
        .map_err(|_| statestore::Error::InvalidArgument(format!("{name}: {ms} ms is too long")))
}

/// [`millis`] of an optional argument.
pub fn millis_opt(name: &str, ms: Option<f64>) -> statestore::Result<Option<Duration>> {
    ms.map(|ms| millis(name, ms)).transpose()
}

/// Bytes for JavaScript: a Buffer (copied once into V8's heap).
pub fn buffer(bytes: &Bytes) -> Buffer {
    Buffer::from(bytes.to_vec())
}

/// Builds the JavaScript error for a core error: an `Error` whose `code` is
/// `'STATESTORE_' + name`, with the numeric core code in `errno` and `coreCode`.
pub fn js_error(env: &Env, error: &statestore::Error) -> napi::Error {
    let info = ErrorInfo::from(error);
    match build_error(env, &info) {
        Ok(error) => error,
        Err(failed) => failed,
    }
}

fn build_error(env: &Env, info: &ErrorInfo) -> napi::Result<napi::Error> {
    let code = format!("STATESTORE_{}", info.name);
    let mut object = env.create_error(napi::Error::new(
        napi::Status::GenericFailure,
        info.message.clone(),
    ))?;
    object.set_named_property("code", code)?;
    object.set_named_property("coreCode", info.code as i32)?;
    object.set_named_property("errno", info.code as i32)?;
    object.set_named_property("category", info.category.name())?;
    object.set_named_property("outcomeUnknown", info.outcome_unknown)?;
    Ok(napi::Error::from(object.to_unknown()))
}

/// A JavaScript error for a core error, thrown from a synchronous call.
pub fn sync<T>(env: &Env, result: statestore::Result<T>) -> napi::Result<T> {
    result.map_err(|error| js_error(env, &error))
}

/// Runs a core call to completion on the calling (JavaScript) thread: the `…Sync` twins.
pub fn wait<T: Send + 'static>(env: &Env, pending: Pending<T>) -> napi::Result<T> {
    sync(env, pending.wait())
}

/// Returns a Promise settled when `pending` completes: `convert` builds the JavaScript value
/// on the JavaScript thread; a core error rejects with [`js_error`].
///
/// The settlement is handed over from whichever runtime thread completes the call
/// (`on_complete_inline`: no extra thread hop); napi's deferred queues it to the JS thread and
/// drops it safely if the environment is torn down first.
pub fn promise<'env, T, D, C>(
    env: &'env Env,
    pending: Pending<T>,
    convert: C,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    D: ToNapiValue + 'static,
    C: FnOnce(&Env, T) -> napi::Result<D> + Send + 'static,
{
    let (deferred, promise) =
        env.create_deferred::<D, Box<dyn FnOnce(Env) -> napi::Result<D>>>()?;
    pending.on_complete_inline(move |result| {
        deferred.resolve(Box::new(move |env: Env| match result {
            Ok(value) => convert(&env, value),
            Err(error) => Err(js_error(&env, &error)),
        }))
    });
    Ok(promise)
}

/// Keeps the value of an `Unknown` alive as a napi error (used to reject with a given object).
#[allow(dead_code)]
pub fn error_from(value: Unknown<'_>) -> napi::Error {
    napi::Error::from(value)
}
