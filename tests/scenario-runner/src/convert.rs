//! Translation between the scenario format and the Rust API, shared by both flavours:
//! arguments to options, results and events to [`Fields`], errors to code names.

use bytes::Bytes;
use serde_json::Value;
use statestore::bindings::OptionValue;
use statestore::lease::{AcquireOutcome, LeaderEvent, LeaseState, LossReason};
use statestore::{
    ConnectOptions, DeleteOptions, DeleteOutcome, DeleteResult, Error, KeyEvent, SetCondition,
    SetOptions, SetResult,
};

use crate::data::{fields, Args, Ctx, Fields, Val};

/// The name of an error's code, as in `ErrorCode::name()` (`"INVALID_ARGUMENT"`, ...).
pub fn code_name(error: &Error) -> &'static str {
    error.code().name()
}

/// The options of a `connect` step: the runner's server unless `host`/`port` are given.
/// Each option goes through `ConnectOptions::set_option`, as in the C, Python and Node
/// bindings; `NAME_ms` is the duration setting `NAME` in milliseconds. `Err` is a mistake in
/// the scenario; `Ok(Err)` an option the library refuses.
pub fn connect_options(
    options: Option<&Value>,
    host: &str,
    port: u16,
) -> Result<Result<ConnectOptions, Error>, String> {
    apply_options(ConnectOptions::new(host, port), options)
}

/// The options of a `connect_url` step: its URL, where `{server}` stands for the runner's
/// server (`host:port`), then its `options` on top, as every binding's URL connect takes them.
pub fn url_options(
    url: &str,
    options: Option<&Value>,
    server: std::net::SocketAddr,
) -> Result<Result<ConnectOptions, Error>, String> {
    match ConnectOptions::from_url(&url.replace("{server}", &server.to_string())) {
        Ok(connect) => apply_options(connect, options),
        Err(error) => Ok(Err(error)),
    }
}

/// Checks an error's message against a `connect_url` step's `message_has` (texts it must
/// contain) and `message_lacks` (texts it must not contain, such as a password).
pub fn check_message(
    message: &str,
    has: Option<&Value>,
    lacks: Option<&Value>,
) -> Result<(), String> {
    let texts = |list: Option<&Value>| -> Result<Vec<String>, String> {
        let Some(list) = list else {
            return Ok(Vec::new());
        };
        list.as_array()
            .and_then(|items| items.iter().map(|t| t.as_str().map(String::from)).collect())
            .ok_or_else(|| format!("{list} is not a list of strings"))
    };
    for text in texts(has)? {
        if !message.contains(&text) {
            return Err(format!("the error message lacks {text:?}: {message}"));
        }
    }
    for text in texts(lacks)? {
        if message.contains(&text) {
            return Err(format!("the error message shows {text:?}: {message}"));
        }
    }
    Ok(())
}

/// `options` of a `connect` or `connect_url` step set on `connect`.
fn apply_options(
    mut connect: ConnectOptions,
    options: Option<&Value>,
) -> Result<Result<ConnectOptions, Error>, String> {
    let Some(options) = options else {
        return Ok(Ok(connect));
    };
    let options = options.as_object().ok_or("\"options\" must be an object")?;
    for (name, value) in options {
        let (name, value) = match (name.strip_suffix("_ms"), value) {
            (Some(setting), Value::Number(ms)) => (
                setting,
                OptionValue::Int(ms.as_i64().ok_or("a duration is whole milliseconds")?),
            ),
            (None, Value::String(text)) => (name.as_str(), OptionValue::Str(text.clone())),
            (None, Value::Bool(flag)) => (name.as_str(), OptionValue::Bool(*flag)),
            (None, Value::Number(n)) => (
                name.as_str(),
                OptionValue::Int(n.as_i64().ok_or("a number option is a whole number")?),
            ),
            _ => return Err(format!("option {name:?}: unusable value {value}")),
        };
        if let Err(error) = connect.set_option(name, value) {
            return Ok(Err(error));
        }
    }
    Ok(Ok(connect))
}

