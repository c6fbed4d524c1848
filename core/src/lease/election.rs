//! [`Election`]: leader election on a lease, and [`LeaderObservation`], the stream of
//! leadership changes.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;

use super::holder::Lease;
use super::holding::check_ttl;
use super::state::{AcquireOutcome, LeaseState, Loss};
use crate::client::{Client, KeyEvent, Observation};
use crate::protocol::Hlc;
use crate::Result;

/// One candidate in the election named by a key: the leader is the candidate whose name the
/// key holds.
///
/// [`Election::campaign`] waits until this candidate is elected; while leader, the lease is
/// renewed in the background at a third of the TTL. Leadership ends with
/// [`Election::resign`], or is lost ([`Election::lost`]) when a renewal finds another leader,
/// when renewals fail for a whole TTL (the signal comes then, never later than the TTL after
/// the last successful renewal), or when the client is closed. After a loss, campaign again
/// to run for leadership again. Candidate names must be unique among the candidates.
///
/// Cheap to clone (clones are the same candidate), `Send + Sync`. Dropping the last clone
/// while leader resigns in the background.
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::lease::Election;
/// use statestore::{Client, ConnectOptions};
///
/// # async fn demo() -> statestore::Result<()> {
/// let client = Client::connect(ConnectOptions::new("localhost", 1883)).await?;
/// let election = Election::new(&client, "leader/scheduler", "node-a", Duration::from_secs(5))?;
/// election.campaign().await?;
/// tokio::select! {
///     loss = election.lost() => eprintln!("no longer the leader: {loss:?}"),
///     () = async { /* lead */ } => election.resign().await?,
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    lease: Lease,
    ttl: Duration,
}

impl Election {
    /// The candidate `candidate` in the election on the key `name`, holding leadership for
    /// `ttl` between renewals.
    ///
    /// Fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument) if a name is empty or the TTL is under 1 ms.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::{Client, lease::Election};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let election = Election::new(client, "leader/scheduler", "node-a", Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn new(
        client: &Client,
        name: impl Into<Bytes>,
        candidate: impl Into<Bytes>,
        ttl: Duration,
    ) -> Result<Election> {
        check_ttl(ttl)?;
        let lease = Lease::new(client, name, candidate)?.auto_renew(true);
        Ok(Election { lease, ttl })
    }

    /// The election's key.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.name()); }
    /// ```
    pub fn name(&self) -> &Bytes {
        self.lease.key()
    }

    /// This candidate's name.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.candidate()); }
    /// ```
    pub fn candidate(&self) -> &Bytes {
        self.lease.holder_name()
    }

    /// The lease behind the candidacy.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.lease().state()); }
    /// ```
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Runs until elected; returns the fencing token of this term of leadership.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # async fn demo(election: Election) -> statestore::Result<()> {
    /// let term = election.campaign().await?;
    /// # Ok(()) }
    /// ```
    pub async fn campaign(&self) -> Result<Hlc> {
        self.lease.acquire(self.ttl).await
    }

    /// Like [`Election::campaign`], but fails with [`Error::Timeout`](crate::Error::Timeout) if not elected within
    /// `timeout`.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::Election;
    /// # async fn demo(election: Election) -> statestore::Result<()> {
    /// let term = election.campaign_timeout(Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn campaign_timeout(&self, timeout: Duration) -> Result<Hlc> {
        self.lease.acquire_timeout(self.ttl, timeout).await
    }

    /// One attempt to become (or stay) leader.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # async fn demo(election: Election) -> statestore::Result<()> {
    /// if election.try_campaign().await?.is_acquired() {
    ///     println!("elected");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign(&self) -> Result<AcquireOutcome> {
        self.lease.try_acquire(self.ttl).await
    }

    /// Gives up leadership (if this candidate has it): stops renewing and deletes the key if
    /// it holds this candidate's name.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # async fn demo(election: Election) -> statestore::Result<()> {
    /// election.resign().await?;
    /// # Ok(()) }
    /// ```
    pub async fn resign(&self) -> Result<()> {
        self.lease.release().await.map(|_| ())
    }

    /// The current leader's name, read from the service (`None`: no leader).
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # async fn demo(election: Election) -> statestore::Result<()> {
    /// println!("leader: {:?}", election.leader().await?);
    /// # Ok(()) }
    /// ```
    pub async fn leader(&self) -> Result<Option<Bytes>> {
        self.lease.holder().await
    }

    /// Observes the leadership: see [`LeaderObservation`].
    ///
    /// ```no_run
    /// # use statestore::lease::{Election, LeaderEvent};
    /// # async fn demo(election: Election) -> statestore::Result<()> {
    /// let mut changes = election.observe().await?;
    /// while let Some(event) = changes.next().await {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn observe(&self) -> Result<LeaderObservation> {
        LeaderObservation::start(self.lease.client(), self.lease.key().clone()).await
    }

    /// Whether this candidate is the leader (as far as it knows: see [`Election::lost`]).
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # fn demo(election: Election) { println!("{}", election.is_leader()); }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.lease.is_held()
    }

    /// The candidacy's state ([`LeaseState::Held`] while leader).
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.state()); }
    /// ```
    pub fn state(&self) -> LeaseState {
        self.lease.state()
    }

    /// The fencing token of the current term, while leader.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.fencing_token()); }
    /// ```
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.lease.fencing_token()
    }

    /// Waits until this candidate is not the leader: `Some(loss)` if leadership was lost,
    /// `None` after resigning (or if it never led). Returns at once when not leader now.
    ///
    /// ```no_run
    /// # use statestore::lease::Election;
    /// # async fn demo(election: Election) {
    /// if let Some(loss) = election.lost().await {
    ///     eprintln!("lost leadership: {loss}");
    /// }
    /// # }
    /// ```
    pub async fn lost(&self) -> Option<Loss> {
        self.lease.lost().await
    }
}

