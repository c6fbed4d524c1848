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
//! New keys and all values are copied out of the request payload when stored (a slice would
//! keep the whole network buffer it came from alive for as long as the key lives; see
//! `Store::write`).
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
//! - SCAN lists keys in byte order; its continuation token is a position in that order
//!   (text `1:<hex>`), so a scan is stable while keys come and go, and a token this server did
//!   not issue gets `-ERR invalid continuation token`. SCAN's `__ts` is handled like GET's.
//! - SCAN patterns are the service's dialect (the `glob` crate's `Pattern`); a key that is not
//!   UTF-8 is matched as its text with U+FFFD for each invalid sequence, and an invalid pattern
//!   gets `-ERR invalid pattern "<pattern>": <reason>` (see `glob`).
//!
//! Persistence: with [`EngineConfig::persistence`] on, writes of keys with
//! `aio-persistence: true` (and every way such a key stops being persisted) are recorded as
//! [`DurableChange`]s for the service to store ([`Engine::take_durable_changes`]), and
//! [`Engine::restore`] brings stored keys back at start-up.

mod clock;
mod cursor;
mod durable;
mod expiry;
mod fast_hash;
mod fencing;
mod glob;
mod notify;
mod pager;
mod request_clocks;
mod store;
mod verbs;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore::protocol::{Hlc, Notification, Request, Response, ServiceError, MAX_CLOCK_SKEW};

use clock::{ServerClock, Stamp};
pub use cursor::INVALID_TOKEN;
use durable::Journal;
pub use durable::{DurableChange, PersistedKey};
use notify::Registry;
use store::{Store, Write};

/// Default of [`EngineConfig::scan_page_keys`].
pub const DEFAULT_SCAN_PAGE_KEYS: usize = 1_000;
/// Default of [`EngineConfig::scan_page_bytes`]: a quarter of the server's default maximum
/// packet size (4 MiB), which leaves room for the token and the MQTT envelope.
pub const DEFAULT_SCAN_PAGE_BYTES: usize = 1024 * 1024;

/// Settings of the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Node id of the server's HLC (the protocol document shows the real service's `StateStore`).
    pub node_id: String,
    /// Maximum number of keys; `None` = unlimited.
    pub max_keys: Option<usize>,
    /// Maximum clock skew for `__ts` and `__ft`.
    pub max_skew: Duration,
    /// Most keys on one SCAN page (a page also examines at most ten times as many keys).
    pub scan_page_keys: usize,
    /// Most bytes of one encoded SCAN page, keys and token included. Keep it below the
    /// maximum MQTT packet size minus the largest key (a page of one key larger than this is
    /// still sent, since a scan must move on); the server lowers it to a quarter of its
    /// maximum packet size.
    pub scan_page_bytes: usize,
    /// Record changes of keys written with `aio-persistence: true` for durable storage
    /// ([`Engine::take_durable_changes`]). Off, the option is accepted and ignored.
    pub persistence: bool,
}

impl Default for EngineConfig {
    /// The real service's settings, without a quota.
    fn default() -> Self {
        Self {
            node_id: "StateStore".to_owned(),
            max_keys: None,
            max_skew: MAX_CLOCK_SKEW,
            scan_page_keys: DEFAULT_SCAN_PAGE_KEYS,
            scan_page_bytes: DEFAULT_SCAN_PAGE_BYTES,
            persistence: false,
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
    /// `aio-persistence: true` was present (ignored unless [`EngineConfig::persistence`]).
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
    journal: Journal,
}

impl Engine {
    /// An empty store.
    pub fn new(config: EngineConfig) -> Self {
        Self {
            clock: ServerClock::new(config.node_id.clone()),
            journal: Journal::new(config.persistence),
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
            Request::Scan { pattern, token } => self.scan(pattern, token.as_ref(), ctx),
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
        while let Some((key, entry)) = self.store.pop_expired(now_ms) {
            if entry.persisted {
                self.journal.record(DurableChange::Remove(key.clone()));
            }
            self.notify_deleted(&key, now_ms, &mut notices);
        }
        notices
    }

    /// The changes to persisted keys since the last call, oldest first; always empty unless
    /// [`EngineConfig::persistence`]. The service stores them before it answers the requests
    /// that caused them.
    pub fn take_durable_changes(&mut self) -> Vec<DurableChange> {
        self.journal.take()
    }

    /// Brings back a key from durable storage (at start-up, before any request): it is
    /// persisted, keeps its version, token and deadline, and the server clock moves past its
    /// version and its fencing token, so that every later version (a new lock's fencing token
    /// included) is greater. A key already past its deadline goes at the next request or
    /// [`Engine::expire`], as a removal for durable storage.
    pub fn restore(&mut self, key: PersistedKey) {
        let stamp = |hlc: &Hlc| Stamp {
            wall_ms: hlc.wall_ms,
            counter: hlc.counter,
        };
        let version = stamp(&key.version);
        self.clock.witness(version);
        if let Some(token) = &key.fencing_token {
            self.clock.witness(stamp(token));
        }
        self.store.write(
            &key.key,
            Write {
                value: key.value,
                version,
                new_fencing_token: key.fencing_token,
                deadline_ms: key.deadline_ms,
                persist: self.journal.enabled(),
            },
        );
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
