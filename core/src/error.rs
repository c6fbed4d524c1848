//! The one error type of the library, and the stable numeric code of each variant that the
//! C, Python and Node bindings expose.

use std::time::Duration;

use thiserror::Error;

use crate::protocol::{DecodeError, HlcError, ServiceError};

/// Every error the library returns.
///
/// Messages say what happened and what to do; [`Error::code`] gives a stable number per
/// variant (and per service error) for foreign callers.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// The service answered `-ERR`.
    #[error("the state store rejected the request: {0}")]
    Service(ServiceError),
    /// An argument was rejected before anything was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// No response arrived in time. For a write, the outcome is unknown.
    #[error("no response from the state store within {0:?}: check that the broker and the state store are reachable, or raise the timeout")]
    Timeout(Duration),
    /// The connection was lost while the request was in flight; it may or may not have been
    /// applied.
    #[error("the connection to the broker was lost while the request was in flight; the outcome is unknown: read the key to find out")]
    ConnectionLost,
    /// The client could not reach the broker: the text starts with its `host:port`.
    #[error("cannot connect to {0}")]
    Connection(String),
    /// The service's answer did not follow the protocol.
    #[error("unexpected payload from the state store: {0}")]
    UnexpectedPayload(String),
    /// The RPC layer of the service refused the request (`__stat` other than 200).
    #[error("the state store refused the request with status {status}: {message}")]
    Rpc {
        /// The `__stat` value.
        status: u16,
        /// The `__stMsg` value, if any.
        message: String,
    },
    /// The hybrid logical clock could not advance (overflow, or a clock too far ahead).
    #[error("clock error: {0}")]
    Clock(HlcError),
    /// The client was closed.
    #[error("the client is closed")]
    Closed,
    /// The call cannot run where it was made: a blocking call inside an async runtime, or any
    /// call of a client (or of a call) inherited from the parent process after fork.
    #[error("the call cannot run here: {0}")]
    Runtime(String),
    /// A lease, lock or leadership is not held (never acquired, released, lost, or taken
    /// over by another holder), so the operation that needs it was not done.
    #[error("the lease is not held: {0}")]
    NotHeld(String),
    /// The caller cancelled the call before it completed (for a write, the outcome is unknown).
    #[error("the call was cancelled before it completed; for a write the outcome is unknown")]
    Cancelled,
    /// A bug in the library (for instance a panic caught at a language boundary).
    #[error("internal error in the statestore library (please report it): {0}")]
    Internal(String),
}

/// The stable numeric code of an [`Error`](enum@Error). Values never change meaning once released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Not an error.
    Ok = 0,
    /// [`Error::InvalidArgument`].
    InvalidArgument = 1,
    /// [`Error::Timeout`].
    Timeout = 2,
    /// [`Error::ConnectionLost`].
    ConnectionLost = 3,
    /// [`Error::Connection`].
    Connection = 4,
    /// [`Error::UnexpectedPayload`].
    UnexpectedPayload = 5,
    /// [`Error::Rpc`].
    Rpc = 6,
    /// [`Error::Clock`].
    Clock = 7,
    /// [`Error::Closed`].
    Closed = 8,
    /// [`Error::Runtime`].
    Runtime = 9,
    /// [`Error::NotHeld`].
    NotHeld = 10,
    /// [`Error::Cancelled`].
    Cancelled = 11,
    /// [`Error::Internal`].
    Internal = 12,
    /// [`ServiceError::TimestampSkew`].
    TimestampSkew = 100,
    /// [`ServiceError::FencingTokenRequired`].
    FencingTokenRequired = 101,
    /// [`ServiceError::FencingTokenSkew`].
    FencingTokenSkew = 102,
    /// [`ServiceError::FencingTokenLowerVersion`].
    FencingTokenLowerVersion = 103,
    /// [`ServiceError::QuotaExceeded`].
    QuotaExceeded = 104,
    /// [`ServiceError::SyntaxError`].
    SyntaxError = 105,
    /// [`ServiceError::NotAuthorized`].
    NotAuthorized = 106,
    /// [`ServiceError::UnknownCommand`].
    UnknownCommand = 107,
    /// [`ServiceError::WrongNumberOfArguments`].
    WrongNumberOfArguments = 108,
    /// [`ServiceError::MissingTimestamp`].
    MissingTimestamp = 109,
    /// [`ServiceError::MalformedTimestamp`].
    MalformedTimestamp = 110,
    /// [`ServiceError::KeyLengthZero`].
    KeyLengthZero = 111,
    /// [`ServiceError::Unknown`].
    UnknownServiceError = 199,
}

