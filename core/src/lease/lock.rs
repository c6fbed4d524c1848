//! [`Lock`]: mutual exclusion on a named key, held through a [`LockGuard`].

use std::time::Duration;

use bytes::Bytes;

use super::holder::Lease;
use super::holding::check_ttl;
use super::state::{AcquireOutcome, LeaseState, Loss};
use crate::client::Client;
use crate::protocol::Hlc;
use crate::{Error, Result};

/// A distributed lock: a named key that one holder at a time owns for a TTL.
///
/// [`Lock::lock`] waits until the lock is acquired (observing the key, never polling) and
/// returns a [`LockGuard`] with the fencing token; the guard releases the lock when dropped
/// or [released](LockGuard::release) and, by default, renews it in the background while held.
/// [`Lock::update`] is the whole acquire-read-write-release cycle for one key.
///
/// Each acquisition uses a holder name of its own (the client id and a random suffix), so two
/// guards never share the lock, even within one client. A `Lock` is a cheap description
/// (clone it freely); it holds nothing itself.
///
/// A key written with the fencing token stays fenced after the lock is released or lost:
/// writes and deletes without a token at least as new fail with
/// [`ServiceError::FencingTokenRequired`](crate::ServiceError::FencingTokenRequired). Clean up
/// such a key by deleting it with its current version as the token
/// ([`DeleteOptions::fencing_token`](crate::DeleteOptions::fencing_token)).
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::lease::Lock;
/// use statestore::{Client, ConnectOptions, SetOptions};
///
/// # async fn demo() -> statestore::Result<()> {
/// let client = Client::connect(ConnectOptions::new("localhost", 1883)).await?;
/// let lock = Lock::new(&client, "locks/report", Duration::from_secs(10))?
///     .timeout(Duration::from_secs(30));
/// let guard = lock.lock().await?;
/// client
///     .set("report", "done", SetOptions::default().fencing_token(guard.fencing_token().clone()))
///     .await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    client: Client,
    name: Bytes,
    ttl: Duration,
    timeout: Option<Duration>,
    auto_renew: bool,
}

impl Lock {
    /// A lock on the key `name`, held for `ttl` at a time (renewed by the guard). By default
    /// [`Lock::lock`] waits without limit and guards renew automatically.
    ///
    /// Fails with [`Error::InvalidArgument`] if the name is empty or the TTL is under 1 ms.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::{Client, lease::Lock};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lock = Lock::new(client, "locks/report", Duration::from_secs(10))?;
    /// # Ok(()) }
    /// ```
    pub fn new(client: &Client, name: impl Into<Bytes>, ttl: Duration) -> Result<Lock> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::InvalidArgument("the lock name is empty".into()));
        }
        check_ttl(ttl)?;
        Ok(Lock {
            client: client.clone(),
            name,
            ttl,
            timeout: None,
            auto_renew: true,
        })
    }

    /// How long [`Lock::lock`] (and [`Lock::update`]) wait for the lock before failing with
    /// [`Error::Timeout`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::Lock;
    /// # fn demo(lock: Lock) {
    /// let lock = lock.timeout(Duration::from_secs(30));
    /// # }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether guards renew the lock in the background while held (default: yes). Without
    /// renewal a guard holds the lock for one TTL, or longer with [`LockGuard::renew`].
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # fn demo(lock: Lock) {
    /// let lock = lock.auto_renew(false);
    /// # }
    /// ```
    pub fn auto_renew(mut self, on: bool) -> Self {
        self.auto_renew = on;
        self
    }

    /// The lock's key.
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # fn demo(lock: Lock) { println!("{:?}", lock.name()); }
    /// ```
    pub fn name(&self) -> &Bytes {
        &self.name
    }

    /// The TTL of each holding.
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # fn demo(lock: Lock) { println!("{:?}", lock.ttl()); }
    /// ```
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The client the lock uses.
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # fn demo(lock: Lock) { println!("{}", lock.client().client_id()); }
    /// ```
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Acquires the lock, waiting until it is free (at most the [timeout](Lock::timeout)).
    ///
    /// While it is held, the key is observed; after a delete, contenders wait a random delay
    /// (and a grace period when the delete looks like an expiry, which lets the previous
    /// holder's late renewal win); see the [module documentation](super).
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # async fn demo(lock: Lock) -> statestore::Result<()> {
    /// let guard = lock.lock().await?;
    /// println!("token {}", guard.fencing_token());
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self) -> Result<LockGuard> {
        super::reentry::check(self.client.client_id(), &self.name)?;
        let lease = self.lease()?;
        let token = match self.timeout {
            Some(timeout) => lease.acquire_timeout(self.ttl, timeout).await?,
            None => lease.acquire(self.ttl).await?,
        };
        Ok(LockGuard { lease, token })
    }

    /// One attempt: the guard, or `None` if another holder has the lock.
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # async fn demo(lock: Lock) -> statestore::Result<()> {
    /// match lock.try_lock().await? {
    ///     Some(guard) => guard.release().await?,
    ///     None => println!("busy"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self) -> Result<Option<LockGuard>> {
        let lease = self.lease()?;
        match lease.try_acquire(self.ttl).await? {
            AcquireOutcome::Acquired { token } => Ok(Some(LockGuard { lease, token })),
            AcquireOutcome::HeldBy { .. } => Ok(None),
        }
    }

    /// The lock's current holder name, read from the service (`None`: free).
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # async fn demo(lock: Lock) -> statestore::Result<()> {
    /// println!("held by {:?}", lock.holder().await?);
    /// # Ok(()) }
    /// ```
    pub async fn holder(&self) -> Result<Option<Bytes>> {
        Ok(self.client.get(self.name.clone()).await?.map(|v| v.value))
    }

    fn lease(&self) -> Result<Lease> {
        let holder = format!("{}#{:016x}", self.client.client_id(), fastrand::u64(..));
        Ok(Lease::new(&self.client, self.name.clone(), holder)?.auto_renew(self.auto_renew))
    }
}

