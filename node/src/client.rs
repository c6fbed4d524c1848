//! `NativeClient`: every operation of core's client as a Promise method and a `…Sync` twin.

use std::sync::{Arc, Weak};

use napi::bindgen_prelude::Either;
use napi::Env;
use napi_derive::napi;
use statestore::bindings::{EventStream, OptionKind, OptionSpec, OptionValue, Pending};
use statestore::{Client, ConnectOptions, DeleteOptions, DeleteOutcome, SetOptions};

use crate::args::{self, Arg, Named, Options};
use crate::bridge::{self, nullable, version, Call, JsBuffer, Nullable, Out, Returned};
use crate::events::NativeEvents;
use crate::keys::NativeKeys;
use crate::registry;
use napi::bindgen_prelude::Unknown;

/// Core's connection options from `base` and the connection settings of the options object
/// `name` (camelCase names of core's table, [`statestore::bindings::OptionSpec`]), and how the
/// client hands bytes back: `returnStrings`, the one setting that is the package's rather than
/// core's.
fn connect_options(
    env: &Env,
    base: impl FnOnce(Option<&str>) -> statestore::Result<ConnectOptions>,
    given: &Arg,
    name: &'static str,
) -> napi::Result<(ConnectOptions, Out)> {
    let specs = statestore::bindings::CONNECT_OPTIONS;
    let mut allowed: Vec<&str> = specs.iter().map(|spec| spec.js_name).collect();
    allowed.push("returnStrings");
    let given = args::options(env, given, name, &allowed, false)?;
    let out = Out::strings(given.read("returnStrings", Named::boolean)? == Some(true));
    let mut values = Vec::new();
    for spec in specs {
        let value = given.read(spec.js_name, |value| {
            Ok(match spec.kind {
                OptionKind::Bool => value.boolean()?.map(OptionValue::Bool),
                OptionKind::Str | OptionKind::Path => value.string()?.map(OptionValue::Str),
                OptionKind::Duration => value.duration()?.map(OptionValue::Duration),
                // A port or count: a number, or a string core reads as one (as the
                // environment spells it).
                _ => match value.string_or_number()? {
                    Some(Either::A(text)) => Some(OptionValue::Str(text)),
                    Some(Either::B(number)) => Some(OptionValue::Int(whole(env, spec, number)?)),
                    None => None,
                },
            })
        })?;
        values.extend(value.map(|value| (spec, value)));
    }
    // A host among the settings need not be in the environment too (`fromEnv`).
    let host = values
        .iter()
        .find_map(|(spec, value)| match (spec.js_name, value) {
            ("host", OptionValue::Str(host)) => Some(host.as_str()),
            _ => None,
        });
    let mut options = bridge::sync(env, base(host))?;
    for (spec, value) in values {
        bridge::sync(env, options.set_option(spec.js_name, value))?;
    }
    Ok((options, out))
}

/// A whole number for the setting `spec`.
fn whole(env: &Env, spec: &OptionSpec, number: f64) -> napi::Result<i64> {
    if number.fract() != 0.0 || !number.is_finite() {
        let message = format!("{}: {number} is not a whole number", spec.js_name);
        return Err(bridge::throw(
            env,
            &statestore::Error::InvalidArgument(message),
        ));
    }
    Ok(number as i64)
}

const SET_OPTIONS: &[&str] = &["condition", "expiry", "fencingToken", "persist", "timeout"];
const DELETE_OPTIONS: &[&str] = &["fencingToken", "timeout"];
/// The options of a call whose only option is its timeout.
pub(crate) const TIMEOUT: &[&str] = &["timeout"];

fn set_options(options: &Options) -> napi::Result<SetOptions> {
    let mut set = SetOptions::default();
    if let Some(condition) = options.read("condition", Named::condition)? {
        set = set.condition(condition);
    }
    if let Some(expiry) = options.read("expiry", Named::duration)? {
        set = set.expiry(expiry);
    }
    if let Some(token) = options.read("fencingToken", Named::token)? {
        set = set.fencing_token(token);
    }
    if let Some(timeout) = options.read("timeout", Named::duration)? {
        set = set.timeout(timeout);
    }
    if let Some(persist) = options.read("persist", Named::boolean)? {
        set = set.persist(persist);
    }
    Ok(set)
}

