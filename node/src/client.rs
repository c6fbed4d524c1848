//! `NativeClient`: every operation of core's client as a Promise method and a `…Sync` twin.

use std::sync::{Arc, Weak};

use napi::bindgen_prelude::{Either, Either3};
use napi::Env;
use napi_derive::napi;
use statestore::{Client, ConnectOptions, DeleteOptions, DeleteOutcome, Hlc, SetOptions};

use statestore::bindings::{EventStream, OptionValue, Pending};

use crate::bridge::{
    self, bytes, millis, millis_opt, nullable, version, Call, JsBuffer, JsBytes, Nullable, Out,
    Returned,
};
use crate::events::NativeEvents;
use crate::keys::NativeKeys;
use crate::registry;

/// One connection setting as the JS wrapper passes it: `[camelCaseName, value]`.
#[napi(object)]
pub struct ConnectSetting {
    pub name: String,
    pub value: Either3<String, f64, bool>,
}

/// SET options (durations in milliseconds).
#[napi(object)]
#[derive(Default)]
pub struct NativeSetOptions {
    /// `'always'` (default), `'nx'` or `'nex'`.
    pub condition: Option<String>,
    pub expiry: Option<f64>,
    pub fencing_token: Option<String>,
    pub persist: Option<bool>,
    pub timeout: Option<f64>,
}

/// DEL/VDEL options (durations in milliseconds).
#[napi(object)]
#[derive(Default)]
pub struct NativeDeleteOptions {
    pub fencing_token: Option<String>,
    pub timeout: Option<f64>,
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

/// Core's connection options from `base` and the settings JavaScript gave, and how the client
/// hands bytes back: `returnStrings`, the one setting that is the package's rather than core's.
fn connect_options(
    base: ConnectOptions,
    settings: Vec<ConnectSetting>,
) -> statestore::Result<(ConnectOptions, Out)> {
    let (mut options, mut out) = (base, Out::BUFFERS);
    for setting in settings {
        if setting.name == "returnStrings" {
            out = Out::strings(matches!(setting.value, Either3::C(true)));
            continue;
        }
        let value = match setting.value {
            Either3::A(text) => OptionValue::Str(text),
            Either3::B(number)
                if statestore::bindings::OptionSpec::find(&setting.name).is_some_and(|spec| {
                    spec.kind == statestore::bindings::OptionKind::Duration
                }) =>
            {
                OptionValue::Duration(crate::bridge::millis(&setting.name, number)?)
            }
            Either3::B(number) => {
                if number.fract() != 0.0 || !number.is_finite() {
                    return Err(statestore::Error::InvalidArgument(format!(
                        "{}: {number} is not a whole number",
                        setting.name
                    )));
                }
                OptionValue::Int(number as i64)
            }
            Either3::C(flag) => OptionValue::Bool(flag),
        };
        options.set_option(&setting.name, value)?;
    }
    Ok((options, out))
}

fn token(name: &str, text: Option<String>) -> statestore::Result<Option<Hlc>> {
    text.map(|text| statestore::bindings::version(&text, name))
        .transpose()
}

fn set_options(options: Option<NativeSetOptions>) -> statestore::Result<SetOptions> {
    let options = options.unwrap_or_default();
    let mut set = SetOptions::default();
    if let Some(condition) = options.condition {
        set = set.condition(statestore::bindings::set_condition(
            &condition,
            "options.condition",
        )?);
    }
    if let Some(expiry) = options.expiry {
        set = set.expiry(millis("options.expiry", expiry)?);
    }
    if let Some(token) = token("options.fencingToken", options.fencing_token)? {
        set = set.fencing_token(token);
    }
    if let Some(timeout) = options.timeout {
        set = set.timeout(millis("options.timeout", timeout)?);
    }
    if let Some(persist) = options.persist {
        set = set.persist(persist);
    }
    Ok(set)
}

fn delete_options(options: Option<NativeDeleteOptions>) -> statestore::Result<DeleteOptions> {
    let options = options.unwrap_or_default();
    let mut delete = DeleteOptions::default();
    if let Some(token) = token("options.fencingToken", options.fencing_token)? {
        delete = delete.fencing_token(token);
    }
    if let Some(timeout) = options.timeout {
        delete = delete.timeout(millis("options.timeout", timeout)?);
    }
    Ok(delete)
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

/// The native client. Use `Client` from the package: it checks JavaScript types and adds the
/// iterators and events.
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

/// A core call whose arguments failed to convert, or the call started with them.
fn spawn<T, F>(arguments: statestore::Result<F>, start: impl FnOnce(F) -> Pending<T>) -> Pending<T>
where
    T: Send + 'static,
{
    match arguments {
        Ok(arguments) => start(arguments),
        Err(error) => Pending::ready(Err(error)),
    }
}

/// Every operation takes `call` last (see [`bridge::NativeCall`]): a Promise without it, the result
/// itself with the package's blocking instance.
#[napi]
impl NativeClient {
    /// Connects with the given settings (over `localhost:1883` unless they say otherwise).
    #[napi(ts_return_type = "NativeClient | Promise<NativeClient>", catch_unwind)]
    pub fn connect<'e>(
        env: &'e Env,
        settings: Vec<ConnectSetting>,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        Self::connect_with(env, Ok(ConnectOptions::default()), settings, call)
    }

    /// Connects with the `AIO_*` environment of an Azure IoT Operations pod, then `settings`.
    #[napi(ts_return_type = "NativeClient | Promise<NativeClient>", catch_unwind)]
    pub fn from_env<'e>(
        env: &'e Env,
        settings: Vec<ConnectSetting>,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        // A host among the settings need not be in the environment too.
        let host = settings.iter().find_map(|s| match (&*s.name, &s.value) {
            ("host", Either3::A(host)) => Some(host.clone()),
            _ => None,
        });
        let base = ConnectOptions::from_env_or_host(host.as_deref());
        Self::connect_with(env, base, settings, call)
    }

