//! The state of one lease that its handles share: the current holding (its token, TTL and
//! deadline), the state watch, and the requests that renew, release and clean up after it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::state::{LeaseState, Loss, LossReason};
use crate::client::{Client, DeleteOptions, SetOptions};
use crate::protocol::{Hlc, SetCondition};
use crate::{Error, Result};

/// What the handles of one lease share: its key and holder name, its holding, its state.
pub(super) struct Inner {
    pub(super) client: Client,
    pub(super) key: Bytes,
    pub(super) holder: Bytes,
    pub(super) auto_renew: AtomicBool,
    /// Wakes the keeper when renewal is switched on or off.
    pub(super) settings_changed: Arc<Notify>,
    /// Serialises the requests that write the key, so that no renewal goes out after the
    /// release that ended its holding.
    pub(super) requests: tokio::sync::Mutex<()>,
    /// Present exactly while the state is `Held`.
    holding: Mutex<Option<Holding>>,
    pub(super) state: watch::Sender<LeaseState>,
    pub(super) generations: AtomicU64,
}

/// One period of holding the lease, from acquisition to release or loss.
#[derive(Clone)]
pub(super) struct Holding {
    pub(super) generation: u64,
    pub(super) token: Hlc,
    pub(super) ttl: Duration,
    /// When the service may expire the key: the last successful (re)acquisition's send time
    /// plus the TTL (the service started its TTL later than we sent, so this is never late).
    pub(super) deadline: Instant,
    pub(super) stop: CancellationToken,
}

/// The SET that acquires and renews. Persisted, so that a state store that restarts within
/// the TTL still knows the holder: otherwise a second holder would get the lease at once while
/// the first one's is valid.
pub(super) fn claim(ttl: Duration) -> SetOptions {
    SetOptions::default()
        .condition(SetCondition::OnlyIfAbsentOrEqual)
        .expiry(ttl)
        .persist(true)
}

/// Timeout of one renewal attempt: a lost request is retried before the TTL runs out.
fn renewal_attempt_timeout(ttl: Duration, remaining: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(1)).min(remaining)
}

/// Refuses a TTL the service cannot take as a key's expiry.
pub(super) fn check_ttl(ttl: Duration) -> Result<()> {
    if ttl < Duration::from_millis(1) {
        return Err(Error::InvalidArgument(format!(
            "the lease TTL must be at least 1 ms, got {ttl:?}"
        )));
    }
    // The TTL is each claim's expiry: refused here rather than at the first acquire.
    if crate::client::validate::expiry_ms(Some(ttl)).is_err() {
        return Err(Error::InvalidArgument(format!(
            "the lease TTL {ttl:?} is too long (at most {} ms)",
            i64::MAX
        )));
    }
    Ok(())
}

impl Inner {
    /// A lease on `key` for `holder`, not held.
    pub(super) fn new(client: &Client, key: Bytes, holder: Bytes) -> Inner {
        Inner {
            client: client.clone(),
            key,
            holder,
            auto_renew: AtomicBool::new(false),
            settings_changed: Arc::new(Notify::new()),
            requests: tokio::sync::Mutex::new(()),
            holding: Mutex::new(None),
            state: watch::Sender::new(LeaseState::NotHeld),
            generations: AtomicU64::new(0),
        }
    }

    pub(super) fn holding(&self) -> MutexGuard<'_, Option<Holding>> {
        // Every critical section leaves the holding whole: a poisoned lock is still usable.
        self.holding.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn is_auto_renew(&self) -> bool {
        self.auto_renew.load(Ordering::SeqCst)
    }

    /// The holding with `generation` (any, if `None`), if it is the current one.
    pub(super) fn current(&self, generation: Option<u64>) -> Option<Holding> {
        self.holding()
            .as_ref()
            .filter(|h| generation.is_none_or(|g| g == h.generation))
            .cloned()
    }

    /// Ends the holding `generation` (the current one if `None`) with `loss`; false if that
    /// holding had already ended.
    pub(super) fn lose(&self, generation: Option<u64>, loss: Loss) -> bool {
        let mut holding = self.holding();
        let current = holding
            .as_ref()
            .is_some_and(|h| generation.is_none_or(|g| g == h.generation));
        if !current {
            return false;
        }
        if let Some(ended) = holding.take() {
            ended.stop.cancel();
        }
        tracing::debug!(key = ?self.key, %loss, "lease lost");
        self.state.send_replace(LeaseState::Lost(loss));
        true
    }

    pub(super) fn lose_on_closed(&self, generation: Option<u64>, error: &Error) {
        if *error == Error::Closed {
            self.lose(generation, Loss::new(LossReason::ClientClosed));
        }
    }

    /// Ends any holding because it is being released.
    pub(super) fn clear(&self) {
        let mut holding = self.holding();
        if let Some(ended) = holding.take() {
            ended.stop.cancel();
        }
        self.state.send_replace(LeaseState::NotHeld);
    }

    /// Moves the deadline of holding `generation` after a renewal sent at `sent`.
    fn extend(&self, generation: u64, sent: Instant) -> bool {
        match self.holding().as_mut() {
            Some(h) if h.generation == generation => {
                h.deadline = h.deadline.max(sent + h.ttl);
                true
            }
            _ => false,
        }
    }