/// A held [`Lock`]. Dropping it releases the lock in the background; [`LockGuard::release`]
/// releases it and waits for the answer. Prefer releasing explicitly: a background release
/// gets only a short grace period from [`Client::close`](crate::Client::close), and a lock
/// whose release does not go out stays taken until its TTL passes.
///
/// Protect writes with [`LockGuard::fencing_token`]. The lock can be lost while the guard
/// lives (renewals failing for a whole TTL, the client closed): check
/// [`LockGuard::is_held`] or await [`LockGuard::lost`].
#[derive(Debug)]
pub struct LockGuard {
    lease: Lease,
    token: Hlc,
}

impl LockGuard {
    /// The fencing token of this holding.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # use statestore::{Client, SetOptions};
    /// # async fn demo(client: Client, guard: LockGuard) -> statestore::Result<()> {
    /// let options = SetOptions::default().fencing_token(guard.fencing_token().clone());
    /// client.set("protected", "value", options).await?;
    /// # Ok(()) }
    /// ```
    pub fn fencing_token(&self) -> &Hlc {
        &self.token
    }

    /// The holder name written to the lock's key.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{:?}", guard.holder_name()); }
    /// ```
    pub fn holder_name(&self) -> &Bytes {
        self.lease.holder_name()
    }

    /// The lock's key.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{:?}", guard.name()); }
    /// ```
    pub fn name(&self) -> &Bytes {
        self.lease.key()
    }

    /// The holding's state.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{:?}", guard.state()); }
    /// ```
    pub fn state(&self) -> LeaseState {
        self.lease.state()
    }

    /// Whether the lock is still held.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # fn demo(guard: LockGuard) { assert!(guard.is_held()); }
    /// ```
    pub fn is_held(&self) -> bool {
        self.lease.is_held()
    }

    /// Waits until the lock is lost; `None` if it was released instead.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # async fn demo(guard: LockGuard) {
    /// tokio::select! {
    ///     loss = guard.lost() => eprintln!("lock lost: {loss:?}"),
    ///     () = async { /* the work the lock protects */ } => {}
    /// }
    /// # }
    /// ```
    pub async fn lost(&self) -> Option<Loss> {
        self.lease.lost().await
    }

    /// Renews the lock now (only needed without automatic renewal); see [`Lease::renew`].
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # async fn demo(guard: LockGuard) -> statestore::Result<()> {
    /// guard.renew().await?;
    /// # Ok(()) }
    /// ```
    pub async fn renew(&self) -> Result<()> {
        self.lease.renew().await
    }

    /// Releases the lock (VDEL with this guard's holder name) and waits for the answer.
    ///
    /// ```no_run
    /// # use statestore::lease::LockGuard;
    /// # async fn demo(guard: LockGuard) -> statestore::Result<()> {
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<()> {
        self.lease.release().await.map(|_| ())
    }

    /// The lease behind the guard (its state, its loss signal).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Fails with [`Error::NotHeld`] unless the lock is held.
    pub(super) fn ensure_held(&self) -> Result<()> {
        match self.lease.state() {
            LeaseState::Held { .. } => Ok(()),
            LeaseState::Lost(loss) => Err(Error::NotHeld(format!("the lock was lost: {loss}"))),
            LeaseState::NotHeld => Err(Error::NotHeld("the lock was released".into())),
        }
    }
}
