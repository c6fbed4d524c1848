//! The blocking [`Lock`] and [`LockGuard`]: the same operations as [`crate::lease::Lock`],
//! for plain threads.

use std::time::Duration;

use bytes::Bytes;

use super::Client;
use crate::lease::{LeaseState, Loss};
use crate::protocol::Hlc;
use crate::Result;

/// A distributed lock for plain threads; see [`crate::lease::Lock`] for the semantics.
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::blocking::{Client, Lock};
/// use statestore::ConnectOptions;
///
/// let client = Client::connect(ConnectOptions::new("localhost", 1883))?;
/// let lock = Lock::new(&client, "locks/report", Duration::from_secs(10))?;
/// let guard = lock.lock()?;
/// println!("token {}", guard.fencing_token());
/// guard.release()?;
/// # Ok::<(), statestore::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    lock: crate::lease::Lock,
    client: Client,
}

impl Lock {
    /// A lock on the key `name`; see [`crate::lease::Lock::new`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::{Client, Lock};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lock = Lock::new(client, "locks/report", Duration::from_secs(10))?;
    /// # Ok(()) }
    /// ```
    pub fn new(client: &Client, name: impl Into<Bytes>, ttl: Duration) -> Result<Lock> {
        Ok(Lock {
            lock: crate::lease::Lock::new(client.as_async(), name, ttl)?,
            client: client.clone(),
        })
    }

    /// How long [`Lock::lock`] waits; see [`crate::lease::Lock::timeout`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) { let lock = lock.timeout(Duration::from_secs(30)); }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.lock = self.lock.timeout(timeout);
        self
    }

    /// Whether guards renew automatically; see [`crate::lease::Lock::auto_renew`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) { let lock = lock.auto_renew(false); }
    /// ```
    pub fn auto_renew(mut self, on: bool) -> Self {
        self.lock = self.lock.auto_renew(on);
        self
    }

    /// The async lock behind this one.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) { println!("{:?}", lock.as_async().ttl()); }
    /// ```
    pub fn as_async(&self) -> &crate::lease::Lock {
        &self.lock
    }

    /// The lock's key.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) { println!("{:?}", lock.name()); }
    /// ```
    pub fn name(&self) -> &Bytes {
        self.lock.name()
    }

    /// The TTL of each holding.
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) { println!("{:?}", lock.ttl()); }
    /// ```
    pub fn ttl(&self) -> Duration {
        self.lock.ttl()
    }

    /// Acquires the lock, waiting; see [`crate::lease::Lock::lock`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) -> statestore::Result<()> {
    /// let guard = lock.lock()?;
    /// # Ok(()) }
    /// ```
    pub fn lock(&self) -> Result<LockGuard> {
        let guard = self.client.run(self.lock.lock())?;
        Ok(self.guard(guard))
    }

    /// One attempt; see [`crate::lease::Lock::try_lock`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) -> statestore::Result<()> {
    /// if let Some(guard) = lock.try_lock()? {
    ///     guard.release()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_lock(&self) -> Result<Option<LockGuard>> {
        let guard = self.client.run(self.lock.try_lock())?;
        Ok(guard.map(|guard| self.guard(guard)))
    }

    /// The lock's current holder; see [`crate::lease::Lock::holder`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) -> statestore::Result<()> {
    /// println!("{:?}", lock.holder()?);
    /// # Ok(()) }
    /// ```
    pub fn holder(&self) -> Result<Option<Bytes>> {
        self.client.run(self.lock.holder())
    }

    /// Acquire, read `key`, write `f(old)` with the fencing token, release; see
    /// [`crate::lease::Lock::update`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) -> statestore::Result<()> {
    /// lock.update("greeting", |_old| Some("hello".into()))?;
    /// # Ok(()) }
    /// ```
    pub fn update<F>(&self, key: impl Into<Bytes>, f: F) -> Result<Option<Bytes>>
    where
        F: FnOnce(Option<Bytes>) -> Option<Bytes>,
    {
        self.client.run(self.lock.update(key, f))
    }

    /// Acquires the lock and reads `key`: the first half of [`Lock::update`], for callers
    /// that cannot pass a closure; see [`crate::lease::Lock::begin_update`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Lock;
    /// # fn demo(lock: Lock) -> statestore::Result<()> {
    /// let txn = lock.begin_update("greeting")?;
    /// let new = txn.old_value().is_none().then(|| "hello".into());
    /// txn.commit(new)?;
    /// # Ok(()) }
    /// ```
    pub fn begin_update(&self, key: impl Into<Bytes>) -> Result<UpdateTxn> {
        Ok(UpdateTxn {
            txn: self.client.run(self.lock.begin_update(key))?,
            client: self.client.clone(),
        })
    }

    fn guard(&self, guard: crate::lease::LockGuard) -> LockGuard {
        LockGuard {
            guard,
            client: self.client.clone(),
        }
    }
}