fn delete_options(options: &Options) -> napi::Result<DeleteOptions> {
    let mut delete = DeleteOptions::default();
    if let Some(token) = options.read("fencingToken", Named::token)? {
        delete = delete.fencing_token(token);
    }
    if let Some(timeout) = options.read("timeout", Named::duration)? {
        delete = delete.timeout(timeout);
    }
    Ok(delete)
}

#[napi(object)]
pub struct JsSetResult {
    pub applied: bool,
    pub version: Nullable<String>,
}

#[napi(object, object_from_js = false)]
pub struct JsValueResult {
    pub value: JsBuffer,
    pub version: Nullable<String>,
}

#[napi(object)]
pub struct JsDeleteResult {
    /// `'deleted'`, `'notFound'` or `'valueMismatch'`.
    pub outcome: String,
    pub deleted: bool,
    pub version: Nullable<String>,
}

fn set_result(result: statestore::SetResult) -> JsSetResult {
    JsSetResult {
        applied: result.applied,
        version: nullable(version(result.version)),
    }
}

fn value_result(value: Option<statestore::Value>, out: Out) -> Option<JsValueResult> {
    value.map(|v| JsValueResult {
        value: out.bytes(&v.value),
        version: nullable(version(v.version)),
    })
}

fn delete_result(result: statestore::DeleteResult) -> JsDeleteResult {
    JsDeleteResult {
        outcome: result.outcome.names().1.to_string(),
        deleted: result.outcome == DeleteOutcome::Deleted,
        version: nullable(version(result.version)),
    }
}

/// A batch's results for JavaScript: each key's converted result, or its error as the same
/// `Error` object a single call rejects with.
type Batch<T> = Vec<Either<T, napi::Error>>;

fn batch<T, D>(
    env: &Env,
    results: Vec<statestore::Result<T>>,
    convert: impl Fn(T) -> D,
) -> Batch<D> {
    results
        .into_iter()
        .map(|result| match result {
            Ok(value) => Either::A(convert(value)),
            Err(error) => Either::B(bridge::js_error(env, &error)),
        })
        .collect()
}

/// The native client. Use `Client` from the package: it makes each operation a Promise method
/// and its `…Sync` twin, and adds the iterators and events.
#[napi]
pub struct NativeClient {
    // Shared with the environment's registry (weakly), which closes it at teardown.
    pub(crate) client: Arc<Client>,
    pub(crate) out: Out,
}

/// A client is closed (in the background) when its environment goes away.
impl registry::Opened for Weak<Client> {
    fn is_done(&self) -> bool {
        self.upgrade().is_none_or(|client| client.is_closed())
    }

    fn close(&self) -> Option<tokio::task::JoinHandle<()>> {
        let (client, handle) = (self.upgrade()?, statestore::runtime::handle().ok()?);
        let client = Client::clone(&client);
        Some(handle.spawn(async move {
            let _ = client.close().await;
        }))
    }
}

