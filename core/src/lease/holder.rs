//! [`Lease`]: one key, one holder name; acquire, renew and release it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::contend::{jitter, Waiter};
use super::holding::{check_ttl, claim, Holding, Inner};
use super::keeper;
use super::state::{AcquireOutcome, LeaseState, Loss};
use crate::client::{Client, DeleteOptions};
use crate::protocol::Hlc;
use crate::{Error, Result};

/// A lease on one key of the state store, under one holder name.
///
/// Acquiring is `SET key holder NEX PX ttl`: it succeeds when the key is absent or already holds
/// our holder name, so acquiring again renews. The version the service gives the key when a holding
/// begins is the **fencing token**: write the keys the lease protects with it
/// ([`SetOptions::fencing_token`](crate::SetOptions::fencing_token)), and a holder that lost the
/// lease without noticing is refused once the next holder has written. The token stays the same
/// across renewals (a renewal landing on an expired key would otherwise hand out a newer token and
/// hide that someone else may have held the lease in between). Releasing is `VDEL key holder`: it
/// never deletes a lease someone else holds.
///
/// A holding is declared lost ([`Lease::lost`], [`Lease::state`]) the moment a renewal finds
/// another holder, or once a TTL has passed since the last successful renewal was *sent* —
/// never later than the service can expire it. With [`Lease::set_auto_renew`] a background
/// task renews at a third of the TTL, retries failed renewals with jittered backoff, and stops
/// after a release or a loss.
///
/// `Lease` is a cheap handle (clones share the holding) and `Send + Sync`. Dropping the last
/// handle while held stops renewing and releases the lease in the background
/// ([`Client::close`] gives such a release a short grace period; a release that cannot go out
/// by then leaves the key until its TTL passes, so release explicitly). Two `Lease`s
/// with the same key and holder name share the lease on the service: give each holder its
/// own name.
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::lease::Lease;
/// use statestore::{Client, ConnectOptions, SetOptions};
///
/// # async fn demo() -> statestore::Result<()> {
/// let client = Client::connect(ConnectOptions::new("localhost", 1883)).await?;
/// let lease = Lease::new(&client, "printer", "worker-1")?.auto_renew(true);
/// let token = lease.acquire(Duration::from_secs(10)).await?;
/// client.set("printer-queue", "job", SetOptions::default().fencing_token(token)).await?;
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Lease {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("key", &self.inner.key)
            .field("holder", &self.inner.holder)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

pub(super) fn current_runtime() -> Result<Handle> {
    Handle::try_current()
        .map_err(|_| Error::Runtime("leases run on tokio: call from within a tokio runtime".into()))
}

impl Lease {
    /// A lease on `key` for the holder `holder` (not acquired yet; automatic renewal off).
    ///
    /// Fails with [`Error::InvalidArgument`] if the key or the holder name is empty.
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lease = Lease::new(client, "leases/printer", "worker-1")?;
    /// assert_eq!(lease.holder_name(), "worker-1");
    /// # Ok(()) }
    /// ```
    pub fn new(client: &Client, key: impl Into<Bytes>, holder: impl Into<Bytes>) -> Result<Lease> {
        let key = key.into();
        let holder = holder.into();
        if key.is_empty() {
            return Err(Error::InvalidArgument("the lease key is empty".into()));
        }
        if holder.is_empty() {
            return Err(Error::InvalidArgument("the holder name is empty".into()));
        }
        Ok(Lease {
            inner: Arc::new(Inner::new(client, key, holder)),
        })
    }

    /// Turns automatic renewal on or off (builder form of [`Lease::set_auto_renew`]).
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lease = Lease::new(client, "leases/printer", "worker-1")?.auto_renew(true);
    /// assert!(lease.is_auto_renew());
    /// # Ok(()) }
    /// ```
    pub fn auto_renew(self, on: bool) -> Self {
        self.set_auto_renew(on);
        self
    }

    /// Turns automatic renewal on or off, now and for later holdings. While on, the lease is
    /// renewed in the background every third of its TTL; failed renewals are retried with
    /// jittered backoff until the TTL has passed since the last success, when the lease is
    /// declared lost ([`LossReason::Expired`](super::LossReason::Expired)).
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lease = Lease::new(client, "leases/printer", "worker-1")?;
    /// lease.set_auto_renew(true);
    /// # Ok(()) }
    /// ```
    pub fn set_auto_renew(&self, on: bool) {
        self.inner.auto_renew.store(on, Ordering::SeqCst);
        self.inner.settings_changed.notify_waiters();
    }

    /// Whether automatic renewal is on.
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// assert!(!Lease::new(client, "k", "me")?.is_auto_renew());
    /// # Ok(()) }
    /// ```
    pub fn is_auto_renew(&self) -> bool {
        self.inner.is_auto_renew()
    }

    /// The lease key.
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// assert_eq!(Lease::new(client, "k", "me")?.key(), "k");
    /// # Ok(()) }
    /// ```
    pub fn key(&self) -> &Bytes {
        &self.inner.key
    }

    /// This lease's holder name (the value it writes to the key).
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// assert_eq!(Lease::new(client, "k", "me")?.holder_name(), "me");
    /// # Ok(()) }
    /// ```
    pub fn holder_name(&self) -> &Bytes {
        &self.inner.holder
    }

    /// The client the lease uses.
    ///
    /// ```no_run
    /// # use statestore::{Client, lease::Lease};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let lease = Lease::new(client, "k", "me")?;
    /// assert_eq!(lease.client().client_id(), client.client_id());
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// One attempt to acquire the lease for `ttl`: the fencing token, or who holds it.
    ///
    /// If this lease already holds it, the attempt renews it and returns the same token. If this
    /// lease believed it held the key but finds another holder, its holding is lost
    /// ([`LossReason::TakenOver`](super::LossReason::TakenOver)). Errors are those of
    /// [`Client::set`]; after one whose outcome is unknown, trying again is safe (the SET only
    /// applies to an absent key or one holding our name). An attempt cut short (this future
    /// dropped, or [`Client::close`] called) while its SET is in flight is undone in the
    /// background with `VDEL key holder`, as [`Lease::acquire`]'s are.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::{AcquireOutcome, Lease};
    /// # async fn demo(lease: Lease) -> statestore::Result<()> {
    /// match lease.try_acquire(Duration::from_secs(5)).await? {
    ///     AcquireOutcome::Acquired { token } => println!("mine, token {token}"),
    ///     AcquireOutcome::HeldBy { holder } => println!("held by {holder:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self, ttl: Duration) -> Result<AcquireOutcome> {
        check_ttl(ttl)?;
        attempt(self, ttl, None, self.attempt_once(ttl)).await
    }

    /// One SET of the key with our holder name; see [`Lease::try_acquire`].
    async fn attempt_once(&self, ttl: Duration) -> Result<AcquireOutcome> {
        let runtime = current_runtime()?;
        let inner = &self.inner;
        let _requests = inner.requests.lock().await;
        let sent = Instant::now();
        let set = inner
            .client
            .set(inner.key.clone(), inner.holder.clone(), claim(ttl))
            .await
            .inspect_err(|error| inner.lose_on_closed(None, error))?;
        if !set.applied {
            let holder = inner.lose_to_another(None, None).await;
            return Ok(AcquireOutcome::HeldBy { holder });
        }
        let version = set.version.ok_or_else(|| {
            Error::UnexpectedPayload(
                "the state store sent no version (__ts) for the lease key, so there is no \
                 fencing token"
                    .into(),
            )
        })?;
        let token = self.hold(version, ttl, sent, runtime);
        Ok(AcquireOutcome::Acquired { token })
    }

    /// Acquires the lease for `ttl`, waiting as long as it takes; returns the fencing token.
    ///
    /// While another holder has it, this observes the key (no polling) and tries again after
    /// it is deleted or should have expired; see the [module documentation](super) for the
    /// delays. Use [`Lease::acquire_timeout`] to bound the wait (dropping this future, or
    /// [`Client::close`], also stops it: an attempt cut short, whose SET may have applied, is
    /// undone in the background with `VDEL key holder`).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) -> statestore::Result<()> {
    /// let token = lease.acquire(Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, ttl: Duration) -> Result<Hlc> {
        acquire(self, ttl, None).await
    }

    /// Like [`Lease::acquire`], but fails with [`Error::Timeout`] if the lease was not
    /// acquired within `timeout`.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) -> statestore::Result<()> {
    /// let token = lease.acquire_timeout(Duration::from_secs(5), Duration::from_secs(30)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, ttl: Duration, timeout: Duration) -> Result<Hlc> {
        acquire(self, ttl, Some(timeout)).await
    }

    /// Renews the held lease for its TTL (the fencing token does not change).
    ///
    /// Fails with [`Error::NotHeld`] if the lease is not held, or if the renewal finds another
    /// holder (the lease is then lost: [`LossReason::TakenOver`](super::LossReason::TakenOver)).
    /// Other errors leave the lease held until its TTL runs out; renewing again is safe.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) -> statestore::Result<()> {
    /// lease.acquire(Duration::from_secs(5)).await?;
    /// lease.renew().await?;
    /// # Ok(()) }
    /// ```
    pub async fn renew(&self) -> Result<()> {
        self.inner.renew(None).await
    }

    /// Releases the lease: stops renewing, then `VDEL key holder`. Returns whether the key
    /// was ours and was deleted. Never deletes a lease another holder has. Afterwards the
    /// state is [`LeaseState::NotHeld`].
    ///
    /// ```no_run
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) -> statestore::Result<()> {
    /// let deleted = lease.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(&self) -> Result<bool> {
        let inner = &self.inner;
        // Cleared under the lock: an acquisition in flight finishes first, and its holding
        // ends here, before the VDEL deletes the key it wrote.
        let _requests = inner.requests.lock().await;
        inner.clear();
        let result = inner
            .client
            .vdel(
                inner.key.clone(),
                inner.holder.clone(),
                DeleteOptions::default(),
            )
            .await?;
        Ok(result.deleted())
    }

    /// The key's current holder, read from the service (`None`: nobody holds it).
    ///
    /// ```no_run
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) -> statestore::Result<()> {
    /// if let Some(holder) = lease.holder().await? {
    ///     println!("held by {}", String::from_utf8_lossy(&holder));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn holder(&self) -> Result<Option<Bytes>> {
        Ok(self
            .inner
            .client
            .get(self.inner.key.clone())
            .await?
            .map(|v| v.value))
    }

    /// The fencing token while the lease is held.
    ///
    /// ```no_run
    /// # use statestore::lease::Lease;
    /// # fn demo(lease: Lease) {
    /// if let Some(token) = lease.fencing_token() {
    ///     println!("writes carry {token}");
    /// }
    /// # }
    /// ```
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.state().fencing_token().cloned()
    }

    /// The lease's state now.
    ///
    /// ```no_run
    /// # use statestore::lease::{Lease, LeaseState};
    /// # fn demo(lease: Lease) {
    /// if let LeaseState::Lost(loss) = lease.state() {
    ///     println!("lost: {loss}");
    /// }
    /// # }
    /// ```
    pub fn state(&self) -> LeaseState {
        self.inner.state.borrow().clone()
    }

    /// Whether the lease is held.
    ///
    /// ```no_run
    /// # use statestore::lease::Lease;
    /// # fn demo(lease: Lease) { assert!(!lease.is_held()); }
    /// ```
    pub fn is_held(&self) -> bool {
        self.inner.state.borrow().is_held()
    }

    /// Waits until the lease is not held: `Some(loss)` if it was lost, `None` if it was
    /// released (or never held). Returns at once when it is not held now.
    ///
    /// ```no_run
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) {
    /// if let Some(loss) = lease.lost().await {
    ///     eprintln!("lease lost: {loss}");
    /// }
    /// # }
    /// ```
    pub async fn lost(&self) -> Option<Loss> {
        let mut states = self.inner.state.subscribe();
        let state = states.wait_for(|state| !state.is_held()).await;
        // The sender lives as long as `self`: the wait cannot fail.
        state.ok().and_then(|state| state.loss().cloned())
    }

    /// A watch of the lease's state, to await every change.
    ///
    /// ```no_run
    /// # use statestore::lease::Lease;
    /// # async fn demo(lease: Lease) {
    /// let mut states = lease.watch();
    /// while let Some(state) = states.changed().await {
    ///     println!("now {state:?}");
    /// }
    /// # }
    /// ```
    pub fn watch(&self) -> LeaseWatch {
        LeaseWatch {
            states: self.inner.state.subscribe(),
        }
    }

    /// After an acquisition attempt was cut short: its SET may have applied unseen.
    fn abandon_attempt(&self, ttl: Duration) {
        if self.is_held() {
            return;
        }
        let inner = self.inner.clone();
        self.inner
            .client
            .spawn_cleanup(async move { inner.delete_if_not_held(ttl).await });
    }

    /// Starts a holding with `version` as its token, or extends the current one.
    fn hold(&self, version: Hlc, ttl: Duration, sent: Instant, runtime: Handle) -> Hlc {
        let inner = &self.inner;
        let mut holding = inner.holding();
        if let Some(current) = holding.as_mut() {
            current.ttl = ttl;
            current.deadline = current.deadline.max(sent + ttl);
            return current.token.clone();
        }
        let generation = inner.generations.fetch_add(1, Ordering::SeqCst);
        let stop = CancellationToken::new();
        *holding = Some(Holding {
            generation,
            token: version.clone(),
            ttl,
            deadline: sent + ttl,
            stop: stop.clone(),
        });
        inner.state.send_replace(LeaseState::Held {
            token: version.clone(),
        });
        drop(holding);
        runtime.spawn(keeper::keep(Arc::downgrade(inner), generation, stop));
        version
    }
}

