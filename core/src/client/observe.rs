//! Key notifications: observations, the shared KEYNOTIFY registrations behind them, and their
//! renewal after every reconnect.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::backlog::{self, Backlog};
use super::call::{invoke_get, value_of, Invocation};
use super::observers::Overflow;
use super::shared::{ClientInner, Shared};
use super::types::KeyEvent;
use crate::protocol::{Request, Response};
use crate::{runtime, Error, Result};

/// The notifications of one key, from [`Client::observe`](super::Client::observe).
///
/// Consume it as an async stream ([`Observation::next`] or [`futures_core::Stream`]) or, from
/// a plain thread, with [`Observation::next_timeout`]. It ends (`None` / [`Error::Closed`])
/// when the key is unobserved or the client is closed. Dropping it stops the observation;
/// when the last observation of a key is dropped the client sends `KEYNOTIFY … STOP`.
/// An observation keeps its client's connection open. Events wait in the observation until
/// they are consumed, up to [`OBSERVATION_QUEUE_LIMIT`](super::OBSERVATION_QUEUE_LIMIT)
/// bytes; past that, new events are dropped and, once what was queued has been consumed, the
/// observation receives one [`KeyEvent::Resynced`] with the key's current value.
pub struct Observation {
    key: Bytes,
    id: u64,
    events: mpsc::UnboundedReceiver<KeyEvent>,
    backlog: Arc<Backlog>,
    /// Keeps the client's connection open.
    client: Arc<ClientInner>,
    /// The process the observation was created in: its events do not cross `fork`.
    pid: u32,
}

impl std::fmt::Debug for Observation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observation")
            .field("key", &self.key)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Observation {
    /// The observed key.
    pub fn key(&self) -> &Bytes {
        &self.key
    }

    /// The next event; `None` once the observation has ended.
    pub async fn next(&mut self) -> Option<KeyEvent> {
        let event = self.events.recv().await;
        self.consumed(event)
    }

    /// Gives back the queue room of a consumed event.
    fn consumed(&self, event: Option<KeyEvent>) -> Option<KeyEvent> {
        if let Some(event) = &event {
            self.backlog.release(backlog::cost(event));
        }
        event
    }

    /// The next event if one is already queued: `Ok(None)` if none is, [`Error::Closed`] once
    /// the observation has ended. Never blocks.
    pub fn try_next(&mut self) -> Result<Option<KeyEvent>> {
        match self.events.try_recv() {
            Ok(event) => Ok(self.consumed(Some(event))),
            Err(mpsc::error::TryRecvError::Empty) => Ok(None),
            Err(mpsc::error::TryRecvError::Disconnected) => Err(Error::Closed),
        }
    }

    /// Blocks the calling thread for the next event: `Ok(None)` if none came within `timeout`,
    /// [`Error::Closed`] once the observation has ended, [`Error::Runtime`] when called from
    /// inside an async runtime or in a child forked after the observation was created.
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<KeyEvent>> {
        self.ensure_created_here()?;
        if let Some(event) = self.try_next()? {
            return Ok(Some(event));
        }
        // The timer must be created inside the runtime, hence the async block.
        match runtime::block_on(async { tokio::time::timeout(timeout, self.next()).await })? {
            Ok(Some(event)) => Ok(Some(event)),
            Ok(None) => Err(Error::Closed),
            Err(_) => Ok(None),
        }
    }
}

impl Observation {
    /// Fails with [`Error::Runtime`] in a child forked after the observation was created.
    pub(crate) fn ensure_created_here(&self) -> Result<()> {
        runtime::ensure_created_here(self.pid, "observation")
    }
}

impl futures_core::Stream for Observation {
    type Item = KeyEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<KeyEvent>> {
        let polled = self.events.poll_recv(cx);
        polled.map(|event| self.consumed(event))
    }
}

impl Drop for Observation {
    fn drop(&mut self) {
        let shared = &self.client.shared;
        if shared.observers.remove(&self.key, self.id) && !shared.is_closed() {
            let key = self.key.clone();
            // Drop cannot wait for the broker: the STOP goes out in the background.
            let stopping = shared.clone();
            shared.spawn_cleanup(async move {
                if let Err(error) = stop_if_unobserved(&stopping, key).await {
                    tracing::debug!(%error, "KEYNOTIFY STOP after the last observation was dropped failed");
                }
            });
        }
    }
}

