//! The arguments of every native method, checked and converted here, once: a value of the
//! wrong JavaScript type is a `TypeError` naming the parameter as Node's own functions word it
//! (`code: 'ERR_INVALID_ARG_TYPE'`), an unknown option one with `ERR_INVALID_ARG_VALUE`. Values
//! of the right type that core refuses (an empty key, a negative duration, an unknown
//! condition, a malformed version) are core's `STATESTORE_INVALID_ARGUMENT`, as in every
//! binding. Every error is thrown at once ([`Named`] methods return the error napi-rs then
//! leaves alone), so nothing is sent.

use std::fmt;
use std::ptr;
use std::time::Duration;

use bytes::Bytes;
use napi::bindgen_prelude::{Either, Object, Unknown};
use napi::sys::{self, ValueType};
use napi::{Env, JsValue};
use statestore::bindings;
use statestore::{Hlc, SetCondition};

use crate::check;
use crate::errors::{throw, type_error};
use crate::js::{
    call_global, describe, is_array, is_nullish, items, property, string, text_of, type_of,
    uint8_array, well_formed,
};

/// A JavaScript value passed to a native method, to be converted into what core takes.
pub type Arg<'e> = Unknown<'e>;

/// The `Err` of a failed conversion: the error is already thrown.
type Thrown = napi::Error;

/// Core's error for an argument, thrown now.
fn core(env: &Env, error: statestore::Error) -> Thrown {
    throw(env, &error)
}

/// `The "name" argument must be <expected>. Received <value>`.
fn wrong_type(env: &Env, name: &str, expected: &str, value: sys::napi_value) -> Thrown {
    let received = describe(env, value).unwrap_or_else(|_| "a value".into());
    let message = format!("The \"{name}\" argument must be {expected}. Received {received}");
    type_error(env, "ERR_INVALID_ARG_TYPE", &message)
}

/// An argument's name in errors (`key`, `options.ttl`, `keys[2]`, `items[0][1]`), written out
/// only when a message needs it: nothing is allocated for the arguments of a call that
/// converts.
#[derive(Clone, Copy)]
struct Name {
    base: &'static str,
    field: Option<&'static str>,
    items: [Option<usize>; 2],
}

impl Name {
    fn item(self, i: usize) -> Name {
        let items = match self.items {
            [None, _] => [Some(i), None],
            [first, _] => [first, Some(i)],
        };
        Name { items, ..self }
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.base)?;
        if let Some(field) = self.field {
            write!(f, ".{field}")?;
        }
        for i in self.items.iter().flatten() {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}

/// One argument and its name in errors.
pub struct Named<'e> {
    env: &'e Env,
    value: sys::napi_value,
    name: Name,
}

/// The argument `value`, named `name` in errors.
pub fn arg<'e>(env: &'e Env, value: &Arg<'_>, name: &'static str) -> Named<'e> {
    Named {
        env,
        value: value.raw(),
        name: Name {
            base: name,
            field: None,
            items: [None; 2],
        },
    }
}

impl<'e> Named<'e> {
    /// The `TypeError` of this argument when it is not `expected`, thrown.
    pub fn wrong(&self, expected: &str) -> Thrown {
        wrong_type(self.env, &self.name.to_string(), expected, self.value)
    }

    /// Whether it is undefined or null.
    pub fn is_absent(&self) -> napi::Result<bool> {
        is_nullish(self.env, self.value)
    }

    /// A key or value: a string (its UTF-8) or a `Uint8Array` (a `Buffer`...).
    pub fn bytes(&self) -> napi::Result<Bytes> {
        if type_of(self.env, self.value)? == ValueType::napi_string {
            return self.string_text().map(Bytes::from);
        }
        uint8_array(self.env, self.value)?
            .ok_or_else(|| self.wrong("of type string or an instance of Buffer or Uint8Array"))
    }

    /// A string of valid Unicode.
    pub fn text(&self) -> napi::Result<String> {
        if type_of(self.env, self.value)? != ValueType::napi_string {
            return Err(self.wrong("of type string"));
        }
        self.string_text()
    }

