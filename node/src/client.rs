//! `NativeClient`: every operation of core's client as a Promise method and a `…Sync` twin.

use std::sync::Arc;

use napi::bindgen_prelude::{Either, Null};
use napi::Env;
use napi_derive::napi;
use statestore::{Client, ConnectOptions, DeleteOptions, DeleteOutcome, Hlc, SetOptions};

use crate::bindings::{OptionValue, Pending};
use crate::bridge::{self, buffer, bytes, millis, millis_opt, Call, JsBuffer, JsBytes, Returned};
use crate::events::NativeEvents;
use crate::keys::NativeKeys;
use crate::registry;

/// One connection setting as the JS wrapper passes it: `[camelCaseName, value]`.
#[napi(object)]
pub struct ConnectSetting {
    pub name: String,
    pub value: napi::bindgen_prelude::Either3<String, f64, bool>,
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

/// A field that is `null` in JavaScript when absent (an `Option` field would be left out).
pub type Nullable<T> = Either<T, Null>;

fn nullable<T>(value: Option<T>) -> Nullable<T> {
    match value {
        Some(value) => Either::A(value),
        None => Either::B(Null),
    }
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

fn connect_options(
    base: ConnectOptions,
    settings: Vec<ConnectSetting>,
) -> statestore::Result<ConnectOptions> {
    let mut options = base;
    for setting in settings {
        let value = match setting.value {
            napi::bindgen_prelude::Either3::A(text) => OptionValue::Str(text),
            napi::bindgen_prelude::Either3::B(number)
                if statestore::bindings::OptionSpec::find(&setting.name).is_some_and(|spec| {
                    spec.kind == statestore::bindings::OptionKind::Duration
                }) =>
            {
                OptionValue::Duration(crate::bridge::millis(&setting.name, number)?)
            }
            napi::bindgen_prelude::Either3::B(number) => {
                if number.fract() != 0.0 || !number.is_finite() {
                    return Err(statestore::Error::InvalidArgument(format!(
                        "{}: {number} is not a whole number",
                        setting.name
                    )));
                }
                OptionValue::Int(number as i64)
            }
            napi::bindgen_prelude::Either3::C(flag) => OptionValue::Bool(flag),
        };
        options.set_option(&setting.name, value)?;
    }
    Ok(options)
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
            "condition",
        )?);
    }
    if let Some(expiry) = options.expiry {
        set = set.expiry(millis("expiry", expiry)?);
    }
    if let Some(token) = token("fencingToken", options.fencing_token)? {
        set = set.fencing_token(token);
    }
    if let Some(timeout) = options.timeout {
        set = set.timeout(millis("timeout", timeout)?);
    }
    if let Some(persist) = options.persist {
        set = set.persist(persist);
    }
    Ok(set)
}

fn delete_options(options: Option<NativeDeleteOptions>) -> statestore::Result<DeleteOptions> {
    let options = options.unwrap_or_default();
    let mut delete = DeleteOptions::default();
    if let Some(token) = token("fencingToken", options.fencing_token)? {
        delete = delete.fencing_token(token);
    }
    if let Some(timeout) = options.timeout {
        delete = delete.timeout(millis("timeout", timeout)?);
    }
    Ok(delete)
}

pub(crate) fn version(hlc: Option<Hlc>) -> Option<String> {
    hlc.map(|v| v.to_string())
}

fn set_result(result: statestore::SetResult) -> JsSetResult {
    JsSetResult {
        applied: result.applied,
        version: nullable(version(result.version)),
    }
}

fn value_result(value: Option<statestore::Value>) -> Option<JsValueResult> {
    value.map(|v| JsValueResult {
        value: buffer(&v.value),
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

/// The native client. Use `Client` from the package: it validates arguments and adds the
/// iterators and events.
#[napi]
pub struct NativeClient {
    // Shared with the environment's registry (weakly), which closes it at teardown.
    pub(crate) client: Arc<Client>,
}

fn connect_pending(env_options: bool, settings: Vec<ConnectSetting>) -> Pending<Client> {
    let options = if env_options {
        ConnectOptions::from_env().and_then(|base| connect_options(base, settings))
    } else {
        connect_options(ConnectOptions::default(), settings)
    };
    match options {
        Ok(options) => Pending::spawn(Client::connect(options)),
        Err(error) => Pending::ready(Err(error)),
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
    /// Connects with the given settings (over `localhost:1883`, or over the `AIO_*`
    /// environment when `fromEnv`).
    #[napi(ts_return_type = "NativeClient | Promise<NativeClient>", catch_unwind)]
    pub fn connect<'e>(
        env: &'e Env,
        settings: Vec<ConnectSetting>,
        from_env: bool,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeClient>> {
        bridge::run(
            env,
            call,
            connect_pending(from_env, settings),
            |env, client| {
                let client = Arc::new(client);
                registry::add_client(env, &client);
                Ok(NativeClient { client })
            },
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
        let pending = spawn(millis_opt("timeout", timeout), |timeout| {
            Pending::spawn(async move { client.get_with_timeout(key, timeout).await })
        });
        bridge::run(env, call, pending, |_, v| Ok(value_result(v)))
    }

    /// DEL, or VDEL when `value` is given.
    #[napi(
        ts_return_type = "JsDeleteResult | Promise<JsDeleteResult>",
        catch_unwind
    )]
    pub fn delete<'e>(
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

    #[napi(ts_return_type = "NativeEvents | Promise<NativeEvents>", catch_unwind)]
    pub fn observe<'e>(
        &self,
        env: &'e Env,
        key: JsBytes,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeEvents>> {
        let client = self.client();
        let key = bytes(key);
        let pending = Pending::spawn(async move { client.observe(key).await });
        bridge::run(env, call, pending, |env, o| {
            Ok(NativeEvents::from_observation(env, o))
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
        Ok(NativeKeys::new(keys))
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
}