/// Acquires `lease` for `ttl`, waiting at most `timeout` (without limit if `None`).
async fn acquire(lease: &Lease, ttl: Duration, timeout: Option<Duration>) -> Result<Hlc> {
    check_ttl(ttl)?;
    attempt(lease, ttl, timeout, contend(lease, ttl)).await
}

/// Runs `acquisition` of `lease` until it ends, `timeout` passes or the client begins to
/// close. Cut short (by the timeout, by close, or by dropping this future, as `statestore lock`
/// does on SIGINT), an attempt may have taken the key: the guard gives it back, and close
/// waits for that while the connection is still up.
async fn attempt<T>(
    lease: &Lease,
    ttl: Duration,
    timeout: Option<Duration>,
    acquisition: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    // Dropped after `cut_short`: close waits until the undoing is under way.
    let (_tracked, closing) = lease.client().track_acquisition();
    if closing.is_cancelled() {
        return Err(Error::Closed);
    }
    let mut cut_short = CutShort {
        lease,
        ttl,
        armed: true,
    };
    let bounded = async {
        match timeout {
            None => Ok(acquisition.await),
            Some(timeout) => tokio::time::timeout(timeout, acquisition)
                .await
                .map_err(|_| Error::Timeout(timeout)),
        }
    };
    let result = tokio::select! {
        biased;
        () = closing.cancelled() => Err(Error::Closed),
        result = bounded => result,
    };
    // Cut short: the guard stays armed.
    let finished = result?;
    // Finished: acquired, or failed with no attempt in flight.
    cut_short.armed = false;
    finished
}

