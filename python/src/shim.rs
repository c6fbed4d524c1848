//! TEMPORARY stand-in for the parts of `statestore::bindings` this crate uses, until they land
//! in core (same signatures as /work/bindings-api.md). TODO(core): delete this file and
//! re-export `statestore::bindings` from `lib.rs`.

use std::future::Future;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use statestore::{Error, ErrorCode, Result};

type Callback<T> = Box<dyn FnOnce(Result<T>) + Send>;

struct Slot<T> {
    result: Option<Result<T>>,
    callback: Option<Callback<T>>,
    done: bool,
}

struct Shared<T> {
    slot: Mutex<Slot<T>>,
    ready: Condvar,
    abort: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl<T> Shared<T> {
    fn complete(&self, result: Result<T>) {
        let mut slot = self.slot.lock().unwrap();
        if slot.done {
            return;
        }
        slot.done = true;
        if let Some(callback) = slot.callback.take() {
            drop(slot);
            callback(result);
        } else {
            slot.result = Some(result);
            self.ready.notify_all();
        }
    }
}

/// A core future completed exactly once.
pub struct Pending<T> {
    shared: Arc<Shared<T>>,
}

/// Cancels a [`Pending`].
#[derive(Clone)]
pub struct Canceller(Arc<dyn Fn() + Send + Sync>);

impl Canceller {
    pub fn cancel(&self) {
        (self.0)()
    }
}

impl<T: Send + 'static> Pending<T> {
    pub fn spawn<F>(future: F) -> Pending<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let pending = Pending::<T>::empty();
        match statestore::runtime::handle() {
            Ok(handle) => {
                let shared = pending.shared.clone();
                let task = handle.spawn(async move { shared.complete(future.await) });
                let abort = task.abort_handle();
                *pending.shared.abort.lock().unwrap() = Some(Box::new(move || abort.abort()));
            }
            Err(e) => pending.shared.complete(Err(e)),
        }
        pending
    }

    fn empty() -> Pending<T> {
        Pending {
            shared: Arc::new(Shared {
                slot: Mutex::new(Slot {
                    result: None,
                    callback: None,
                    done: false,
                }),
                ready: Condvar::new(),
                abort: Mutex::new(None),
            }),
        }
    }

    pub fn ready(result: Result<T>) -> Pending<T> {
        let pending = Pending::empty();
        pending.shared.complete(result);
        pending
    }

    pub fn wait_timeout(&mut self, d: Duration) -> Option<Result<T>> {
        let slot = self.shared.slot.lock().unwrap();
        let (mut slot, _) = self
            .shared
            .ready
            .wait_timeout_while(slot, d, |s| s.result.is_none())
            .unwrap();
        slot.result.take()
    }

    pub fn on_complete(self, f: impl FnOnce(Result<T>) + Send + 'static) {
        let mut slot = self.shared.slot.lock().unwrap();
        if let Some(result) = slot.result.take() {
            drop(slot);
            std::thread::spawn(move || f(result));
        } else {
            slot.callback = Some(Box::new(f));
        }
    }

    pub fn canceller(&self) -> Canceller {
        let shared = self.shared.clone();
        Canceller(Arc::new(move || {
            if let Some(abort) = shared.abort.lock().unwrap().as_ref() {
                abort();
            }
            shared.complete(Err(Error::InvalidArgument("cancelled".into())));
        }))
    }

    pub fn cancel(&self) {
        self.canceller().cancel()
    }
}

/// Names of error codes until core has them.
pub trait CodeNames {
    fn name(self) -> &'static str;
    fn class_name(self) -> &'static str;
}

