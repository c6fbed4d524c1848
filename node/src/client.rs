//! `NativeClient`: every operation of core's client as a Promise method and a `…Sync` twin.

use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, Either, Null, Object};
use napi::Env;
use napi_derive::napi;
use statestore::{
    Client, ConnectOptions, DeleteOptions, DeleteOutcome, Hlc, SetCondition, SetOptions,
};

use crate::bindings::{OptionValue, Pending};
use crate::bridge::{self, buffer, bytes, millis, millis_opt, JsBytes};
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

#[napi(object)]
pub struct JsValueResult {
    pub value: Buffer,
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
    text.map(|text| {
        text.parse::<Hlc>()
            .map_err(|e| statestore::Error::InvalidArgument(format!("{name}: {e}")))
    })
    .transpose()
}

fn set_options(options: Option<NativeSetOptions>) -> statestore::Result<SetOptions> {
    let options = options.unwrap_or_default();
    let mut set = SetOptions::default();
    if let Some(condition) = options.condition {
        set = set.condition(match condition.as_str() {
            "always" => SetCondition::Always,
            "nx" => SetCondition::OnlyIfAbsent,
            "nex" => SetCondition::OnlyIfAbsentOrEqual,
            other => {
                return Err(statestore::Error::InvalidArgument(format!(
                    "condition: `{other}` is not one of 'always', 'nx', 'nex'"
                )))
            }
        });
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
        outcome: match result.outcome {
            DeleteOutcome::Deleted => "deleted",
            DeleteOutcome::NotFound => "notFound",
            DeleteOutcome::ValueMismatch => "valueMismatch",
        }
        .to_string(),
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

fn wrap(env: &Env, client: Client) -> NativeClient {
    let client = Arc::new(client);
    registry::add_client(env, &client);
    NativeClient { client }
}

#[napi]
impl NativeClient {
    /// Connects with the given settings (over `localhost:1883`, or over the `AIO_*`
    /// environment when `fromEnv`).
    #[napi]
    pub fn connect<'env>(
        env: &'env Env,
        settings: Vec<ConnectSetting>,
        from_env: bool,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, connect_pending(from_env, settings), |env, client| {
            Ok(wrap(env, client))
        })
    }

    #[napi]
    pub fn connect_sync(
        env: &Env,
        settings: Vec<ConnectSetting>,
        from_env: bool,
    ) -> napi::Result<NativeClient> {
        let client = bridge::wait(env, connect_pending(from_env, settings))?;
        Ok(wrap(env, client))
    }

    #[napi(getter)]
    pub fn client_id(&self) -> String {
        self.client.client_id().to_string()
    }

    #[napi(getter)]
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    fn set_pending(
        &self,
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeSetOptions>,
    ) -> Pending<statestore::SetResult> {
        match set_options(options) {
            Ok(options) => {
                let client = Client::clone(&self.client);
                let (key, value) = (bytes(key), bytes(value));
                Pending::spawn(async move { client.set(key, value, options).await })
            }
            Err(error) => Pending::ready(Err(error)),
        }
    }

    #[napi]
    pub fn set<'env>(
        &self,
        env: &'env Env,
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeSetOptions>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.set_pending(key, value, options), |_, r| {
            Ok(set_result(r))
        })
    }

    #[napi]
    pub fn set_sync(
        &self,
        env: &Env,
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeSetOptions>,
    ) -> napi::Result<JsSetResult> {
        bridge::wait(env, self.set_pending(key, value, options)).map(set_result)
    }

    fn get_pending(
        &self,
        key: JsBytes,
        timeout: Option<f64>,
    ) -> Pending<Option<statestore::Value>> {
        let timeout = match millis_opt("timeout", timeout) {
            Ok(timeout) => timeout,
            Err(error) => return Pending::ready(Err(error)),
        };
        let client = Client::clone(&self.client);
        let key = bytes(key);
        Pending::spawn(async move { client.get_with_timeout(key, timeout).await })
    }

    #[napi]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        key: JsBytes,
        timeout: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.get_pending(key, timeout), |_, v| {
            Ok(value_result(v))
        })
    }

    #[napi]
    pub fn get_sync(
        &self,
        env: &Env,
        key: JsBytes,
        timeout: Option<f64>,
    ) -> napi::Result<Option<JsValueResult>> {
        bridge::wait(env, self.get_pending(key, timeout)).map(value_result)
    }

    fn delete_pending(
        &self,
        key: JsBytes,
        value: Option<JsBytes>,
        options: Option<NativeDeleteOptions>,
    ) -> Pending<statestore::DeleteResult> {
        match delete_options(options) {
            Ok(options) => {
                let client = Client::clone(&self.client);
                let key = bytes(key);
                match value.map(bytes) {
                    None => Pending::spawn(async move { client.delete(key, options).await }),
                    Some(value) => {
                        Pending::spawn(async move { client.vdel(key, value, options).await })
                    }
                }
            }
            Err(error) => Pending::ready(Err(error)),
        }
    }

    #[napi]
    pub fn delete<'env>(
        &self,
        env: &'env Env,
        key: JsBytes,
        options: Option<NativeDeleteOptions>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.delete_pending(key, None, options), |_, r| {
            Ok(delete_result(r))
        })
    }

    #[napi]
    pub fn delete_sync(
        &self,
        env: &Env,
        key: JsBytes,
        options: Option<NativeDeleteOptions>,
    ) -> napi::Result<JsDeleteResult> {
        bridge::wait(env, self.delete_pending(key, None, options)).map(delete_result)
    }

    #[napi]
    pub fn vdel<'env>(
        &self,
        env: &'env Env,
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeDeleteOptions>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(
            env,
            self.delete_pending(key, Some(value), options),
            |_, r| Ok(delete_result(r)),
        )
    }

    #[napi]
    pub fn vdel_sync(
        &self,
        env: &Env,
        key: JsBytes,
        value: JsBytes,
        options: Option<NativeDeleteOptions>,
    ) -> napi::Result<JsDeleteResult> {
        bridge::wait(env, self.delete_pending(key, Some(value), options)).map(delete_result)
    }

    fn observe_pending(&self, key: JsBytes) -> Pending<statestore::Observation> {
        let client = Client::clone(&self.client);
        let key = bytes(key);
        Pending::spawn(async move { client.observe(key).await })
    }

    #[napi]
    pub fn observe<'env>(&self, env: &'env Env, key: JsBytes) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.observe_pending(key), |env, o| {
            Ok(NativeEvents::from_observation(env, o))
        })
    }

    #[napi]
    pub fn observe_sync(&self, env: &Env, key: JsBytes) -> napi::Result<NativeEvents> {
        let observation = bridge::wait(env, self.observe_pending(key))?;
        Ok(NativeEvents::from_observation(env, observation))
    }

    fn unobserve_pending(&self, key: JsBytes) -> Pending<()> {
        let client = Client::clone(&self.client);
        let key = bytes(key);
        Pending::spawn(async move { client.unobserve(key).await })
    }

    #[napi]
    pub fn unobserve<'env>(&self, env: &'env Env, key: JsBytes) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.unobserve_pending(key), |_, ()| Ok(()))
    }

    #[napi]
    pub fn unobserve_sync(&self, env: &Env, key: JsBytes) -> napi::Result<()> {
        bridge::wait(env, self.unobserve_pending(key))
    }

    /// A lazy pager over the keys matching `pattern`.
    #[napi]
    pub fn keys(&self, env: &Env, pattern: JsBytes) -> napi::Result<NativeKeys> {
        let keys = bridge::sync(env, self.client.keys(bytes(pattern)))?;
        Ok(NativeKeys::new(keys))
    }

    fn close_pending(&self) -> Pending<()> {
        let client = Client::clone(&self.client);
        Pending::spawn(async move { client.close().await })
    }

    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.close_pending(), |_, ()| Ok(()))
    }

    #[napi]
    pub fn close_sync(&self, env: &Env) -> napi::Result<()> {
        bridge::wait(env, self.close_pending())
    }
}