impl Error {
    /// The stable numeric code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Service(e) => match e {
                ServiceError::TimestampSkew => ErrorCode::TimestampSkew,
                ServiceError::FencingTokenRequired => ErrorCode::FencingTokenRequired,
                ServiceError::FencingTokenSkew => ErrorCode::FencingTokenSkew,
                ServiceError::FencingTokenLowerVersion => ErrorCode::FencingTokenLowerVersion,
                ServiceError::QuotaExceeded => ErrorCode::QuotaExceeded,
                ServiceError::SyntaxError => ErrorCode::SyntaxError,
                ServiceError::NotAuthorized => ErrorCode::NotAuthorized,
                ServiceError::UnknownCommand => ErrorCode::UnknownCommand,
                ServiceError::WrongNumberOfArguments => ErrorCode::WrongNumberOfArguments,
                ServiceError::MissingTimestamp => ErrorCode::MissingTimestamp,
                ServiceError::MalformedTimestamp => ErrorCode::MalformedTimestamp,
                ServiceError::KeyLengthZero => ErrorCode::KeyLengthZero,
                ServiceError::Unknown(_) => ErrorCode::UnknownServiceError,
            },
            Self::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Self::Timeout(_) => ErrorCode::Timeout,
            Self::ConnectionLost => ErrorCode::ConnectionLost,
            Self::Connection(_) => ErrorCode::Connection,
            Self::UnexpectedPayload(_) => ErrorCode::UnexpectedPayload,
            Self::Rpc { .. } => ErrorCode::Rpc,
            Self::Clock(_) => ErrorCode::Clock,
            Self::Closed => ErrorCode::Closed,
            Self::Runtime(_) => ErrorCode::Runtime,
            Self::NotHeld(_) => ErrorCode::NotHeld,
            Self::Cancelled => ErrorCode::Cancelled,
            Self::Internal(_) => ErrorCode::Internal,
        }
    }

    /// Whether the request may have been applied although it failed (timeout, lost
    /// connection, cancellation): a write should be checked by reading the key before it is
    /// repeated.
    pub fn outcome_unknown(&self) -> bool {
        matches!(
            self,
            Self::Timeout(_) | Self::ConnectionLost | Self::Cancelled
        )
    }

    /// This error as plain data, for foreign callers.
    pub fn info(&self) -> ErrorInfo {
        ErrorInfo::from(self)
    }
}

/// The broad kind of an [`ErrorCode`], for callers that handle errors by kind (the bindings'
/// exception bases, the CLI's exit statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCategory {
    /// Not an error ([`ErrorCode::Ok`]).
    None,
    /// The caller passed something invalid; nothing was sent.
    Argument,
    /// No answer in time.
    Timeout,
    /// The broker could not be reached, or the connection dropped.
    Connection,
    /// The state store refused the request (`-ERR`), or answered outside the protocol.
    Service,
    /// A lease, lock or leadership is not held.
    Lease,
    /// The client was closed, or the call cancelled.
    Closed,
    /// The call cannot run in this context (inside an async runtime, after fork).
    Runtime,
    /// A bug in the library.
    Internal,
}

impl ErrorCategory {
    /// Upper snake case name, e.g. `"CONNECTION"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Argument => "ARGUMENT",
            Self::Timeout => "TIMEOUT",
            Self::Connection => "CONNECTION",
            Self::Service => "SERVICE",
            Self::Lease => "LEASE",
            Self::Closed => "CLOSED",
            Self::Runtime => "RUNTIME",
            Self::Internal => "INTERNAL",
        }
    }
}

/// One row of the error table: everything a binding derives from a code.
struct CodeInfo {
    code: ErrorCode,
    name: &'static str,
    class_name: &'static str,
    category: ErrorCategory,
    description: &'static str,
}

