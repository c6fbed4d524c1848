//! Reading JavaScript values through Node-API: what type a value is, its text, its bytes, its
//! properties and items. Every function runs on the JavaScript thread of `env`, inside the
//! native call that was given it (a `&Env` is only handed out there), and its values are
//! that environment's.

use std::ffi::CStr;
use std::ptr;

use bytes::Bytes;
use napi::sys::{self, ValueType};
use napi::Env;

use crate::check;

/// A JavaScript string of `text`.
pub(crate) fn string(env: &Env, text: &str) -> napi::Result<sys::napi_value> {
    let mut made = ptr::null_mut();
    // SAFETY: the environment of the call on this thread; `text` is UTF-8 the call copies.
    check(unsafe {
        sys::napi_create_string_utf8(
            env.raw(),
            text.as_ptr().cast(),
            text.len() as isize,
            &mut made,
        )
    })?;
    Ok(made)
}

/// The type of `value` (`typeof`, with `null` apart).
pub(crate) fn type_of(env: &Env, value: sys::napi_value) -> napi::Result<sys::napi_valuetype> {
    let mut kind = 0;
    // SAFETY: the environment of the call on this thread and one of its values.
    check(unsafe { sys::napi_typeof(env.raw(), value, &mut kind) })?;
    Ok(kind)
}

/// The property `name` of `object`.
pub(crate) fn property(
    env: &Env,
    object: sys::napi_value,
    name: &CStr,
) -> napi::Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: the environment of the call on this thread, one of its objects, a NUL-terminated
    // name.
    check(unsafe { sys::napi_get_named_property(env.raw(), object, name.as_ptr(), &mut value) })?;
    Ok(value)
}

/// A JavaScript string's text, as UTF-8 (a lone surrogate becomes U+FFFD).
pub(crate) fn text_of(env: &Env, value: sys::napi_value) -> napi::Result<String> {
    let raw = env.raw();
    let mut len = 0;
    // SAFETY: the environment of the call on this thread and a string of it; a null buffer
    // asks for the length only.
    check(unsafe { sys::napi_get_value_string_utf8(raw, value, ptr::null_mut(), 0, &mut len) })?;
    let mut buffer = vec![0u8; len + 1];
    let mut written = 0;
    // SAFETY: as above; `buffer` holds `len + 1` bytes (the text and its NUL).
    check(unsafe {
        sys::napi_get_value_string_utf8(
            raw,
            value,
            buffer.as_mut_ptr().cast(),
            len + 1,
            &mut written,
        )
    })?;
    buffer.truncate(written);
    // V8 writes UTF-8 only.
    Ok(String::from_utf8(buffer).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into()))
}

/// Whether the JavaScript string `value` is valid Unicode: no lone surrogate (which has no
/// UTF-8 form, so the text read would be another key than the caller meant).
pub(crate) fn well_formed(env: &Env, value: sys::napi_value) -> napi::Result<bool> {
    let raw = env.raw();
    let mut len = 0;
    // SAFETY: the environment of the call on this thread and a string of it; a null buffer
    // asks for the length only.
    check(unsafe { sys::napi_get_value_string_utf16(raw, value, ptr::null_mut(), 0, &mut len) })?;
    let mut units = vec![0u16; len + 1];
    let mut written = 0;
    // SAFETY: as above; `units` holds `len + 1` code units (the text and its NUL).
    check(unsafe {
        sys::napi_get_value_string_utf16(raw, value, units.as_mut_ptr(), len + 1, &mut written)
    })?;
    Ok(char::decode_utf16(units[..written].iter().copied()).all(|c| c.is_ok()))
}