pub const ALL: &[(ErrorCode, &str, &str)] = &[
    (
        ErrorCode::InvalidArgument,
        "INVALID_ARGUMENT",
        "InvalidArgumentError",
    ),
    (ErrorCode::Timeout, "TIMEOUT", "TimeoutError"),
    (
        ErrorCode::ConnectionLost,
        "CONNECTION_LOST",
        "ConnectionLostError",
    ),
    (ErrorCode::Connection, "CONNECTION", "ConnectionError"),
    (
        ErrorCode::UnexpectedPayload,
        "UNEXPECTED_PAYLOAD",
        "UnexpectedPayloadError",
    ),
    (ErrorCode::Rpc, "RPC", "RpcError"),
    (ErrorCode::Clock, "CLOCK", "ClockError"),
    (ErrorCode::Closed, "CLOSED", "ClosedError"),
    (ErrorCode::Runtime, "RUNTIME", "RuntimeError"),
    (ErrorCode::NotHeld, "NOT_HELD", "NotHeldError"),
    (
        ErrorCode::TimestampSkew,
        "TIMESTAMP_SKEW",
        "TimestampSkewError",
    ),
    (
        ErrorCode::FencingTokenRequired,
        "FENCING_TOKEN_REQUIRED",
        "FencingTokenRequiredError",
    ),
    (
        ErrorCode::FencingTokenSkew,
        "FENCING_TOKEN_SKEW",
        "FencingTokenSkewError",
    ),
    (
        ErrorCode::FencingTokenLowerVersion,
        "FENCING_TOKEN_LOWER_VERSION",
        "FencingTokenLowerVersionError",
    ),
    (
        ErrorCode::QuotaExceeded,
        "QUOTA_EXCEEDED",
        "QuotaExceededError",
    ),
    (ErrorCode::SyntaxError, "SYNTAX_ERROR", "SyntaxError"),
    (
        ErrorCode::NotAuthorized,
        "NOT_AUTHORIZED",
        "NotAuthorizedError",
    ),
    (
        ErrorCode::UnknownCommand,
        "UNKNOWN_COMMAND",
        "UnknownCommandError",
    ),
    (
        ErrorCode::WrongNumberOfArguments,
        "WRONG_NUMBER_OF_ARGUMENTS",
        "WrongNumberOfArgumentsError",
    ),
    (
        ErrorCode::MissingTimestamp,
        "MISSING_TIMESTAMP",
        "MissingTimestampError",
    ),
    (
        ErrorCode::MalformedTimestamp,
        "MALFORMED_TIMESTAMP",
        "MalformedTimestampError",
    ),
    (
        ErrorCode::KeyLengthZero,
        "KEY_LENGTH_ZERO",
        "KeyLengthZeroError",
    ),
    (
        ErrorCode::UnknownServiceError,
        "UNKNOWN_SERVICE_ERROR",
        "UnknownServiceError",
    ),
];

pub struct ErrorInfo {
    pub code: ErrorCode,
    pub message: String,
    pub outcome_unknown: bool,
}

impl From<&Error> for ErrorInfo {
    fn from(e: &Error) -> Self {
        ErrorInfo {
            code: e.code(),
            message: e.to_string(),
            outcome_unknown: e.outcome_unknown(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    Str,
    Path,
    Port,
    Bool,
    Duration,
    Int,
}

pub enum OptionValue {
    Str(String),
    Int(i64),
    Bool(bool),
    Duration(Duration),
    None,
}

pub struct OptionSpec {
    pub name: &'static str,
    pub js_name: &'static str,
    pub kind: OptionKind,
}

pub static CONNECT_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "client_id",
        js_name: "clientId",
        kind: OptionKind::Str,
    },
    OptionSpec {
        name: "default_timeout",
        js_name: "defaultTimeout",
        kind: OptionKind::Duration,
    },
];

pub fn set_option(
    c: &mut statestore::ConnectOptions,
    name: &str,
    value: OptionValue,
) -> Result<()> {
    match (name, value) {
        ("client_id", OptionValue::Str(s)) => c.client_id = Some(s),
        ("default_timeout", OptionValue::Duration(d)) => c.default_timeout = d,
        (name, _) => return Err(Error::InvalidArgument(format!("unknown option {name}"))),
    }
    Ok(())
}
