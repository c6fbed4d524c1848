//! The state store as a pure state machine: keys, values, versions, fencing tokens, expiry
//! and KEYNOTIFY registrations. No I/O and no clock of its own: time comes in as `now_ms`.
//!
//! INTERFACE CONTRACT (the service layer codes against these signatures).
//!
//! Every request first removes the keys whose deadline has passed (their DELETE notices come
//! first in the request's [`Outcome`]), so no request ever sees an expired key; the service's
//! timer calls [`Engine::expire`] at [`Engine::next_expiry`] so that keys also go, and observers
//! hear of it, when no request arrives.
//!
//! Keys and values are stored as the [`Bytes`] slices of the request payload, without copying
//! (a stored slice keeps its payload's buffer alive).
//!
//! Choices where the protocol document is silent:
//! - `__ts` is validated (and merged into the server clock) on every verb that carries it;
//!   only SET requires it. `__ft` is validated on SET, DEL and VDEL only; GET and KEYNOTIFY
//!   ignore it.
//! - A write is checked in this order, the first failure answering: `__ts`, `__ft`, the key's
//!   fencing token, the NX/NEX or VDEL value condition, the quota. Any failure changes no key,
//!   so the token of a SET whose condition failed is not stored.
//! - Responses carry the key's version whenever the key exists (a failed NX/NEX or VDEL
//!   mismatch included, and KEYNOTIFY); errors carry none. A DELETE notice carries a fresh
//!   version from the server clock, so observers see deletions ordered after the last SET.
//! - The server clock never fails: a request counter at its maximum moves the clock's wall
//!   time on by 1 ms instead of overflowing.

mod clock;
mod expiry;
mod fencing;
mod notify;
mod request_clocks;
mod store;
mod verbs;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore::protocol::{Hlc, Notification, Request, Response, ServiceError, MAX_CLOCK_SKEW};

use clock::ServerClock;
use notify::Registry;
use store::Store;

/// Settings of the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Node id of the server's HLC (the protocol document shows the real service's `StateStore`).
    pub node_id: String,
    /// Maximum number of keys; `None` = unlimited.
    pub max_keys: Option<usize>,
    /// Maximum clock skew for `__ts` and `__ft`.
    pub max_skew: Duration,
}

impl Default for EngineConfig {
    /// The real service's settings, without a quota.
    fn default() -> Self {
        Self {
            node_id: "StateStore".to_owned(),
            max_keys: None,
            max_skew: MAX_CLOCK_SKEW,
        }
    }
}

/// What the service layer knows about a request besides its payload.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    /// The requester's MQTT client id (KEYNOTIFY registrations are per client id and key).
    pub client_id: &'a str,
    /// The raw `__ts` user property, if present.
    pub timestamp: Option<&'a str>,
    /// The raw `__ft` user property, if present.
    pub fencing_token: Option<&'a str>,
    /// `aio-persistence: true` was present (accepted and ignored: nothing is persisted yet).
    pub persist: bool,
    /// The server's wall clock, ms since the Unix epoch.
    pub now_ms: u64,
}

/// A notification to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The observing client.
    pub client_id: Arc<str>,
    /// The key that changed.
    pub key: Bytes,
    /// What happened.
    pub notification: Notification,
    /// The key's new version (`__ts` of the notification).
    pub version: Hlc,
}

/// The result of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The response payload.
    pub response: Response,
    /// `__ts` of the response: the key's version, when there is one.
    pub version: Option<Hlc>,
    /// Notifications caused by the request.
    pub notices: Vec<Notice>,
}

impl Outcome {
    fn reply(response: Response, version: Option<Hlc>) -> Self {
        Self {
            response,
            version,
            notices: Vec::new(),
        }
    }

    fn error(error: ServiceError) -> Self {
        Self::reply(Response::Error(error), None)
    }
}

/// The state store state machine.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    clock: ServerClock,
    store: Store,
    registry: Registry,
}

impl Engine {
    /// An empty store.
    pub fn new(config: EngineConfig) -> Self {
        Self {
            clock: ServerClock::new(config.node_id.clone()),
            config,
            store: Store::default(),
            registry: Registry::default(),
        }
    }

    /// Decodes and applies a request payload; malformed payloads get their `-ERR` response.
    pub fn apply_payload(&mut self, payload: &Bytes, ctx: &RequestContext<'_>) -> Outcome {
        match Request::decode(payload) {
            Ok(request) => self.apply(&request, ctx),
            Err(error) => Outcome::error(error.service_error()),
        }
    }

    /// Applies a decoded request.
    pub fn apply(&mut self, request: &Request, ctx: &RequestContext<'_>) -> Outcome {
        let expired = self.expire(ctx.now_ms);
        let result = match request {
            Request::Set { key, value, flags } => self.set(key, value, *flags, ctx),
            Request::Get { key } => self.get(key, ctx),
            Request::Del { key } => self.delete(key, None, ctx),
            Request::VDel { key, value } => self.delete(key, Some(value), ctx),
            Request::KeyNotify { key, stop } => self.key_notify(key, *stop, ctx),
            // SCAN comes with a later issue; until then the server does not know the verb.
            Request::Scan { .. } => Err(ServiceError::UnknownCommand),
        };
        let mut outcome = result.unwrap_or_else(Outcome::error);
        if !expired.is_empty() {
            let caused = std::mem::replace(&mut outcome.notices, expired);
            outcome.notices.extend(caused);
        }
        outcome
    }

    /// Removes every key whose deadline is at or before `now_ms`; returns the DELETE notices.
    pub fn expire(&mut self, now_ms: u64) -> Vec<Notice> {
        let mut notices = Vec::new();
        while let Some((key, _)) = self.store.pop_expired(now_ms) {
            self.notify_deleted(&key, now_ms, &mut notices);
        }
        notices
    }

    /// The earliest expiry deadline (ms since epoch), for the service's timer.
    pub fn next_expiry(&self) -> Option<u64> {
        self.store.next_deadline()
    }

    /// Drops every KEYNOTIFY registration of a client (it disconnected).
    pub fn drop_client(&mut self, client_id: &str) {
        self.registry.drop_client(client_id);
    }

    /// Number of keys. Keys past their deadline count until the next request or
    /// [`Engine::expire`] removes them.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether there are no keys (see [`Engine::len`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