/// How Node's errors show a value received: `type number (5)`, `an instance of Date`...
pub(crate) fn describe(env: &Env, value: sys::napi_value) -> napi::Result<String> {
    let kind = type_of(env, value)?;
    let name_of = |object| -> napi::Result<Option<String>> {
        let name = property(env, object, c"name")?;
        Ok(match type_of(env, name)? {
            ValueType::napi_string => Some(text_of(env, name)?).filter(|n| !n.is_empty()),
            _ => None,
        })
    };
    Ok(match kind {
        ValueType::napi_undefined => "undefined".into(),
        ValueType::napi_null => "null".into(),
        ValueType::napi_function => {
            format!(
                "function {}",
                name_of(value)?.as_deref().unwrap_or("<anonymous>")
            )
        }
        ValueType::napi_object => {
            let constructor = property(env, value, c"constructor")?;
            match type_of(env, constructor)? {
                ValueType::napi_function => match name_of(constructor)? {
                    Some(name) => format!("an instance of {name}"),
                    None => "an object".into(),
                },
                _ => "an object".into(),
            }
        }
        ValueType::napi_symbol => "type symbol".into(),
        _ => {
            let mut shown = ptr::null_mut();
            // SAFETY: the environment of the call on this thread and a primitive of it other
            // than a symbol (which alone cannot be made a string).
            check(unsafe { sys::napi_coerce_to_string(env.raw(), value, &mut shown) })?;
            let shown = text_of(env, shown)?;
            let shown = match shown.chars().count() > 28 {
                true => format!("{}...", shown.chars().take(25).collect::<String>()),
                false => shown,
            };
            let (name, quote) = match kind {
                ValueType::napi_string => ("string", "'"),
                ValueType::napi_number => ("number", ""),
                ValueType::napi_boolean => ("boolean", ""),
                ValueType::napi_bigint => ("bigint", ""),
                _ => ("unknown", ""),
            };
            format!("type {name} ({quote}{shown}{quote})")
        }
    })
}

/// Whether `value` is `undefined` or `null`.
pub(crate) fn is_nullish(env: &Env, value: sys::napi_value) -> napi::Result<bool> {
    Ok(matches!(
        type_of(env, value)?,
        ValueType::napi_undefined | ValueType::napi_null
    ))
}

/// The bytes of a `Uint8Array` (a `Buffer` is one), or `None` for any other value.
pub(crate) fn uint8_array(env: &Env, value: sys::napi_value) -> napi::Result<Option<Bytes>> {
    let raw = env.raw();
    let mut is = false;
    // SAFETY: the environment of the call on this thread and one of its values.
    check(unsafe { sys::napi_is_typedarray(raw, value, &mut is) })?;
    if !is {
        return Ok(None);
    }
    let (mut kind, mut len, mut data) = (0, 0, ptr::null_mut());
    // SAFETY: as above, a typed array; the outputs are locals (the buffer and offset unread).
    check(unsafe {
        sys::napi_get_typedarray_info(
            raw,
            value,
            &mut kind,
            &mut len,
            &mut data,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    })?;
    if kind != sys::TypedarrayType::uint8_array {
        return Ok(None);
    }
    if len == 0 || data.is_null() {
        return Ok(Some(Bytes::new()));
    }
    // SAFETY: `data` points at the array's `len` bytes, alive while this call runs (no
    // JavaScript runs in between); they are copied before it returns.
    let slice = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    Ok(Some(Bytes::copy_from_slice(slice)))
}

/// Calls the global `Array.from` or `Object.entries` (`holder.method`) on `value`.
pub(crate) fn call_global(
    env: &Env,
    holder: &CStr,
    method: &CStr,
    value: sys::napi_value,
) -> napi::Result<sys::napi_value> {
    let raw = env.raw();
    let mut global = ptr::null_mut();
    // SAFETY: the environment of the call on this thread; `global` is a local.
    check(unsafe { sys::napi_get_global(raw, &mut global) })?;
    let holder = property(env, global, holder)?;
    let function = property(env, holder, method)?;
    let mut result = ptr::null_mut();
    // SAFETY: as above; `function` is a builtin of this environment, `value` one of its
    // values, passed as the only argument.
    check(unsafe { sys::napi_call_function(raw, holder, function, 1, &value, &mut result) })?;
    Ok(result)
}

/// The items of an array.
pub(crate) fn items(env: &Env, array: sys::napi_value) -> napi::Result<Vec<sys::napi_value>> {
    let raw = env.raw();
    let mut len = 0;
    // SAFETY: the environment of the call on this thread and one of its arrays.
    check(unsafe { sys::napi_get_array_length(raw, array, &mut len) })?;
    (0..len)
        .map(|i| {
            let mut item = ptr::null_mut();
            // SAFETY: as above; `i` is below the array's length.
            check(unsafe { sys::napi_get_element(raw, array, i, &mut item) })?;
            Ok(item)
        })
        .collect()
}

/// Whether `value` is an Array.
pub(crate) fn is_array(env: &Env, value: sys::napi_value) -> napi::Result<bool> {
    let mut is = false;
    // SAFETY: the environment of the call on this thread and one of its values.
    check(unsafe { sys::napi_is_array(env.raw(), value, &mut is) })?;
    Ok(is)
}