/// A [`Lock::begin_update`] in progress; see [`crate::lease::UpdateTxn`].
#[derive(Debug)]
pub struct UpdateTxn {
    txn: crate::lease::UpdateTxn,
    client: Client,
}

impl UpdateTxn {
    /// The key being updated.
    pub fn key(&self) -> &Bytes {
        self.txn.key()
    }

    /// The key's value when the lock was taken (`None`: absent).
    pub fn old_value(&self) -> Option<&Bytes> {
        self.txn.old_value()
    }

    /// The fencing token the write will carry.
    pub fn fencing_token(&self) -> &Hlc {
        self.txn.fencing_token()
    }

    /// Writes `new_value` fenced (`None`: delete), releases the lock; see
    /// [`crate::lease::UpdateTxn::commit`].
    pub fn commit(self, new_value: Option<Bytes>) -> Result<Option<Bytes>> {
        self.client.run(self.txn.commit(new_value))
    }

    /// Releases the lock without writing.
    pub fn abort(self) -> Result<()> {
        self.client.run(self.txn.abort())
    }
}

/// A held [`Lock`]; dropping it releases the lock in the background. See
/// [`crate::lease::LockGuard`].
#[derive(Debug)]
pub struct LockGuard {
    guard: crate::lease::LockGuard,
    client: Client,
}

impl LockGuard {
    /// The fencing token of this holding.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{}", guard.fencing_token()); }
    /// ```
    pub fn fencing_token(&self) -> &Hlc {
        self.guard.fencing_token()
    }

    /// The holder name written to the lock's key.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{:?}", guard.holder_name()); }
    /// ```
    pub fn holder_name(&self) -> &Bytes {
        self.guard.holder_name()
    }

    /// The lock's key.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{:?}", guard.name()); }
    /// ```
    pub fn name(&self) -> &Bytes {
        self.guard.name()
    }

    /// The holding's state.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{:?}", guard.state()); }
    /// ```
    pub fn state(&self) -> LeaseState {
        self.guard.state()
    }

    /// Whether the lock is still held.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) { println!("{}", guard.is_held()); }
    /// ```
    pub fn is_held(&self) -> bool {
        self.guard.is_held()
    }

    /// Blocks until the lock is lost; `None` if released instead.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) -> statestore::Result<()> {
    /// if let Some(loss) = guard.lost()? {
    ///     eprintln!("lost: {loss}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> Result<Option<Loss>> {
        super::lease::lost(&self.client, self.guard.lease())
    }

    /// Blocks until the lock is lost or `timeout` passed; returns the state then
    /// ([`LeaseState::Held`] if the timeout passed first).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) -> statestore::Result<()> {
    /// println!("{:?}", guard.lost_timeout(Duration::from_millis(100))?);
    /// # Ok(()) }
    /// ```
    pub fn lost_timeout(&self, timeout: Duration) -> Result<LeaseState> {
        super::lease::lost_timeout(&self.client, self.guard.lease(), timeout)
    }

    /// Renews the lock now; see [`crate::lease::LockGuard::renew`].
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) -> statestore::Result<()> {
    /// guard.renew()?;
    /// # Ok(()) }
    /// ```
    pub fn renew(&self) -> Result<()> {
        self.client.run(self.guard.renew())
    }

    /// Releases the lock and waits for the answer.
    ///
    /// ```no_run
    /// # use statestore::blocking::LockGuard;
    /// # fn demo(guard: LockGuard) -> statestore::Result<()> {
    /// guard.release()?;
    /// # Ok(()) }
    /// ```
    pub fn release(self) -> Result<()> {
        let LockGuard { guard, client } = self;
        client.run(guard.release())
    }
}