macro_rules! code_table {
    ($($code:ident, $name:literal, $class:literal, $category:ident, $doc:literal;)*) => {
        const TABLE: &[CodeInfo] = &[$(CodeInfo {
            code: ErrorCode::$code,
            name: $name,
            class_name: $class,
            category: ErrorCategory::$category,
            description: $doc,
        }),*];
        impl ErrorCode {
            /// Every code, [`ErrorCode::Ok`] first, in numeric order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$code),*];
        }
    };
}

// The one table the C enum, the Python exception classes, the Node `code` strings and the CLI
// derive from: a new code is added here and nowhere else.
code_table! {
    Ok, "OK", "", None, "Success.";
    InvalidArgument, "INVALID_ARGUMENT", "InvalidArgumentError", Argument, "An argument was rejected before anything was sent.";
    Timeout, "TIMEOUT", "TimeoutError", Timeout, "No response within the timeout; for a write the outcome is unknown.";
    ConnectionLost, "CONNECTION_LOST", "ConnectionLostError", Connection, "The connection was lost with the request in flight; the outcome is unknown.";
    Connection, "CONNECTION", "ConnectionError", Connection, "The broker could not be reached, or refused the connection or a subscription.";
    UnexpectedPayload, "UNEXPECTED_PAYLOAD", "UnexpectedPayloadError", Service, "The state store's answer did not follow the protocol.";
    Rpc, "RPC", "RpcError", Service, "The state store's RPC layer refused the request (status other than 200).";
    Clock, "CLOCK", "ClockError", Service, "The hybrid logical clock could not advance (overflow, or a clock too far ahead).";
    Closed, "CLOSED", "ClosedError", Closed, "The client (or the observation) was closed.";
    Runtime, "RUNTIME", "RuntimeError", Runtime, "The call cannot run here (on an async runtime's thread, or after fork in a client of the parent).";
    NotHeld, "NOT_HELD", "NotHeldError", Lease, "The lease, lock or leadership is not held.";
    Cancelled, "CANCELLED", "CancelledError", Closed, "The caller cancelled the call; for a write the outcome is unknown.";
    Internal, "INTERNAL", "InternalError", Internal, "A bug in the library (a panic caught at a language boundary).";
    TimestampSkew, "TIMESTAMP_SKEW", "TimestampSkewError", Service, "The request's timestamp is too far ahead of the service's clock.";
    FencingTokenRequired, "FENCING_TOKEN_REQUIRED", "FencingTokenRequiredError", Service, "The key is fenced: writes need a fencing token.";
    FencingTokenSkew, "FENCING_TOKEN_SKEW", "FencingTokenSkewError", Service, "The fencing token is too far ahead of the service's clock.";
    FencingTokenLowerVersion, "FENCING_TOKEN_LOWER_VERSION", "FencingTokenLowerVersionError", Service, "The fencing token is older than the key's: a newer holder has written.";
    QuotaExceeded, "QUOTA_EXCEEDED", "QuotaExceededError", Service, "The state store's key quota is exhausted.";
    SyntaxError, "SYNTAX_ERROR", "SyntaxError", Service, "The state store could not parse the request.";
    NotAuthorized, "NOT_AUTHORIZED", "NotAuthorizedError", Service, "The client may not perform this request.";
    UnknownCommand, "UNKNOWN_COMMAND", "UnknownCommandError", Service, "The state store does not know the command.";
    WrongNumberOfArguments, "WRONG_NUMBER_OF_ARGUMENTS", "WrongNumberOfArgumentsError", Service, "The command had the wrong number of arguments.";
    MissingTimestamp, "MISSING_TIMESTAMP", "MissingTimestampError", Service, "The request carried no timestamp.";
    MalformedTimestamp, "MALFORMED_TIMESTAMP", "MalformedTimestampError", Service, "The request's timestamp could not be read.";
    KeyLengthZero, "KEY_LENGTH_ZERO", "KeyLengthZeroError", Service, "The service refused an empty key.";
    UnknownServiceError, "UNKNOWN_SERVICE_ERROR", "UnknownServiceError", Service, "The state store answered with an error this library does not know.";
}