impl Overflow {
    /// Waits until the observer has consumed its queue, then hands it a
    /// [`KeyEvent::Resynced`] with the key's current value (retrying the read until it
    /// succeeds, the observation ends or the client closes).
    pub(crate) async fn resync(self, shared: Arc<Shared>) {
        tokio::select! {
            () = shared.cancel.cancelled() => return,
            // The observation was dropped with its queue: nobody to resync.
            () = self.events.closed() => return,
            () = self.backlog.drained() => {}
        }
        self.backlog.clear_overflow();
        let mut delay = Duration::from_millis(100);
        while !self.events.is_closed() && !shared.is_closed() {
            let read = shared.call(invoke_get(self.key.clone(), None)).await;
            match read.and_then(value_of) {
                Ok(value) => {
                    let event = KeyEvent::Resynced { value };
                    self.backlog.force(backlog::cost(&event));
                    let _ = self.events.send(event);
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, "reading a key after its observation overflowed failed; retrying");
                    tokio::select! {
                        () = shared.cancel.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

/// How long the first re-registration after a reconnect waits for its answer before asking
/// again; each later attempt waits twice as long as the one before, up to the call timeout.
///
/// After a broker restart the state store may not have resubscribed yet: a KEYNOTIFY sent
/// before it has is lost, and waiting a whole call timeout for its answer would leave the
/// observations deaf for that long. Asking again is safe: a registration is idempotent.
const RESYNC_FIRST_ATTEMPT: Duration = Duration::from_millis(250);

fn keynotify(key: Bytes, stop: bool) -> Invocation {
    Invocation {
        request: Request::KeyNotify { key, stop },
        fencing_token: None,
        persist: false,
        timeout: None,
        idempotent: true,
    }
}

fn expect_ok(response: &Response) -> Result<()> {
    match response {
        Response::Ok | Response::Integer(_) => Ok(()),
        other => Err(Error::UnexpectedPayload(format!(
            "unexpected answer to KEYNOTIFY: {other:?}"
        ))),
    }
}

/// Starts an observation of `key`, registering it with the service if it is the key's first.
pub(crate) async fn observe(client: &Arc<ClientInner>, key: Bytes) -> Result<Observation> {
    let shared = &client.shared;
    let _registration = shared.observers.registration(&key).await;
    let (id, (events, backlog), first) = shared.observers.add(&key)?;
    // Registered before KEYNOTIFY is sent, so no notification that follows is missed.
    let observation = Observation {
        key: key.clone(),
        id,
        events,
        backlog,
        client: client.clone(),
        pid: crate::runtime::current_pid(),
    };
    if first {
        let answer = shared.call(keynotify(key, false)).await;
        if let Err(error) = answer.and_then(|a| expect_ok(&a.response)) {
            if !error.outcome_unknown() {
                // Not registered: removed first, so that dropping the observation sends no
                // STOP.
                shared.observers.remove(&observation.key, id);
            }
            // Otherwise the KEYNOTIFY may have registered the key: dropping the observation
            // sends a STOP (after this registration, which holds the key's lock).
            drop(observation);
            return Err(error);
        }
    }
    Ok(observation)
}

/// Ends every observation of `key` and stops its registration.
pub(crate) async fn unobserve(shared: &Shared, key: Bytes) -> Result<()> {
    let _registration = shared.observers.registration(&key).await;
    if shared.observers.remove_all(&key) {
        let answer = shared.call(keynotify(key, true)).await?;
        expect_ok(&answer.response)?;
    }
    Ok(())
}

async fn stop_if_unobserved(shared: &Shared, key: Bytes) -> Result<()> {
    let _registration = shared.observers.registration(&key).await;
    if shared.observers.contains(&key) || shared.is_closed() {
        return Ok(());
    }
    expect_ok(&shared.call(keynotify(key, true)).await?.response)
}

/// After a reconnect: re-registers every observed key (the service dropped them all when the
/// connection went down) and tells its observers the key's current state.
pub(crate) async fn resync(shared: Arc<Shared>, connection: u64) {
    let mut tasks = tokio::task::JoinSet::new();
    for key in shared.observers.keys() {
        let shared = shared.clone();
        tasks.spawn(async move {
            let mut attempt = RESYNC_FIRST_ATTEMPT.min(shared.default_timeout);
            loop {
                if shared.current_connection() != connection || shared.is_closed() {
                    return; // A newer connection resyncs on its own.
                }
                match resync_key(&shared, &key, attempt).await {
                    Ok(()) => return,
                    Err(error) if error.outcome_unknown() => {
                        tracing::debug!(%error, "resync of an observed key interrupted: retrying");
                        attempt = attempt.saturating_mul(2).min(shared.default_timeout);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot re-register an observed key after a reconnect");
                        return;
                    }
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Re-registers `key`, waiting at most `attempt` for the service's answer, then reads it.
async fn resync_key(shared: &Shared, key: &Bytes, attempt: Duration) -> Result<()> {
    // Under the key's lock like every registration: a STOP after the last observation is
    // dropped waits for this KEYNOTIFY instead of overtaking it.
    let _registration = shared.observers.registration(key).await;
    if !shared.observers.contains(key) {
        return Ok(());
    }
    let register = Invocation {
        timeout: Some(attempt),
        ..keynotify(key.clone(), false)
    };
    expect_ok(&shared.call(register).await?.response)?;
    let answer = shared.call(invoke_get(key.clone(), None)).await?;
    let value = value_of(answer)?;
    shared.observers.deliver_resynced(key, value);
    Ok(())
}