    /// Connects with the settings of a connection URL (`ConnectOptions::from_url`), then
    /// `settings`.
    #[napi(ts_return_type = "NativeClient | Promise<NativeClient>", catch_unwind)]
    pub fn from_url<'e>(
        env: &'e Env,
        url: String,
        settings: Vec<ConnectSetting>,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        Self::connect_with(env, ConnectOptions::from_url(&url), settings, call)
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
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeSetOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, JsSetResult>> {
        let client = self.client();
        let (key, value) = (bytes(key), bytes(value));
        let pending = spawn(set_options(options), |options| {
            Pending::spawn(async move { client.set(key, value, options).await })
        });
        bridge::run(env, call, pending, |_, r| Ok(set_result(r)))
    }

    #[napi(
        ts_return_type = "JsValueResult | null | Promise<JsValueResult | null>",
        catch_unwind
    )]
    pub fn get<'e>(
        &self,
        env: &'e Env,
        key: JsBytes,
        timeout: Option<f64>,
        call: Call,
    ) -> napi::Result<Returned<'e, Option<JsValueResult>>> {
        let client = self.client();
        let key = bytes(key);
        let pending = spawn(millis_opt("options.timeout", timeout), |timeout| {
            Pending::spawn(async move { client.get_with_timeout(key, timeout).await })
        });
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
        key: JsBytes,
        options: Option<NativeDeleteOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, JsDeleteResult>> {
        self.delete_if(env, key, None, options, call)
    }

    /// Deletes `key` only if it holds `value`.
    #[napi(
        ts_return_type = "JsDeleteResult | Promise<JsDeleteResult>",
        catch_unwind
    )]
    pub fn vdel<'e>(
        &self,
        env: &'e Env,
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeDeleteOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, JsDeleteResult>> {
        self.delete_if(env, key, Some(value), options, call)
    }

    /// GET of each of `keys`: one item per key, its value (or null) or its error.
    #[napi(
        ts_return_type = "Array<JsValueResult | null | Error> | Promise<Array<JsValueResult | null | Error>>",
        catch_unwind
    )]
    pub fn get_many<'e>(
        &self,
        env: &'e Env,
        keys: Vec<JsBytes>,
        timeout: Option<f64>,
        call: Call,
    ) -> napi::Result<Returned<'e, Batch<Option<JsValueResult>>>> {
        let client = self.client();
        let keys: Vec<_> = keys.into_iter().map(bytes).collect();
        let pending = spawn(millis_opt("options.timeout", timeout), |timeout| {
            Pending::spawn(async move { client.get_many_with_timeout(keys, timeout).await })
        });
        let out = self.out;
        bridge::run(env, call, pending, move |env, results| {
            Ok(batch(env, results, |v| value_result(v, out)))
        })
    }

    /// SET of each `keys[i]` to `values[i]` with the same options: one item per pair.
    #[napi(
        ts_return_type = "Array<JsSetResult | Error> | Promise<Array<JsSetResult | Error>>",
        catch_unwind
    )]
    pub fn set_many<'e>(
        &self,
        env: &'e Env,
        keys: Vec<JsBytes>,
        values: Vec<JsBytes>,
        options: Option<NativeSetOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, Batch<JsSetResult>>> {
        let client = self.client();
        let items: Vec<_> = keys
            .into_iter()
            .map(bytes)
            .zip(values.into_iter().map(bytes))
            .collect();
        let pending = spawn(set_options(options), |options| {
            Pending::spawn(async move { client.set_many(items, options).await })
        });
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
        keys: Vec<JsBytes>,
        options: Option<NativeDeleteOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, Batch<JsDeleteResult>>> {
        let client = self.client();
        let keys: Vec<_> = keys.into_iter().map(bytes).collect();
        let pending = spawn(delete_options(options), |options| {
            Pending::spawn(async move { client.delete_many(keys, options).await })
        });
        bridge::run(env, call, pending, |env, results| {
            Ok(batch(env, results, delete_result))
        })
    }

    #[napi(ts_return_type = "NativeEvents | Promise<NativeEvents>", catch_unwind)]
    pub fn observe<'e>(
        &self,
        env: &'e Env,
        key: JsBytes,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeEvents>> {
        let client = self.client();
        let key = bytes(key);
        let (pending, out) = (
            Pending::spawn(async move { client.observe(key).await }),
            self.out,
        );
        bridge::run(env, call, pending, move |env, o| {
            Ok(NativeEvents::from_observation(env, o, out))
        })
    }

    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn unobserve<'e>(
        &self,
        env: &'e Env,
        key: JsBytes,
        call: Call,
    ) -> napi::Result<Returned<'e, ()>> {
        let client = self.client();
        let key = bytes(key);
        let pending = Pending::spawn(async move { client.unobserve(key).await });
        bridge::run(env, call, pending, |_, ()| Ok(()))
    }

    /// A lazy pager over the keys matching `pattern`.
    #[napi(catch_unwind)]
    pub fn keys(&self, env: &Env, pattern: JsBytes) -> napi::Result<NativeKeys> {
        let keys = bridge::sync(env, self.client.keys(bytes(pattern)))?;
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
        base: statestore::Result<ConnectOptions>,
        settings: Vec<ConnectSetting>,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        let (options, out) = match base.and_then(|base| connect_options(base, settings)) {
            Ok((options, out)) => (Ok(options), out),
            Err(error) => (Err(error), Out::BUFFERS),
        };
        let pending = spawn(options, |options| Pending::spawn(Client::connect(options)));
        bridge::run(env, call, pending, move |env, client| {
            let client = Arc::new(client);
            registry::add(env, Box::new(Arc::downgrade(&client)));
            Ok(NativeClient { client, out })
        })
    }

    /// DEL, or VDEL when `value` is given.
    fn delete_if<'e>(
        &self,
        env: &'e Env,
        key: JsBytes,
        value: Option<JsBytes>,
        options: Option<NativeDeleteOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, JsDeleteResult>> {
        let client = self.client();
        let (key, value) = (bytes(key), value.map(bytes));
        let pending = spawn(delete_options(options), |options| {
            Pending::spawn(async move {
                match value {
                    None => client.delete(key, options).await,
                    Some(value) => client.vdel(key, value, options).await,
                }
            })
        });
        bridge::run(env, call, pending, |_, r| Ok(delete_result(r)))
    }
}
