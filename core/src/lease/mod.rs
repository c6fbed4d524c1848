//! Leases, locks and leader election on the state store.
//!
//! All three rest on the protocol's lock pattern: `SET key holder NEX PX ttl` acquires (and,
//! repeated, renews) a key for a holder name, the version the service returns is the
//! **fencing token**, and `VDEL key holder` releases it without ever deleting another
//! holder's key.
//!
//! - [`Lease`]: one key, one holder name. [`try_acquire`](Lease::try_acquire) (one attempt:
//!   [`AcquireOutcome`]), [`acquire`](Lease::acquire) (waits), [`renew`](Lease::renew),
//!   [`release`](Lease::release), optional automatic renewal, and the loss signal
//!   ([`Lease::lost`], [`LeaseState`], [`Loss`]).
//! - [`Lock`]: mutual exclusion. [`lock`](Lock::lock) waits and returns a [`LockGuard`] that
//!   renews the lock, exposes the fencing token and releases on drop;
//!   [`update`](Lock::update) is acquire, read, write with the token, release.
//! - [`Election`]: [`campaign`](Election::campaign) until elected, [`resign`](Election::resign),
//!   [`leader`](Election::leader), the change stream [`observe`](Election::observe) and the
//!   lost-leadership signal [`lost`](Election::lost).
//!
//! Blocking versions with the same method names are in [`crate::blocking`].
//!
//! ```no_run
//! use std::time::Duration;
//! use statestore::lease::{Election, Lease, Lock};
//! use statestore::{Client, ConnectOptions, SetOptions};
//!
//! # async fn demo() -> statestore::Result<()> {
//! let client = Client::connect(ConnectOptions::new("localhost", 1883)).await?;
//! let ttl = Duration::from_secs(5);
//!
//! let lease = Lease::new(&client, "lease/cache", "worker-1")?.auto_renew(true);
//! let token = lease.acquire(ttl).await?;
//! client.set("cache", "warm", SetOptions::default().fencing_token(token)).await?;
//! lease.release().await?;
//!
//! let lock = Lock::new(&client, "lock/counter", ttl)?;
//! lock.update("greeting", |_old| Some("hello".into())).await?;
//!
//! let election = Election::new(&client, "leader/jobs", "worker-1", ttl)?;
//! election.campaign().await?;
//! election.resign().await?;
//! # Ok(()) }
//! ```
//!
//! # Guarantees and choices
//!
//! **Fencing.** A holder can lose its lease without knowing (a pause, a partition). The
//! state store protects a key written with a fencing token: a later write with an older
//! token fails ([`ServiceError::FencingTokenLowerVersion`](crate::ServiceError)). So write
//! protected keys with the token, and a stale holder is refused once the next holder has
//! written. The token of a holding is the lease key's version when the holding *began*; it
//! does not change on renewal. (Every SET gives the key a new version. If a renewal lands
//! after the key expired, the holder gets the key back with a newer version although someone
//! else may have held it in between; keeping the first token makes the fencing still refuse
//! the stale writes.)
//!
//! **Loss is reported early, never late.** A holding's deadline is the send time of its last
//! successful (re)acquisition plus the TTL: the service started its TTL later, so the lease
//! cannot expire there before the deadline passes here. At the deadline without a successful
//! renewal the lease is declared lost ([`LossReason::Expired`], with the last renewal error),
//! renewal stops, and the key is deleted if it still holds our name (a renewal may have
//! landed late). A renewal that finds another holder's name ends the holding at once
//! ([`LossReason::TakenOver`]), as does closing the client ([`LossReason::ClientClosed`]).
//!
//! **Automatic renewal** sends the acquiring SET again every third of the TTL. A failed
//! renewal is retried after a jittered backoff (a 20th of the TTL, doubling, at most a
//! quarter), each attempt bounded by a third of the TTL and by the deadline; it never spins,
//! and stops at release or loss. While the connection is down, an attempt waits for the
//! reconnection (within its bound), so a broker outage shorter than the TTL minus a renewal
//! interval goes unnoticed.
//!
//! **Waiting for a held key** (acquire, lock, campaign) observes the key with KEYNOTIFY and
//! tries again only when something happens: after a DELETE notification, or when a whole TTL
//! (plus a tenth) passed without seeing the key written, which covers a missed notification
//! and costs one request per TTL. Before trying after a delete, a contender waits a random
//! delay of up to a 50th of the TTL (1 to 20 ms, widening with each race it loses) so that
//! contenders do not stampede. **Previous holder's priority:** when the delete comes about a
//! TTL after the key was last written, it was an expiry rather than a release, and a renewal
//! of the previous holder may be in flight; contenders then first wait a grace period of a
//! tenth of the TTL (5 to 250 ms), so that renewal lands first and a holder that was slow,
//! not gone, keeps its lease. (A lease of this crate has by then declared itself lost and
//! deletes the key again; the grace serves holders that renew late.) A delete soon after a
//! write is a release: no grace. Contenders use their own TTL for this estimate. There is no
//! queue: waiting is not first-come-first-served, and a holder that releases and locks
//! again at once usually wins (the others are still in their delay).
//!
//! **Interruptions.** An acquisition attempt whose outcome is unknown (timeout, connection
//! lost) is safe to repeat: the SET applies only to an absent key or to our own name. When
//! [`Lease::acquire_timeout`] gives up, the key is deleted if it holds our name. Dropping an
//! acquiring future may leave the key held under our name until its TTL passes.
//!
//! **Restarts of the state store.** The acquiring and renewing SETs carry `aio-persistence`,
//! so a state store that restarts keeps the holder (until the TTL passes) instead of handing
//! the lease to the next contender while the holder's is still valid. (Services too old for
//! persistence ignore the property.)
//!
//! **Holder names.** Two leases with the same key and holder name share the lease on the
//! service. Lock guards use a fresh name per acquisition (client id and a random suffix);
//! lease holders and election candidates must pick unique names.
//!
//! **Types.** [`Lease`], [`Lock`] and [`Election`] are cheap `Clone + Send + Sync` handles;
//! [`LossReason`] is a plain enum; errors are [`crate::Error`], with
//! [`Error::NotHeld`](crate::Error::NotHeld) for operations that need a holding that is gone.
//! "Held by someone else" is an [`AcquireOutcome`] of a single attempt, not an error.

mod contend;
mod election;
mod holder;
mod holding;
mod keeper;
mod lock;
mod reentry;
mod state;
mod update;

pub use election::{Election, LeaderEvent, LeaderObservation};
pub use holder::{Lease, LeaseWatch};
pub use lock::{Lock, LockGuard};
pub use reentry::CallbackScope;
pub use state::{AcquireOutcome, LeaseState, Loss, LossReason};
pub use update::UpdateTxn;
