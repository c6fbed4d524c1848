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
    /// The client could not reach the broker.
    #[error("cannot connect to the broker: {0}")]
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
    /// The blocking API was called where it cannot run (inside an async runtime, after fork).
    #[error("the blocking API cannot run here: {0}")]
    Runtime(String),
    /// A lease, lock or leadership is not held (never acquired, released, lost, or taken
    /// over by another holder), so the operation that needs it was not done.
    #[error("the lease is not held: {0}")]
    NotHeld(String),
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
        }
    }

    /// Whether the request may have been applied although it failed (timeout or lost
    /// connection): a write should be checked by reading the key before it is repeated.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, Self::Timeout(_) | Self::ConnectionLost)
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
