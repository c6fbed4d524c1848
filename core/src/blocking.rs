//! The blocking client: the same operations as [`crate::Client`], for code without an async
//! runtime (and for the C, Python and Node bindings).
//!
//! Each call runs the async client on the library's internal runtime ([`crate::runtime`]).
//! A call made from inside an async runtime fails with [`Error::Runtime`] instead of blocking
//! (or panicking). After `fork`, a client created in the parent fails with [`Error::Runtime`]
//! in the child; clients created in the child work (the child gets its own runtime).
//!
//! ```no_run
//! use statestore::blocking::Client;
//! use statestore::{ConnectOptions, SetOptions};
//!
//! let client = Client::connect(ConnectOptions::new("localhost", 1883))?;
//! client.set("greeting", "hello", SetOptions::default())?;
//! assert_eq!(client.get("greeting")?.map(|v| v.value), Some("hello".into()));
//! # Ok::<(), statestore::Error>(())
//! ```

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;

// The operations' signatures and rustdoc are written once, in `crate::client`, and name their
// types there; every public type is at the crate root, so the glob makes them resolve here too.
use crate::*;

// The operations, declared once with the async client (`crate::client`'s `operations!`): each
// is the async method run on the library's runtime, with the same rustdoc.
crate::client::blocking_twins!();

mod election;
mod keys;
mod lease;
mod lock;

pub use election::Election;
pub use keys::Keys;
pub use lease::Lease;
pub use lock::{Lock, LockGuard, UpdateTxn};

/// A blocking state store client. Cheap to clone, safe to share across threads; see the
/// [module documentation](self).
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
    /// The process the client was created in: its connection does not survive `fork`.
    pid: u32,
}

impl Client {
    /// Connects with the settings of a connection URL; see [`crate::Client::connect_url`].
    pub fn connect_url(url: &str) -> Result<Client> {
        Self::connect(ConnectOptions::from_url(url)?)
    }

    /// Connects; see [`crate::Client::connect`].
    pub fn connect(options: ConnectOptions) -> Result<Client> {
        let inner = runtime::block_on(crate::Client::connect(options))??;
        Ok(Client {
            inner,
            pid: crate::runtime::current_pid(),
        })
    }

    fn run<T>(&self, call: impl Future<Output = Result<T>>) -> Result<T> {
        runtime::ensure_created_here(self.pid, "client")?;
        runtime::block_on(call)?
    }

    /// The async client behind this one.
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// The MQTT client id.
    pub fn client_id(&self) -> &str {
        self.inner.client_id()
    }

    /// The keys matching a glob pattern in the service's dialect (`[!0-9]` negates, no
    /// backslash escape), fetched page by page as the iterator is consumed; see
    /// [`crate::Client::keys`].
    pub fn keys(&self, pattern: impl Into<Bytes>) -> Result<Keys> {
        Keys::new(self, pattern.into())
    }

    /// Every key matching `pattern`; see [`crate::Client::keys_all`].
    pub fn keys_all(&self, pattern: impl Into<Bytes>) -> Result<Vec<Bytes>> {
        self.keys(pattern)?.collect_all()
    }

    /// Whether the client has been closed.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The connection's state now; see [`crate::Client::connection_state`].
    pub fn connection_state(&self) -> ConnectionState {
        self.inner.connection_state()
    }

    /// The connection's state now, with the reason, attempt and delay of its last change.
    pub fn connection_status(&self) -> ConnectionEvent {
        self.inner.connection_status()
    }

    /// The changes of the connection's state from now on (see
    /// [`crate::Client::connection_events`]) as an iterator that ends when no change comes
    /// within `timeout` (`None`: waits as long as it takes) and after `closed`.
    pub fn connection_events(&self, timeout: Option<Duration>) -> ConnectionEventIter {
        ConnectionEventIter {
            events: self.inner.connection_events(),
            timeout,
        }
    }
}

/// The connection's changes as an iterator, from [`Client::connection_events`].
#[derive(Debug)]
pub struct ConnectionEventIter {
    events: ConnectionEvents,
    timeout: Option<Duration>,
}

impl ConnectionEventIter {
    /// The next change: `Ok(None)` if none came within `timeout` (`None`: waits as long as
    /// it takes) or the client is closed; [`Error::Runtime`] when called inside an async
    /// runtime.
    pub fn next_timeout(&mut self, timeout: Option<Duration>) -> Result<Option<ConnectionEvent>> {
        let events = &mut self.events;
        // The timer must be created inside the runtime, hence the async block.
        runtime::block_on(async move {
            match timeout {
                Some(timeout) => tokio::time::timeout(timeout, events.next())
                    .await
                    .unwrap_or(None),
                None => events.next().await,
            }
        })
    }
}

impl Iterator for ConnectionEventIter {
    type Item = ConnectionEvent;

    /// The next change within the iterator's timeout; `None` ends the iteration (no change in
    /// time, the client closed, or called inside an async runtime, which must not block).
    fn next(&mut self) -> Option<ConnectionEvent> {
        self.next_timeout(self.timeout).ok().flatten()
    }
}