impl ErrorCode {
    fn row(self) -> &'static CodeInfo {
        // Every variant has a row (the `table_covers_every_code` test).
        TABLE
            .iter()
            .find(|row| row.code == self)
            .unwrap_or(&TABLE[0])
    }

    /// Upper snake case name without prefix, e.g. `"TIMEOUT"`: the C constant is
    /// `STATESTORE_ERR_` + name, the Node `code` is `"STATESTORE_" + name`.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The name of the exception class for this code, e.g. `"TimeoutError"` (empty for
    /// [`ErrorCode::Ok`]).
    pub fn class_name(self) -> &'static str {
        self.row().class_name
    }

    /// The broad kind of this code.
    pub fn category(self) -> ErrorCategory {
        self.row().category
    }

    /// One line saying what the code means.
    pub fn description(self) -> &'static str {
        self.row().description
    }

    /// The code with this number, if there is one.
    pub fn from_i32(value: i32) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|code| *code as i32 == value)
    }
}

/// An [`Error`](enum@Error) as plain data: what the bindings hand to C callbacks, Python
/// exceptions and JavaScript `Error` objects.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorInfo {
    /// The stable code.
    pub code: ErrorCode,
    /// [`ErrorCode::name`].
    pub name: &'static str,
    /// [`ErrorCode::category`].
    pub category: ErrorCategory,
    /// The full message (the error's `Display`).
    pub message: String,
    /// [`Error::outcome_unknown`].
    pub outcome_unknown: bool,
}

impl From<&Error> for ErrorInfo {
    fn from(error: &Error) -> Self {
        let code = error.code();
        Self {
            code,
            name: code.name(),
            category: code.category(),
            message: error.to_string(),
            outcome_unknown: error.outcome_unknown(),
        }
    }
}

impl From<ServiceError> for Error {
    fn from(e: ServiceError) -> Self {
        Self::Service(e)
    }
}

impl From<HlcError> for Error {
    fn from(e: HlcError) -> Self {
        Self::Clock(e)
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Self::UnexpectedPayload(e.to_string())
    }
}

impl From<crate::protocol::topics::TopicError> for Error {
    fn from(e: crate::protocol::topics::TopicError) -> Self {
        Self::InvalidArgument(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_per_service_error() {
        let texts = [
            "syntax error",
            "not authorized",
            "unknown command",
            "the quota has been exceeded",
            "a fencing token is required for this request",
            "something new",
        ];
        let codes: std::collections::HashSet<_> = texts
            .iter()
            .map(|t| Error::Service(ServiceError::from_text(t)).code() as i32)
            .collect();
        assert_eq!(codes.len(), texts.len());
        assert_eq!(Error::Timeout(Duration::from_secs(1)).code() as i32, 2);
    }

    #[test]
    fn table_covers_every_code() {
        let names: std::collections::HashSet<_> = ErrorCode::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), ErrorCode::ALL.len(), "names are distinct");
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(TABLE[i].code, *code, "the table is in the order of ALL");
            assert_eq!(ErrorCode::from_i32(*code as i32), Some(*code));
            assert!(!code.description().is_empty());
            assert_eq!(code.class_name().is_empty(), *code == ErrorCode::Ok);
        }
        assert_eq!(ErrorCode::from_i32(55), None);
        assert_eq!(
            ErrorCode::FencingTokenLowerVersion.name(),
            "FENCING_TOKEN_LOWER_VERSION"
        );
        assert_eq!(ErrorCode::QuotaExceeded.category(), ErrorCategory::Service);
        let info = Error::Timeout(Duration::from_secs(1)).info();
        assert_eq!((info.code, info.name), (ErrorCode::Timeout, "TIMEOUT"));
        assert!(info.outcome_unknown && info.message.contains("no response"));
    }

    #[test]
    fn messages_say_what_to_do() {
        let msg = Error::Service(ServiceError::TimestampSkew).to_string();
        assert!(
            msg.contains("too far in the future") && msg.contains("synchronise"),
            "{msg}"
        );
        assert!(Error::ConnectionLost.outcome_unknown());
        assert!(!Error::Closed.outcome_unknown());
    }
}
