//! The blocking [`Lease`]: the same operations as [`crate::lease::Lease`], for plain threads.

use std::time::Duration;

use bytes::Bytes;

use super::Client;
use crate::lease::{AcquireOutcome, LeaseState, Loss};
use crate::protocol::Hlc;
use crate::Result;

/// A lease on one key under one holder name, for plain threads; see
/// [`crate::lease::Lease`] for the semantics. Background renewal runs on the library's
/// internal runtime. Cheap to clone, `Send + Sync`.
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::blocking::{Client, Lease};
/// use statestore::{ConnectOptions, SetOptions};
///
/// let client = Client::connect(ConnectOptions::new("localhost", 1883))?;
/// let lease = Lease::new(&client, "printer", "worker-1")?.auto_renew(true);
/// let token = lease.acquire(Duration::from_secs(10))?;
/// client.set("printer-queue", "job", SetOptions::default().fencing_token(token))?;
/// lease.release()?;
/// # Ok::<(), statestore::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Lease {
    lease: crate::lease::Lease,
    client: Client,
}

impl Lease {
    /// A lease on `key` for `holder`; see [`crate::lease::Lease::new`].
    ///
    /// ```no_run
    /// # use statestore::blocking::{Client, Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lease = Lease::new(client, "printer", "worker-1")?;
    /// # Ok(()) }
    /// ```
    pub fn new(client: &Client, key: impl Into<Bytes>, holder: impl Into<Bytes>) -> Result<Lease> {
        Ok(Lease {
            lease: crate::lease::Lease::new(client.as_async(), key, holder)?,
            client: client.clone(),
        })
    }

    /// Turns automatic renewal on or off; see [`crate::lease::Lease::set_auto_renew`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { let lease = lease.auto_renew(true); }
    /// ```
    pub fn auto_renew(self, on: bool) -> Self {
        self.set_auto_renew(on);
        self
    }

    /// Turns automatic renewal on or off; see [`crate::lease::Lease::set_auto_renew`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { lease.set_auto_renew(false); }
    /// ```
    pub fn set_auto_renew(&self, on: bool) {
        self.lease.set_auto_renew(on);
    }

    /// Whether automatic renewal is on.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{}", lease.is_auto_renew()); }
    /// ```
    pub fn is_auto_renew(&self) -> bool {
        self.lease.is_auto_renew()
    }

    /// The async lease behind this one.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{:?}", lease.as_async().state()); }
    /// ```
    pub fn as_async(&self) -> &crate::lease::Lease {
        &self.lease
    }

    /// The lease key.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{:?}", lease.key()); }
    /// ```
    pub fn key(&self) -> &Bytes {
        self.lease.key()
    }

    /// This lease's holder name.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{:?}", lease.holder_name()); }
    /// ```
    pub fn holder_name(&self) -> &Bytes {
        self.lease.holder_name()
    }

    /// One attempt to acquire; see [`crate::lease::Lease::try_acquire`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// let outcome = lease.try_acquire(Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn try_acquire(&self, ttl: Duration) -> Result<AcquireOutcome> {
        self.client.run(self.lease.try_acquire(ttl))
    }

    /// Acquires, waiting as long as it takes; see [`crate::lease::Lease::acquire`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// let token = lease.acquire(Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn acquire(&self, ttl: Duration) -> Result<Hlc> {
        self.client.run(self.lease.acquire(ttl))
    }

    /// Acquires, waiting at most `timeout`; see [`crate::lease::Lease::acquire_timeout`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// let token = lease.acquire_timeout(Duration::from_secs(5), Duration::from_secs(30))?;
    /// # Ok(()) }
    /// ```
    pub fn acquire_timeout(&self, ttl: Duration, timeout: Duration) -> Result<Hlc> {
        self.client.run(self.lease.acquire_timeout(ttl, timeout))
    }

    /// Renews the held lease; see [`crate::lease::Lease::renew`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// lease.renew()?;
    /// # Ok(()) }
    /// ```
    pub fn renew(&self) -> Result<()> {
        self.client.run(self.lease.renew())
    }

    /// Releases the lease; see [`crate::lease::Lease::release`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// lease.release()?;
    /// # Ok(()) }
    /// ```
    pub fn release(&self) -> Result<bool> {
        self.client.run(self.lease.release())
    }

    /// The key's current holder; see [`crate::lease::Lease::holder`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// println!("{:?}", lease.holder()?);
    /// # Ok(()) }
    /// ```
    pub fn holder(&self) -> Result<Option<Bytes>> {
        self.client.run(self.lease.holder())
    }

    /// The fencing token while held.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{:?}", lease.fencing_token()); }
    /// ```
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.lease.fencing_token()
    }

    /// The lease's state now.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{:?}", lease.state()); }
    /// ```
    pub fn state(&self) -> LeaseState {
        self.lease.state()
    }

    /// Whether the lease is held.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) { println!("{}", lease.is_held()); }
    /// ```
    pub fn is_held(&self) -> bool {
        self.lease.is_held()
    }

    /// Blocks until the lease is not held; see [`crate::lease::Lease::lost`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lease;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// if let Some(loss) = lease.lost()? {
    ///     eprintln!("lost: {loss}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> Result<Option<Loss>> {
        lost(&self.client, &self.lease)
    }

    /// Blocks until the lease is not held or `timeout` passed; returns the state then
    /// ([`LeaseState::Held`] if the timeout passed first).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Lease;
    /// # use statestore::lease::LeaseState;
    /// # fn demo(lease: Lease) -> statestore::Result<()> {
    /// if let LeaseState::Lost(loss) = lease.lost_timeout(Duration::from_secs(1))? {
    ///     eprintln!("lost: {loss}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lost_timeout(&self, timeout: Duration) -> Result<LeaseState> {
        lost_timeout(&self.client, &self.lease, timeout)
    }
}

/// Blocks until `lease` is not held.
pub(super) fn lost(client: &Client, lease: &crate::lease::Lease) -> Result<Option<Loss>> {
    client.run(async { Ok(lease.lost().await) })
}

/// Blocks until `lease` is not held or `timeout` passed; the state then.
pub(super) fn lost_timeout(
    client: &Client,
    lease: &crate::lease::Lease,
    timeout: Duration,
) -> Result<LeaseState> {
    client.run(async {
        // The timer must be created inside the runtime, hence inside this block.
        let _ = tokio::time::timeout(timeout, lease.lost()).await;
        Ok(lease.state())
    })
}
