//! The blocking client: the same operations as [`crate::Client`], for code without an async
//! runtime (and for the C, Python and Node bindings).
//!
//! Each call runs the async client on the library's internal runtime ([`crate::runtime`]).
//! A call made from inside an async runtime fails with [`Error::Runtime`](crate::Error::Runtime)
//! instead of blocking (or panicking). After `fork`, a client created in the parent fails with
//! [`Error::Runtime`](crate::Error::Runtime) in the child; clients created in the child work
//! (the child gets its own runtime).
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

use crate::client::{
    ConnectOptions, DeleteOptions, DeleteResult, Observation, SetOptions, SetResult, Value,
};
use crate::{runtime, Result};

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

    /// Sets `key` to `value`; see [`crate::Client::set`].
    pub fn set(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        options: SetOptions,
    ) -> Result<SetResult> {
        self.run(self.inner.set(key, value, options))
    }

    /// Reads `key`; see [`crate::Client::get`].
    pub fn get(&self, key: impl Into<Bytes>) -> Result<Option<Value>> {
        self.run(self.inner.get(key))
    }

    /// Reads `key` with its own timeout; see [`crate::Client::get_with_timeout`].
    pub fn get_with_timeout(
        &self,
        key: impl Into<Bytes>,
        timeout: Option<Duration>,
    ) -> Result<Option<Value>> {
        self.run(self.inner.get_with_timeout(key, timeout))
    }

    /// Deletes `key`; see [`crate::Client::delete`].
    pub fn delete(&self, key: impl Into<Bytes>, options: DeleteOptions) -> Result<DeleteResult> {
        self.run(self.inner.delete(key, options))
    }

    /// Deletes `key` if it holds `value`; see [`crate::Client::vdel`].
    pub fn vdel(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        options: DeleteOptions,
    ) -> Result<DeleteResult> {
        self.run(self.inner.vdel(key, value, options))
    }

    /// Observes `key`; consume the observation with [`Observation::next_timeout`].
    pub fn observe(&self, key: impl Into<Bytes>) -> Result<Observation> {
        self.run(self.inner.observe(key))
    }

    /// Ends the observations of `key`; see [`crate::Client::unobserve`].
    pub fn unobserve(&self, key: impl Into<Bytes>) -> Result<()> {
        self.run(self.inner.unobserve(key))
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

    /// Closes the client; see [`crate::Client::close`].
    pub fn close(&self) -> Result<()> {
        self.run(self.inner.close())
    }

    /// Whether the client has been closed.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