    /// The text of a value known to be a string.
    fn string_text(&self) -> napi::Result<String> {
        let text = text_of(self.env, self.value)?;
        // A lone surrogate reads as U+FFFD: only then is the string looked at again.
        if text.contains('\u{FFFD}') && !well_formed(self.env, self.value)? {
            return Err(core(
                self.env,
                bindings::not_unicode(&self.name.to_string()),
            ));
        }
        Ok(text)
    }

    fn optional<T>(
        &self,
        kind: sys::napi_valuetype,
        expected: &str,
        read: impl FnOnce(&Self) -> napi::Result<T>,
    ) -> napi::Result<Option<T>> {
        if self.is_absent()? {
            return Ok(None);
        }
        if type_of(self.env, self.value)? != kind {
            return Err(self.wrong(expected));
        }
        read(self).map(Some)
    }

    /// An optional number.
    pub fn number(&self) -> napi::Result<Option<f64>> {
        self.optional(ValueType::napi_number, "of type number", Self::float)
    }

    fn float(&self) -> napi::Result<f64> {
        let mut number = 0.0;
        // SAFETY: the environment of the call on this thread and one of its numbers.
        check(unsafe { sys::napi_get_value_double(self.env.raw(), self.value, &mut number) })?;
        Ok(number)
    }

    /// An optional string or number.
    pub fn string_or_number(&self) -> napi::Result<Option<Either<String, f64>>> {
        match type_of(self.env, self.value)? {
            ValueType::napi_string => self.string_text().map(|text| Some(Either::A(text))),
            _ => Ok(self.number()?.map(Either::B)),
        }
    }

    /// An optional `SET` condition, by core's names.
    pub fn condition(&self) -> napi::Result<Option<SetCondition>> {
        let name = self.string()?;
        name.map(|name| {
            bindings::set_condition(&name, &self.name.to_string()).map_err(|e| core(self.env, e))
        })
        .transpose()
    }

    /// An optional boolean.
    pub fn boolean(&self) -> napi::Result<Option<bool>> {
        self.optional(ValueType::napi_boolean, "of type boolean", |this| {
            let mut flag = false;
            // SAFETY: the environment of the call on this thread and one of its booleans.
            check(unsafe { sys::napi_get_value_bool(this.env.raw(), this.value, &mut flag) })?;
            Ok(flag)
        })
    }

    /// An optional string.
    pub fn string(&self) -> napi::Result<Option<String>> {
        self.optional(ValueType::napi_string, "of type string", Self::string_text)
    }

    /// An optional duration in milliseconds, by core's rule.
    pub fn duration(&self) -> napi::Result<Option<Duration>> {
        let ms = self.optional(ValueType::napi_number, MS, Self::float)?;
        ms.map(|ms| {
            bindings::duration::millis(&self.name.to_string(), ms).map_err(|e| core(self.env, e))
        })
        .transpose()
    }

    /// A duration in milliseconds that must be given.
    pub fn required_duration(&self) -> napi::Result<Duration> {
        self.duration()?.ok_or_else(|| self.wrong(MS))
    }

    /// An optional version or fencing token.
    pub fn token(&self) -> napi::Result<Option<Hlc>> {
        let text = self.optional(ValueType::napi_string, VERSION, Self::string_text)?;
        text.map(|text| {
            bindings::version(&text, &self.name.to_string()).map_err(|e| core(self.env, e))
        })
        .transpose()
    }

    /// A version that must be given, as text core has read.
    pub fn version(&self) -> napi::Result<String> {
        let token = self.token()?.ok_or_else(|| self.wrong(VERSION))?;
        Ok(token.to_string())
    }

    /// A function.
    pub fn function(&self) -> napi::Result<()> {
        self.function_or("of type function")
    }

    /// A function, or the error that it must be `expected`.
    pub fn function_or(&self, expected: &str) -> napi::Result<()> {
        match type_of(self.env, self.value)? {
            ValueType::napi_function => Ok(()),
            _ => Err(self.wrong(expected)),
        }
    }