/// A leadership change.
///
/// ```
/// use statestore::lease::LeaderEvent;
///
/// let event = LeaderEvent::Elected { leader: "node-a".into() };
/// assert_eq!(event.leader().map(|l| &l[..]), Some(&b"node-a"[..]));
/// assert_eq!(LeaderEvent::Vacant.leader(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaderEvent {
    /// `leader` leads now.
    Elected {
        /// The leader's candidate name.
        leader: Bytes,
    },
    /// Nobody leads (the leader resigned, or its lease expired).
    Vacant,
}

impl LeaderEvent {
    /// The leader's name, if there is one.
    pub fn leader(&self) -> Option<&Bytes> {
        match self {
            Self::Elected { leader } => Some(leader),
            Self::Vacant => None,
        }
    }

    fn from_holder(holder: Option<Bytes>) -> Self {
        match holder {
            Some(leader) => Self::Elected { leader },
            None => Self::Vacant,
        }
    }
}

/// The leadership changes of one election, from [`Election::observe`].
///
/// The first event is the leadership when observation began; each later one is a change
/// (renewals by the same leader are not reported). Consume it as an async stream
/// ([`LeaderObservation::next`] or [`futures_core::Stream`]) or, from a plain thread, with
/// [`LeaderObservation::next_timeout`]. It ends when the client is closed. After a
/// reconnect, the state read again is reported if it differs.
#[derive(Debug)]
pub struct LeaderObservation {
    observation: Observation,
    /// The leadership read when observation began, until it is reported.
    initial: Option<LeaderEvent>,
    reported: Option<LeaderEvent>,
}

impl LeaderObservation {
    async fn start(client: &Client, key: Bytes) -> Result<Self> {
        // Observed before the read, so that no change after the read is missed.
        let observation = client.observe(key.clone()).await?;
        let holder = client.get(key).await?.map(|v| v.value);
        Ok(Self {
            observation,
            initial: Some(LeaderEvent::from_holder(holder)),
            reported: None,
        })
    }

    /// The next change; `None` once the observation has ended.
    ///
    /// ```no_run
    /// # use statestore::lease::LeaderObservation;
    /// # async fn demo(mut changes: LeaderObservation) {
    /// if let Some(event) = changes.next().await {
    ///     println!("{event:?}");
    /// }
    /// # }
    /// ```
    pub async fn next(&mut self) -> Option<LeaderEvent> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next_event(cx)).await
    }

    /// The next change if one is already known: `Ok(None)` if none is, [`Error::Closed`](crate::Error::Closed)
    /// once the observation has ended. Never blocks.
    ///
    /// ```no_run
    /// # use statestore::lease::LeaderObservation;
    /// # fn demo(mut changes: LeaderObservation) -> statestore::Result<()> {
    /// while let Some(event) = changes.try_next()? {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_next(&mut self) -> Result<Option<LeaderEvent>> {
        if let Some(event) = self.take_initial() {
            return Ok(Some(event));
        }
        while let Some(event) = self.observation.try_next()? {
            if let Some(change) = self.change(event) {
                return Ok(Some(change));
            }
        }
        Ok(None)
    }

    /// Blocks the calling thread for the next change: `Ok(None)` if none came within
    /// `timeout`, [`Error::Closed`](crate::Error::Closed) once the observation has ended, [`Error::Runtime`](crate::Error::Runtime) when
    /// called from inside an async runtime or in a child forked after the observation began.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::lease::LeaderObservation;
    /// # fn demo(mut changes: LeaderObservation) -> statestore::Result<()> {
    /// if let Some(event) = changes.next_timeout(Duration::from_secs(5))? {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<LeaderEvent>> {
        self.observation.ensure_created_here()?;
        if let Some(event) = self.take_initial() {
            return Ok(Some(event));
        }
        // A deadline beyond the clock's range waits without limit (as bindings pass it).
        let deadline = std::time::Instant::now().checked_add(timeout);
        loop {
            let remaining = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(std::time::Instant::now())
            });
            let Some(event) = self.observation.next_timeout(remaining)? else {
                return Ok(None);
            };
            if let Some(change) = self.change(event) {
                return Ok(Some(change));
            }
        }
    }

    fn take_initial(&mut self) -> Option<LeaderEvent> {
        let initial = self.initial.take()?;
        self.reported = Some(initial.clone());
        Some(initial)
    }

    /// The change `event` makes, if it makes one.
    fn change(&mut self, event: KeyEvent) -> Option<LeaderEvent> {
        let holder = match event {
            KeyEvent::Set { value, .. } => Some(value),
            KeyEvent::Delete { .. } => None,
            KeyEvent::Resynced { value } => value.map(|v| v.value),
        };
        let event = LeaderEvent::from_holder(holder);
        if self.reported.as_ref() == Some(&event) {
            return None;
        }
        self.reported = Some(event.clone());
        Some(event)
    }

    fn poll_next_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<LeaderEvent>> {
        if let Some(event) = self.take_initial() {
            return Poll::Ready(Some(event));
        }
        loop {
            match Pin::new(&mut self.observation).poll_next(cx) {
                Poll::Ready(Some(event)) => {
                    if let Some(change) = self.change(event) {
                        return Poll::Ready(Some(change));
                    }
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl futures_core::Stream for LeaderObservation {
    type Item = LeaderEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LeaderEvent>> {
        self.poll_next_event(cx)
    }
}