/// The options of a `set` step.
pub fn set_options(args: &Args) -> Result<SetOptions, String> {
    let mut options = SetOptions::default();
    if let Some(condition) = args.opt_text("condition")? {
        options = options.condition(
            SetCondition::from_name(&condition)
                .ok_or_else(|| format!("unknown condition {condition:?}"))?,
        );
    }
    if let Some(expiry) = args.opt_ms("expiry_ms")? {
        options = options.expiry(expiry);
    }
    if let Some(token) = args.opt_hlc("fencing_token")? {
        options = options.fencing_token(token);
    }
    if let Some(persist) = args.opt_bool("persist")? {
        options = options.persist(persist);
    }
    if let Some(timeout) = args.opt_ms("timeout_ms")? {
        options = options.timeout(timeout);
    }
    Ok(options)
}

/// The options of a `delete` or `vdel` step.
pub fn delete_options(args: &Args) -> Result<DeleteOptions, String> {
    let mut options = DeleteOptions::default();
    if let Some(token) = args.opt_hlc("fencing_token")? {
        options = options.fencing_token(token);
    }
    if let Some(timeout) = args.opt_ms("timeout_ms")? {
        options = options.timeout(timeout);
    }
    Ok(options)
}

/// The result of `set`.
pub fn set_fields(result: &SetResult) -> Fields {
    fields([
        ("applied", Val::Bool(result.applied)),
        ("version", Val::hlc(result.version.as_ref())),
    ])
}

/// The result of `get`.
pub fn get_fields(value: Option<statestore::Value>) -> Fields {
    match value {
        Some(value) => fields([
            ("value", Val::Bytes(value.value)),
            ("version", Val::hlc(value.version.as_ref())),
        ]),
        None => fields([("value", Val::Null), ("version", Val::Null)]),
    }
}

/// The result of `delete` and `vdel`.
pub fn delete_fields(result: &DeleteResult) -> Fields {
    fields([
        ("outcome", outcome(result)),
        ("version", Val::hlc(result.version.as_ref())),
    ])
}

/// The result of `keys`: prefixes removed, sorted by bytes.
pub fn keys_fields(ctx: &Ctx, keys: Vec<Bytes>) -> Result<Fields, String> {
    let mut keys = keys
        .iter()
        .map(|k| ctx.strip(k))
        .collect::<Result<Vec<_>, _>>()?;
    keys.sort();
    Ok(fields([(
        "keys",
        Val::List(keys.into_iter().map(Val::Bytes).collect()),
    )]))
}

/// An event of `next_event`.
fn event(kind: &str, key: Val, value: Val, version: Val, holder: Val) -> Fields {
    fields([
        ("kind", Val::text(kind)),
        ("key", key),
        ("value", value),
        ("version", version),
        ("holder", holder),
    ])
}

/// `next_event` when nothing came in time.
pub fn no_event() -> Fields {
    event("none", Val::Null, Val::Null, Val::Null, Val::Null)
}

/// `next_event` when the stream has ended.
pub fn end_of_stream() -> Fields {
    event("end", Val::Null, Val::Null, Val::Null, Val::Null)
}

/// A key notification as a `next_event` result.
pub fn key_event(ctx: &Ctx, key: &Bytes, e: KeyEvent) -> Result<Fields, String> {
    let key = Val::Bytes(ctx.strip(key)?);
    Ok(match e {
        KeyEvent::Set { value, version } => event(
            "set",
            key,
            Val::Bytes(value),
            Val::hlc(version.as_ref()),
            Val::Null,
        ),
        KeyEvent::Delete { version } => event(
            "delete",
            key,
            Val::Null,
            Val::hlc(version.as_ref()),
            Val::Null,
        ),
        KeyEvent::Resynced { value } => {
            let (value, version) = match value {
                Some(v) => (Val::Bytes(v.value), Val::hlc(v.version.as_ref())),
                None => (Val::Null, Val::Null),
            };
            event("resynced", key, value, version, Val::Null)
        }
    })
}

/// A leadership change as a `next_event` result.
pub fn leader_event(ctx: &Ctx, key: &Bytes, e: LeaderEvent) -> Result<Fields, String> {
    let key = Val::Bytes(ctx.strip(key)?);
    Ok(match e {
        LeaderEvent::Elected { leader } => {
            event("elected", key, Val::Null, Val::Null, Val::Bytes(leader))
        }
        LeaderEvent::Vacant => event("vacant", key, Val::Null, Val::Null, Val::Null),
    })
}