    /// An optional `AbortSignal` (any object with a boolean `aborted` and an
    /// `addEventListener` method, as Node's `validateAbortSignal` takes it) and whether it
    /// has aborted.
    pub fn abort_signal(&self) -> napi::Result<Option<(Object<'e>, bool)>> {
        let (env, signal) = (self.env, self.value);
        if type_of(env, signal)? == ValueType::napi_undefined {
            return Ok(None);
        }
        let wrong = || self.wrong("an instance of AbortSignal");
        if type_of(env, signal)? != ValueType::napi_object
            || type_of(env, property(env, signal, c"addEventListener")?)?
                != ValueType::napi_function
        {
            return Err(wrong());
        }
        let aborted = property(env, signal, c"aborted")?;
        if type_of(env, aborted)? != ValueType::napi_boolean {
            return Err(wrong());
        }
        let mut flag = false;
        // SAFETY: the environment of the call on this thread and one of its booleans.
        check(unsafe { sys::napi_get_value_bool(env.raw(), aborted, &mut flag) })?;
        Ok(Some((Object::from_raw(env.raw(), signal), flag)))
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> napi::Result<bool> {
        Ok(type_of(self.env, self.value)? == ValueType::napi_null)
    }

    /// The items of an iterable (an Array, a Set... not a string or bytes), each named
    /// `name[i]`.
    fn each<T>(&self, item: impl Fn(Named) -> napi::Result<T>) -> napi::Result<Vec<T>> {
        let array = if is_array(self.env, self.value)? {
            self.value
        } else {
            if !self.iterable()? {
                return Err(self.wrong("an iterable (an Array, a Set...)"));
            }
            call_global(self.env, c"Array", c"from", self.value)?
        };
        items(self.env, array)?
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                item(Named {
                    env: self.env,
                    value,
                    name: self.name.item(i),
                })
            })
            .collect()
    }

    fn iterable(&self) -> napi::Result<bool> {
        if type_of(self.env, self.value)? != ValueType::napi_object
            || uint8_array(self.env, self.value)?.is_some()
        {
            return Ok(false);
        }
        let mut global = ptr::null_mut();
        // SAFETY: the environment of the call on this thread; `global` is a local.
        check(unsafe { sys::napi_get_global(self.env.raw(), &mut global) })?;
        let symbol = property(self.env, global, c"Symbol")?;
        let iterator = property(self.env, symbol, c"iterator")?;
        let mut method = ptr::null_mut();
        // SAFETY: as above; `iterator` is the well-known symbol, a key of any object.
        check(unsafe {
            sys::napi_get_property(self.env.raw(), self.value, iterator, &mut method)
        })?;
        Ok(type_of(self.env, method)? == ValueType::napi_function)
    }

    /// The keys of a batch.
    pub fn keys(&self) -> napi::Result<Vec<Bytes>> {
        self.each(|key| key.bytes())
    }

    /// The `[key, value]` pairs of a batch: an iterable of pairs (an Array, a Map...) or a
    /// plain object's own entries, as ioredis's `mset` takes them.
    pub fn pairs(&self) -> napi::Result<Vec<(Bytes, Bytes)>> {
        let source = if self.plain_object()? {
            let entries = call_global(self.env, c"Object", c"entries", self.value)?;
            Named {
                value: entries,
                name: self.name,
                env: self.env,
            }
        } else {
            Named {
                value: self.value,
                name: self.name,
                env: self.env,
            }
        };
        source.each(|pair| {
            let parts = match is_array(pair.env, pair.value)? {
                true => items(pair.env, pair.value)?,
                false => Vec::new(),
            };
            let [key, value] = parts[..] else {
                return Err(pair.wrong("a [key, value] pair"));
            };
            let part = |value, i| {
                Named {
                    env: pair.env,
                    value,
                    name: pair.name.item(i),
                }
                .bytes()
            };
            Ok((part(key, 0)?, part(value, 1)?))
        })
    }

    fn plain_object(&self) -> napi::Result<bool> {
        if type_of(self.env, self.value)? != ValueType::napi_object
            || is_array(self.env, self.value)?
        {
            return Ok(false);
        }
        let raw = self.env.raw();
        let (mut prototype, mut global) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: the environment of the call on this thread and one of its objects.
        check(unsafe { sys::napi_get_prototype(raw, self.value, &mut prototype) })?;
        if type_of(self.env, prototype)? == ValueType::napi_null {
            return Ok(true);
        }
        // SAFETY: as above; `global` is a local.
        check(unsafe { sys::napi_get_global(raw, &mut global) })?;
        let object = property(self.env, global, c"Object")?;
        let base = property(self.env, object, c"prototype")?;
        let mut same = false;
        // SAFETY: as above, two values of this environment.
        check(unsafe { sys::napi_strict_equals(raw, prototype, base, &mut same) })?;
        Ok(same)
    }
}

