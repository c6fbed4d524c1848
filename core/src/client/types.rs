//! Per-call options and results of the state store operations, and the events of observations.

use std::time::Duration;

use bytes::Bytes;

use super::validate;
use crate::protocol::{Hlc, SetCondition};
use crate::Result;

/// Options of [`Client::set`](super::Client::set).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SetOptions {
    /// When the SET applies (always, only if absent = `NX`, only if absent or equal = `NEX`).
    pub condition: SetCondition,
    /// Time to live of the key (`PX`, at least 1 ms; sub-millisecond parts are dropped).
    pub expiry: Option<Duration>,
    /// Fencing token (`__ft`): required once a key is fenced, must not be older than its token.
    pub fencing_token: Option<Hlc>,
    /// Call timeout; the client's default when `None`.
    pub timeout: Option<Duration>,
    /// Ask the service to persist the key (`aio-persistence: true`; newer services only).
    pub persist: bool,
}

impl SetOptions {
    /// Sets the condition.
    pub fn condition(mut self, condition: SetCondition) -> Self {
        self.condition = condition;
        self
    }

    /// Sets the expiry.
    pub fn expiry(mut self, expiry: Duration) -> Self {
        self.expiry = Some(expiry);
        self
    }

    /// Sets the fencing token.
    ///
    /// The key stays fenced from then on, until it is deleted or expires: every later write
    /// or delete of it needs a token at least as new ([`ServiceError::FencingTokenRequired`]
    /// otherwise, also after the lock is gone).
    ///
    /// [`ServiceError::FencingTokenRequired`]: crate::ServiceError::FencingTokenRequired
    pub fn fencing_token(mut self, token: Hlc) -> Self {
        self.fencing_token = Some(token);
        self
    }

    /// Sets the timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks for persistence.
    pub fn persist(mut self, persist: bool) -> Self {
        self.persist = persist;
        self
    }

    /// Fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument) for options that
    /// [`Client::set`](super::Client::set) refuses (an expiry under 1 ms or too long for the
    /// service, a zero timeout): bindings check when the call is made, so that an
    /// asynchronous call is refused before it starts, as its blocking twin is.
    pub fn validate(&self) -> Result<()> {
        validate::expiry_ms(self.expiry)?;
        validate::optional_timeout(self.timeout)
    }
}

/// Options of [`Client::delete`](super::Client::delete) and [`Client::vdel`](super::Client::vdel).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DeleteOptions {
    /// Fencing token (`__ft`), needed when the key is fenced.
    pub fencing_token: Option<Hlc>,
    /// Call timeout; the client's default when `None`.
    pub timeout: Option<Duration>,
}

impl DeleteOptions {
    /// Sets the fencing token, needed to delete a key written with one. A key whose lock is
    /// gone is deleted with its current version (from [`Client::get`]) as the token.
    ///
    /// [`Client::get`]: crate::Client::get
    pub fn fencing_token(mut self, token: Hlc) -> Self {
        self.fencing_token = Some(token);
        self
    }

    /// Sets the timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument) for options that
    /// [`Client::delete`](super::Client::delete) refuses (a zero timeout): see
    /// [`SetOptions::validate`].
    pub fn validate(&self) -> Result<()> {
        validate::optional_timeout(self.timeout)
    }
}

/// Result of a SET.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetResult {
    /// Whether the value was stored (`false`: the `NX`/`NEX` condition did not hold).
    pub applied: bool,
    /// The key's version reported by the service (`__ts`); the fencing token when this SET
    /// took a lock. `None` if the service sent none (or an unreadable one).
    pub version: Option<Hlc>,
}

/// A value read with GET.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Value {
    /// The value's bytes.
    pub value: Bytes,
    /// The key's version, if the service reported one.
    pub version: Option<Hlc>,
}

/// What a DEL or VDEL did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DeleteOutcome {
    /// The key was deleted.
    Deleted = 0,
    /// There was no such key.
    NotFound = 1,
    /// VDEL only: the key holds another value, so it was kept.
    ValueMismatch = 2,
}

impl DeleteOutcome {
    /// Every outcome, in the order of their codes.
    pub const ALL: [DeleteOutcome; 3] = [Self::Deleted, Self::NotFound, Self::ValueMismatch];

    /// The outcome's name as the bindings spell it, `(snake_case, camelCase)`: Python says
    /// `not_found`, JavaScript `notFound`; one place, so they cannot drift.
    ///
    /// ```
    /// use statestore::DeleteOutcome;
    /// assert_eq!(DeleteOutcome::ValueMismatch.names(), ("value_mismatch", "valueMismatch"));
    /// ```
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::Deleted => ("deleted", "deleted"),
            Self::NotFound => ("not_found", "notFound"),
            Self::ValueMismatch => ("value_mismatch", "valueMismatch"),
        }
    }
}

/// Result of a DEL or VDEL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteResult {
    /// What happened.
    pub outcome: DeleteOutcome,
    /// The version the service reported, if any.
    pub version: Option<Hlc>,
}

impl DeleteResult {
    /// Whether the key was deleted.
    pub fn deleted(&self) -> bool {
        self.outcome == DeleteOutcome::Deleted
    }
}

/// A change to an observed key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyEvent {
    /// The key was set to `value`.
    Set {
        /// The new value.
        value: Bytes,
        /// The key's new version, if the service sent one.
        version: Option<Hlc>,
    },
    /// The key was deleted, or it expired.
    Delete {
        /// The key's version, if the service sent one.
        version: Option<Hlc>,
    },
    /// The connection was re-established and the observation re-registered. Changes made while
    /// the client was disconnected were not notified; `value` is the key's state read after
    /// re-registering (`None`: the key does not exist).
    Resynced {
        /// The current value, or `None` if the key is absent.
        value: Option<Value>,
    },
}