/// Every operation takes `call` first (see [`bridge::NativeCall`]): a Promise without it, the
/// result itself with the package's blocking instance. The arguments are JavaScript's as
/// given, checked here ([`args`]).
#[napi]
impl NativeClient {
    /// `connect(options)`, or `connect(url, options)`: a connection URL (core parses it) whose
    /// settings `options` then override.
    #[napi(ts_return_type = "NativeClient | Promise<NativeClient>", catch_unwind)]
    pub fn connect<'e>(
        env: &'e Env,
        call: Call,
        target: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        if target.get_type()? != napi::ValueType::String {
            if !args::arg(env, &options, "options").is_absent()? {
                let expected = "undefined after an options object (a URL comes first)";
                return Err(args::arg(env, &options, "options").wrong(expected));
            }
            let base = |_: Option<&str>| Ok(ConnectOptions::default());
            return Self::connect_with(env, call, base, &target, "options");
        }
        let url = args::arg(env, &target, "url").text()?;
        let base = |_: Option<&str>| ConnectOptions::from_url(&url);
        Self::connect_with(env, call, base, &options, "options")
    }

    /// Connects with the `AIO_*` environment of an Azure IoT Operations pod, then `overrides`.
    #[napi(ts_return_type = "NativeClient | Promise<NativeClient>", catch_unwind)]
    pub fn from_env<'e>(
        env: &'e Env,
        call: Call,
        overrides: Unknown,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        Self::connect_with(
            env,
            call,
            ConnectOptions::from_env_or_host,
            &overrides,
            "overrides",
        )
    }

    #[napi(getter, catch_unwind)]
    pub fn client_id(&self) -> String {
        self.client.client_id().to_string()
    }

    #[napi(getter, catch_unwind)]
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// `'connecting'`, `'connected'`, `'reconnecting'`, `'gave_up'` or `'closed'`.
    #[napi(getter, catch_unwind)]
    pub fn connection_state(&self) -> String {
        self.client.connection_state().name().to_string()
    }

    /// The connection's changes from now on, as `'connection'` events; the stream ends after
    /// `'closed'`.
    #[napi(catch_unwind)]
    pub fn connection_events(&self, env: &Env) -> NativeEvents {
        let stream = EventStream::from_connection(self.client.connection_events());
        NativeEvents::new(env, stream, self.out)
    }

    #[napi(ts_return_type = "JsSetResult | Promise<JsSetResult>", catch_unwind)]
    pub fn set<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, JsSetResult>> {
        let key = args::arg(env, &key, "key").bytes()?;
        let value = args::arg(env, &value, "value").bytes()?;
        let options = set_options(&args::call_options!(env, options, SET_OPTIONS, call))?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.set(key, value, options).await });
        bridge::run(env, call, pending, |_, r| Ok(set_result(r)))
    }

    #[napi(
        ts_return_type = "JsValueResult | null | Promise<JsValueResult | null>",
        catch_unwind
    )]
    pub fn get<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, Option<JsValueResult>>> {
        let key = args::arg(env, &key, "key").bytes()?;
        let timeout =
            args::call_options!(env, options, TIMEOUT, call).read("timeout", Named::duration)?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.get_with_timeout(key, timeout).await });
        let out = self.out;
        bridge::run(env, call, pending, move |_, v| Ok(value_result(v, out)))
    }

    #[napi(
        ts_return_type = "JsDeleteResult | Promise<JsDeleteResult>",
        catch_unwind
    )]
    pub fn delete<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, JsDeleteResult>> {
        let key = args::arg(env, &key, "key").bytes()?;
        let options = delete_options(&args::call_options!(env, options, DELETE_OPTIONS, call))?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.delete(key, options).await });
        bridge::run(env, call, pending, |_, r| Ok(delete_result(r)))
    }

    /// Deletes `key` only if it holds `value`.
    #[napi(
        ts_return_type = "JsDeleteResult | Promise<JsDeleteResult>",
        catch_unwind
    )]
    pub fn vdel<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, JsDeleteResult>> {
        let key = args::arg(env, &key, "key").bytes()?;
        let value = args::arg(env, &value, "value").bytes()?;
        let options = delete_options(&args::call_options!(env, options, DELETE_OPTIONS, call))?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.vdel(key, value, options).await });
        bridge::run(env, call, pending, |_, r| Ok(delete_result(r)))
    }

    /// GET of each of `keys`: one item per key, its value (or null) or its error.
    #[napi(
        ts_return_type = "Array<JsValueResult | null | Error> | Promise<Array<JsValueResult | null | Error>>",
        catch_unwind
    )]
    pub fn get_many<'e>(
        &self,
        env: &'e Env,
        call: Call,
        keys: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, Batch<Option<JsValueResult>>>> {
        let keys = args::arg(env, &keys, "keys").keys()?;
        let timeout =
            args::call_options!(env, options, TIMEOUT, call).read("timeout", Named::duration)?;
        let client = self.client();
        let pending =
            Pending::spawn(async move { client.get_many_with_timeout(keys, timeout).await });
        let out = self.out;
        bridge::run(env, call, pending, move |env, results| {
            Ok(batch(env, results, |v| value_result(v, out)))
        })
    }

    /// SET of each `[key, value]` of `items` with the same options: one item per pair.
    #[napi(
        ts_return_type = "Array<JsSetResult | Error> | Promise<Array<JsSetResult | Error>>",
        catch_unwind
    )]
    pub fn set_many<'e>(
        &self,
        env: &'e Env,
        call: Call,
        items: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, Batch<JsSetResult>>> {
        let items = args::arg(env, &items, "items").pairs()?;
        let options = set_options(&args::call_options!(env, options, SET_OPTIONS, call))?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.set_many(items, options).await });
        bridge::run(env, call, pending, |env, results| {
            Ok(batch(env, results, set_result))
        })
    }

    /// DEL of each of `keys` with the same options: one item per key.
    #[napi(
        ts_return_type = "Array<JsDeleteResult | Error> | Promise<Array<JsDeleteResult | Error>>",
        catch_unwind
    )]
    pub fn delete_many<'e>(
        &self,
        env: &'e Env,
        call: Call,
        keys: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, Batch<JsDeleteResult>>> {
        let keys = args::arg(env, &keys, "keys").keys()?;
        let options = delete_options(&args::call_options!(env, options, DELETE_OPTIONS, call))?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.delete_many(keys, options).await });
        bridge::run(env, call, pending, |env, results| {
            Ok(batch(env, results, delete_result))
        })
    }

    #[napi(ts_return_type = "NativeEvents | Promise<NativeEvents>", catch_unwind)]
    pub fn observe<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
    ) -> napi::Result<Returned<'e, NativeEvents>> {
        let key = args::arg(env, &key, "key").bytes()?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.observe(key).await });
        let out = self.out;
        bridge::run(env, call, pending, move |env, o| {
            Ok(NativeEvents::from_observation(env, o, out))
        })
    }

    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn unobserve<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
    ) -> napi::Result<Returned<'e, ()>> {
        let key = args::arg(env, &key, "key").bytes()?;
        let client = self.client();
        let pending = Pending::spawn(async move { client.unobserve(key).await });
        bridge::run(env, call, pending, |_, ()| Ok(()))
    }

    /// A lazy pager over the keys matching `pattern`.
    #[napi(catch_unwind)]
    pub fn keys(&self, env: &Env, pattern: Unknown) -> napi::Result<NativeKeys> {
        let pattern = args::arg(env, &pattern, "pattern").bytes()?;
        let keys = bridge::sync(env, self.client.keys(pattern))?;
        Ok(NativeKeys::new(keys, self.out))
    }

    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn close<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        let client = self.client();
        let pending = Pending::spawn(async move { client.close().await });
        bridge::run(env, call, pending, |_, ()| Ok(()))
    }
}

impl NativeClient {
    pub(crate) fn client(&self) -> Client {
        Client::clone(&self.client)
    }

    fn connect_with<'e>(
        env: &'e Env,
        call: Call,
        base: impl FnOnce(Option<&str>) -> statestore::Result<ConnectOptions>,
        settings: &Arg,
        name: &'static str,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        let (options, out) = connect_options(env, base, settings, name)?;
        let pending = Pending::spawn(Client::connect(options));
        bridge::run(env, call, pending, move |env, client| {
            let client = Arc::new(client);
            registry::add(env, Box::new(Arc::downgrade(&client)));
            Ok(NativeClient { client, out })
        })
    }
}