const MS: &str = "of type number (milliseconds)";
const VERSION: &str = "of type string (a version or fencing token)";

/// An options object: its fields by name, each read by a [`Named`] method.
pub struct Options<'e> {
    env: &'e Env,
    object: Option<sys::napi_value>,
    name: &'static str,
}

/// `value` as the options object `name` (undefined or null: no options), whose keys must be
/// among `allowed`, so that a misspelt option is an error instead of being ignored; with
/// `signal`, a Promise method's, it may hold `signal` too (a Promise method's `AbortSignal`, which the caller reads).
pub fn options<'e>(
    env: &'e Env,
    value: &Arg<'_>,
    name: &'static str,
    allowed: &[&str],
    signal: bool,
) -> napi::Result<Options<'e>> {
    let value = value.raw();
    let options = |object| Options { env, object, name };
    if is_nullish(env, value)? {
        return Ok(options(None));
    }
    if type_of(env, value)? != ValueType::napi_object || is_array(env, value)? {
        return Err(wrong_type(env, name, "of type object", value));
    }
    let mut keys = ptr::null_mut();
    // SAFETY: the environment of the call on this thread and one of its objects; `keys` is a
    // local.
    check(unsafe {
        sys::napi_get_all_property_names(
            env.raw(),
            value,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut keys,
        )
    })?;
    for key in items(env, keys)? {
        let key = text_of(env, key)?;
        if !(allowed.contains(&key.as_str()) || signal && key == "signal") {
            let message = format!(
                "Unknown option \"{key}\" in \"{name}\"; expected one of: {}",
                allowed.join(", ")
            );
            return Err(type_error(env, "ERR_INVALID_ARG_VALUE", &message));
        }
    }
    Ok(options(Some(value)))
}

impl<'e> Options<'e> {
    /// The option `key` (undefined when not given) converted by `convert`, a [`Named`]
    /// method, which names it `options.key` in errors.
    pub fn read<T>(
        &self,
        key: &'static str,
        convert: impl FnOnce(&Named<'e>) -> napi::Result<T>,
    ) -> napi::Result<T> {
        convert(&self.named(key)?)
    }

    /// The option `key` (undefined when not given), named `options.key` in errors.
    pub fn named(&self, key: &'static str) -> napi::Result<Named<'e>> {
        Ok(Named {
            env: self.env,
            value: self.field(key)?,
            name: Name {
                base: self.name,
                field: Some(key),
                items: [None; 2],
            },
        })
    }

    fn field(&self, key: &str) -> napi::Result<sys::napi_value> {
        let raw = self.env.raw();
        let mut value = ptr::null_mut();
        match self.object {
            Some(object) => {
                let key = string(self.env, key)?;
                // SAFETY: the environment of the call on this thread, one of its objects and
                // a string key made in it.
                check(unsafe { sys::napi_get_property(raw, object, key, &mut value) })?;
            }
            // SAFETY: the environment of the call on this thread; a local.
            None => check(unsafe { sys::napi_get_undefined(raw, &mut value) })?,
        }
        Ok(value)
    }
}