/// Gives the key back ([`Lease::abandon_attempt`]) when dropped armed.
struct CutShort<'a> {
    lease: &'a Lease,
    ttl: Duration,
    armed: bool,
}

impl Drop for CutShort<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.lease.abandon_attempt(self.ttl);
        }
    }
}

async fn contend(lease: &Lease, ttl: Duration) -> Result<Hlc> {
    let mut waiter: Option<Waiter> = None;
    let mut unknown_outcomes = 0u32;
    loop {
        match lease.try_acquire(ttl).await {
            Ok(AcquireOutcome::Acquired { token }) => return Ok(token),
            Ok(AcquireOutcome::HeldBy { .. }) => {}
            Err(error) if error.outcome_unknown() => {
                // Repeating is safe (the SET only applies to an absent key or our own), but
                // not at once: the connection is probably down.
                unknown_outcomes += 1;
                tracing::debug!(%error, "lease acquisition attempt failed: retrying");
                tokio::time::sleep(jitter(ttl, unknown_outcomes)).await;
                continue;
            }
            Err(error) => return Err(error),
        }
        match waiter.as_mut() {
            Some(waiter) => {
                let delay = waiter.next_chance().await?;
                tokio::time::sleep(delay).await;
            }
            // Try once more right after starting to observe: a delete that happened between
            // the failed attempt and the registration would never be notified.
            None => waiter = Some(Waiter::start(lease.client(), lease.key().clone(), ttl).await?),
        }
    }
}

/// The state changes of a [`Lease`], from [`Lease::watch`].
#[derive(Debug, Clone)]
pub struct LeaseWatch {
    states: watch::Receiver<LeaseState>,
}

impl LeaseWatch {
    /// The state now.
    pub fn current(&self) -> LeaseState {
        self.states.borrow().clone()
    }

    /// Whether the state changed since the watch began or [`LeaseWatch::changed`] last
    /// returned.
    pub fn has_changed(&self) -> bool {
        self.states.has_changed().unwrap_or(false)
    }

    /// Waits for the next change and returns the new state; `None` once every handle of the
    /// lease is gone.
    pub async fn changed(&mut self) -> Option<LeaseState> {
        self.states.changed().await.ok()?;
        Some(self.states.borrow_and_update().clone())
    }
}
