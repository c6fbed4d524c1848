//! The connection's state as users see it: [`ConnectionState`], one [`ConnectionEvent`] per
//! change, and [`ConnectionEvents`] to follow them.

use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::ReusableBoxFuture;

/// Where a client's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The first connection is being made.
    Connecting = 1,
    /// Connected: calls go out.
    Connected = 2,
    /// The connection was lost; attempts to connect again are under way (calls wait).
    Reconnecting = 3,
    /// Reconnecting stopped at the bounds of the [`ReconnectPolicy`](super::ReconnectPolicy):
    /// calls fail at once with [`Error::Connection`](crate::Error::Connection) naming the
    /// reason, observations have ended. Final until the client is closed.
    GaveUp = 4,
    /// The client was closed. Final.
    Closed = 5,
}

impl ConnectionState {
    /// Every state, in the order of their codes: the one list every language reads.
    pub const ALL: [ConnectionState; 5] = [
        Self::Connecting,
        Self::Connected,
        Self::Reconnecting,
        Self::GaveUp,
        Self::Closed,
    ];

    /// The state's name in every language: `"connecting"`, `"connected"`, `"reconnecting"`,
    /// `"gave_up"`, `"closed"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Reconnecting => "reconnecting",
            Self::GaveUp => "gave_up",
            Self::Closed => "closed",
        }
    }

    /// Whether no other state follows but [`ConnectionState::Closed`].
    pub fn is_final(self) -> bool {
        matches!(self, Self::GaveUp | Self::Closed)
    }
}

impl std::fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A change of a client's [`ConnectionState`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionEvent {
    /// The new state.
    pub state: ConnectionState,
    /// Why the connection dropped, why the last attempt failed, or why reconnecting gave up
    /// (names the broker's `host:port`); `None` when connected, connecting or closed.
    pub reason: Option<String>,
    /// [`ConnectionState::Reconnecting`]: the number of the next reconnection attempt (1
    /// for the first); [`ConnectionState::GaveUp`]: the attempts made; otherwise 0.
    pub attempt: u32,
    /// [`ConnectionState::Reconnecting`]: the wait before the next attempt.
    pub delay: Option<Duration>,
    /// [`ConnectionState::Connected`] after a reconnect: the broker had lost the MQTT
    /// session, so requests in flight may have been lost and observations are resynchronised
    /// (each gets a `Resynced` event).
    pub session_lost: bool,
}

impl ConnectionEvent {
    pub(crate) fn new(state: ConnectionState) -> Self {
        Self {
            state,
            reason: None,
            attempt: 0,
            delay: None,
            session_lost: false,
        }
    }
}

/// How many changes a slow [`ConnectionEvents`] consumer may fall behind before it misses
/// the oldest ones (it still sees the latest).
const BACKLOG: usize = 64;

/// The current connection state and the subscribers to its changes, under one lock so that a
/// subscriber sees every change after the state it was given.
pub(crate) struct ConnectionStatus {
    inner: Mutex<(ConnectionEvent, broadcast::Sender<ConnectionEvent>)>,
}

impl ConnectionStatus {
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new((
                ConnectionEvent::new(ConnectionState::Connecting),
                broadcast::Sender::new(BACKLOG),
            )),
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, (ConnectionEvent, broadcast::Sender<ConnectionEvent>)> {
        // Every update leaves it consistent: a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn current(&self) -> ConnectionEvent {
        self.lock().0.clone()
    }

    /// Records and announces `event`, unless the state is final (only `Closed` follows
    /// `GaveUp`; nothing follows `Closed`).
    pub(crate) fn change(&self, event: ConnectionEvent) {
        let mut inner = self.lock();
        let current = inner.0.state;
        if current == ConnectionState::Closed
            || (current == ConnectionState::GaveUp && event.state != ConnectionState::Closed)
        {
            return;
        }
        inner.0 = event.clone();
        // No subscriber is no error.
        let _ = inner.1.send(event);
    }

    pub(crate) fn subscribe(&self) -> ConnectionEvents {
        let inner = self.lock();
        ConnectionEvents {
            next: ReusableBoxFuture::new(receive(inner.1.subscribe())),
            ended: inner.0.state == ConnectionState::Closed,
        }
    }
}

type Received = (
    Result<ConnectionEvent, broadcast::error::RecvError>,
    broadcast::Receiver<ConnectionEvent>,
);

/// One receive that hands the receiver back, so that the pending receive (and the waker it
/// registered) lives across polls.
async fn receive(mut receiver: broadcast::Receiver<ConnectionEvent>) -> Received {
    let result = receiver.recv().await;
    (result, receiver)
}

/// The changes of a client's connection state, from
/// [`Client::connection_events`](super::Client::connection_events): a
/// [`futures_core::Stream`] of [`ConnectionEvent`]s (or [`ConnectionEvents::next`]) that ends
/// after [`ConnectionState::Closed`]. It does not keep the client open. A consumer more than
/// 64 changes behind skips the oldest.
pub struct ConnectionEvents {
    next: ReusableBoxFuture<'static, Received>,
    ended: bool,
}

impl std::fmt::Debug for ConnectionEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionEvents")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl ConnectionEvents {
    /// The next change; `None` once the client is closed.
    pub async fn next(&mut self) -> Option<ConnectionEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<ConnectionEvent>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            let (result, receiver) = std::task::ready!(self.next.poll(cx));
            self.next.set(receive(receiver));
            match result {
                Ok(event) => {
                    self.ended = event.state == ConnectionState::Closed;
                    return Poll::Ready(Some(event));
                }
                // Fell behind: the newer changes follow.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => self.ended = true,
            }
        }
    }
}

impl futures_core::Stream for ConnectionEvents {
    type Item = ConnectionEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ConnectionEvent>> {
        self.get_mut().poll_event(cx)
    }
}