    fn not_held(&self) -> Error {
        Error::NotHeld(match &*self.state.borrow() {
            LeaseState::Lost(loss) => format!("it was lost: {loss}"),
            _ => "it was never acquired, or was released".into(),
        })
    }

    /// Who holds the key, for reports: read errors just mean "unknown".
    async fn read_holder(&self, timeout: Option<Duration>) -> Option<Bytes> {
        match self
            .client
            .get_with_timeout(self.key.clone(), timeout)
            .await
        {
            Ok(value) => value.map(|v| v.value),
            Err(error) => {
                tracing::debug!(%error, "cannot read the lease holder");
                None
            }
        }
    }

    /// After a SET found the key held by another holder: declares holding `generation` (any,
    /// if `None`) taken over at once, then reads who holds the key (waiting at most
    /// `timeout`) and fills it into the loss. Call with `requests` locked, so that nothing
    /// replaces the loss in between. Returns the holder read.
    pub(super) async fn lose_to_another(
        &self,
        generation: Option<u64>,
        timeout: Option<Duration>,
    ) -> Option<Bytes> {
        let lost = self.lose(generation, Loss::new(LossReason::TakenOver));
        let holder = self.read_holder(timeout).await;
        if lost && holder.is_some() {
            self.state.send_if_modified(|state| match state {
                LeaseState::Lost(loss)
                    if loss.reason == LossReason::TakenOver && loss.holder.is_none() =>
                {
                    loss.holder.clone_from(&holder);
                    true
                }
                _ => false,
            });
        }
        holder
    }

    /// Locks `requests` for holding `generation` (the current one if `None`), waiting no
    /// later than its deadline: an acquisition holding the lock across its requests must not
    /// keep the loss from being declared on time. At the deadline the holding is lost
    /// ([`LossReason::Expired`]) and this fails.
    async fn lock_before_deadline(
        &self,
        generation: Option<u64>,
    ) -> Result<(tokio::sync::MutexGuard<'_, ()>, Holding)> {
        let generation = self
            .current(generation)
            .ok_or_else(|| self.not_held())?
            .generation;
        let lock = self.requests.lock();
        tokio::pin!(lock);
        loop {
            let holding = self
                .current(Some(generation))
                .ok_or_else(|| self.not_held())?;
            if let Ok(guard) = tokio::time::timeout_at(holding.deadline, lock.as_mut()).await {
                let holding = self
                    .current(Some(generation))
                    .ok_or_else(|| self.not_held())?;
                return Ok((guard, holding));
            }
            // The acquisition that held the lock may have moved the deadline.
            if self
                .current(Some(generation))
                .is_some_and(|h| h.deadline > Instant::now())
            {
                continue;
            }
            self.lose(Some(generation), Loss::new(LossReason::Expired));
            return Err(self.not_held());
        }
    }

    /// Renews holding `generation` (the current one if `None`).
    pub(super) async fn renew(&self, generation: Option<u64>) -> Result<()> {
        let (_requests, holding) = self.lock_before_deadline(generation).await?;
        let sent = Instant::now();
        let remaining = holding.deadline.saturating_duration_since(sent);
        if remaining.is_zero() {
            self.lose(Some(holding.generation), Loss::new(LossReason::Expired));
            return Err(self.not_held());
        }
        let options = claim(holding.ttl).timeout(renewal_attempt_timeout(holding.ttl, remaining));
        let set = self
            .client
            .set(self.key.clone(), self.holder.clone(), options)
            .await
            .inspect_err(|error| self.lose_on_closed(Some(holding.generation), error))?;
        if set.applied {
            // False if the keeper declared the loss while this renewal was in flight.
            return match self.extend(holding.generation, sent) {
                true => Ok(()),
                false => Err(self.not_held()),
            };
        }
        // The read of the holder waits no longer than a renewal attempt.
        let read_timeout = renewal_attempt_timeout(holding.ttl, holding.ttl);
        self.lose_to_another(Some(holding.generation), Some(read_timeout))
            .await;
        Err(self.not_held())
    }

    /// Deletes the key if it holds our name while this lease holds nothing: after a loss by
    /// expiry (a renewal may still have landed) or an acquisition cut short.
    pub(super) async fn delete_if_not_held(&self, ttl: Duration) {
        let _requests = self.requests.lock().await;
        if self.holding().is_some() {
            return;
        }
        let options = DeleteOptions::default().timeout((ttl / 2).max(Duration::from_millis(1)));
        if let Err(error) = self
            .client
            .vdel(self.key.clone(), self.holder.clone(), options)
            .await
        {
            tracing::debug!(%error, "cannot delete a lease key held under our name");
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let holding = self
            .holding
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(holding) = holding {
            holding.stop.cancel();
            let client = self.client.clone();
            let key = self.key.clone();
            let holder = self.holder.clone();
            // Drop cannot wait for the broker: the release goes out in the background.
            self.client.spawn_cleanup(async move {
                if let Err(error) = client.vdel(key, holder, DeleteOptions::default()).await {
                    tracing::debug!(%error, "releasing a dropped lease failed");
                }
            });
        }
    }
}