/// The result of `lease_try_acquire` and `try_campaign`.
pub fn acquire_fields(outcome: AcquireOutcome) -> Fields {
    match outcome {
        AcquireOutcome::Acquired { token } => fields([
            ("acquired", Val::Bool(true)),
            ("token", Val::hlc(Some(&token))),
            ("holder", Val::Null),
        ]),
        AcquireOutcome::HeldBy { holder } => fields([
            ("acquired", Val::Bool(false)),
            ("token", Val::Null),
            ("holder", Val::opt_bytes(holder)),
        ]),
    }
}

fn reason_name(reason: LossReason) -> &'static str {
    match reason {
        LossReason::Expired => "expired",
        LossReason::TakenOver => "taken_over",
        LossReason::ClientClosed => "client_closed",
    }
}

/// The result of `lease_state`.
pub fn lease_state_fields(state: &LeaseState) -> Fields {
    let (name, token, reason) = match state {
        LeaseState::NotHeld => ("not_held", Val::Null, Val::Null),
        LeaseState::Held { token } => ("held", Val::hlc(Some(token)), Val::Null),
        LeaseState::Lost(loss) => ("lost", Val::Null, Val::text(reason_name(loss.reason))),
    };
    fields([
        ("state", Val::text(name)),
        ("token", token),
        ("reason", reason),
    ])
}

/// The result of `lease_lost` once the lease is not held (`None`: released or never held).
pub fn lost_fields(loss: Option<&statestore::lease::Loss>) -> Fields {
    fields([(
        "reason",
        loss.map_or(Val::Null, |l| Val::text(reason_name(l.reason))),
    )])
}

/// The functions of `update`.
#[derive(Debug, Clone)]
pub enum UpdateFn {
    /// Decimal increment; absent (or not a number) counts as 0.
    Increment,
    /// The given value.
    SetConst(Bytes),
    /// Delete the key.
    Delete,
}

impl UpdateFn {
    /// The `fn` (and `value`) of an `update` step.
    pub fn from_args(args: &Args) -> Result<UpdateFn, String> {
        match args.text("fn")?.as_str() {
            "increment" => Ok(UpdateFn::Increment),
            "delete" => Ok(UpdateFn::Delete),
            "set_const" => Ok(UpdateFn::SetConst(
                args.opt_bytes("value")?
                    .ok_or("fn \"set_const\" needs \"value\"")?,
            )),
            other => Err(format!("unknown update fn {other:?}")),
        }
    }

    /// The new value from the old one.
    pub fn apply(self, old: Option<Bytes>) -> Option<Bytes> {
        match self {
            UpdateFn::Increment => {
                let n: u64 = old
                    .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
                    .unwrap_or(0);
                Some(Bytes::from((n + 1).to_string()))
            }
            UpdateFn::SetConst(value) => Some(value),
            UpdateFn::Delete => None,
        }
    }
}

/// The result of `update`.
pub fn update_fields(written: Option<Bytes>) -> Fields {
    fields([("written", Val::opt_bytes(written))])
}

/// A result with no fields.
pub fn empty() -> Fields {
    Fields::new()
}

fn outcome(result: &DeleteResult) -> Val {
    Val::text(match result.outcome {
        DeleteOutcome::Deleted => "deleted",
        DeleteOutcome::NotFound => "not_found",
        DeleteOutcome::ValueMismatch => "value_mismatch",
    })
}

/// The result of a batch: the field `name` with each key's `value` (null for a failed key),
/// and `errors` with each failed key's code name (null for the others).
pub fn batch_fields<T>(
    name: &str,
    results: Vec<Result<T, Error>>,
    value: impl Fn(T) -> Val,
) -> Fields {
    let (values, errors) = results
        .into_iter()
        .map(|result| match result {
            Ok(ok) => (value(ok), Val::Null),
            Err(error) => (Val::Null, Val::text(code_name(&error))),
        })
        .unzip();
    fields([(name, Val::List(values)), ("errors", Val::List(errors))])
}

/// The result of `get_many`.
pub fn get_many_fields(results: Vec<Result<Option<statestore::Value>, Error>>) -> Fields {
    batch_fields("values", results, |value| {
        Val::opt_bytes(value.map(|v| v.value))
    })
}

/// The result of `set_many`.
pub fn set_many_fields(results: Vec<Result<SetResult, Error>>) -> Fields {
    batch_fields("applied", results, |result| Val::Bool(result.applied))
}

/// The result of `delete_many`.
pub fn delete_many_fields(results: Vec<Result<DeleteResult, Error>>) -> Fields {
    batch_fields("outcomes", results, |result| outcome(&result))
}
