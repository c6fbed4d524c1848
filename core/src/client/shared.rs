//! State shared by the client handles and the background tasks of one connection.

use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::AsyncClient;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::connection::{ConnectionEvent, ConnectionState, ConnectionStatus};
use super::in_flight::InFlight;
use super::observers::Observers;
use crate::protocol::{topics, HybridClock, MAX_CLOCK_SKEW};
use crate::{Error, Result};

/// Whether requests can be sent.
#[derive(Debug, Clone)]
pub(crate) enum LinkState {
    /// Connecting or reconnecting; requests wait.
    Connecting,
    /// Connected and subscribed; requests go out.
    Ready,
    /// The connection cannot be used (e.g. the broker refused the subscriptions); requests
    /// fail with this error until a subscription succeeds (asked again after a backoff on the
    /// same connection, or on a new one).
    Failed(Error),
    /// The client was closed.
    Closed,
}

pub(crate) struct Shared {
    /// The broker's `host:port`, for messages.
    pub(crate) broker: String,
    pub(crate) client_id: String,
    pub(crate) response_topic: String,
    /// The notification filter without its trailing `+`: a notification topic is this prefix
    /// followed by the key in hex.
    pub(crate) notification_prefix: String,
    pub(crate) notification_filter: String,
    /// One clock per client: every `__ts` sent comes from it, every `__ts` received updates it.
    pub(crate) clock: HybridClock,
    pub(crate) in_flight: InFlight,
    pub(crate) observers: Observers,
    pub(crate) link: watch::Sender<LinkState>,
    /// The state users see, and its changes.
    pub(crate) status: ConnectionStatus,
    /// The broker's maximum packet size from the last CONNACK.
    pub(crate) broker_max_packet: AtomicU32,
    /// Counts CONNACKs and connection losses: a change means the connection someone was
    /// working with is gone (a resync of it stops, its SUBACK opens nothing).
    pub(crate) connection: AtomicU64,
    pub(crate) default_timeout: Duration,
    /// The process the client was created in: after fork its connection stayed there.
    pub(crate) pid: u32,
    pub(crate) mqtt: AsyncClient,
    pub(crate) cancel: CancellationToken,
    /// Where background work of this client runs.
    pub(crate) runtime: Handle,
    /// Cancelled when [`Client::close`](super::Client::close) begins, while the connection is
    /// still up: lease acquisitions stop there, so that undoing an attempt whose SET may have
    /// applied can still go out.
    pub(crate) closing: CancellationToken,
    /// Work that close waits for: cleanups ([`Shared::spawn_cleanup`]) and acquisitions
    /// ([`Shared::track`]).
    cleanups: watch::Sender<usize>,
}

impl Shared {
    pub(crate) fn new(
        broker: String,
        client_id: String,
        default_timeout: Duration,
        mqtt: AsyncClient,
        runtime: Handle,
    ) -> Self {
        let notification_filter = topics::notification_filter(&client_id);
        Self {
            broker,
            response_topic: topics::response_topic(&client_id),
            notification_prefix: notification_filter.trim_end_matches('+').to_owned(),
            notification_filter,
            clock: HybridClock::new(client_id.clone(), MAX_CLOCK_SKEW),
            in_flight: InFlight::new(random_u128()),
            observers: Observers::default(),
            link: watch::Sender::new(LinkState::Connecting),
            status: ConnectionStatus::new(),
            broker_max_packet: AtomicU32::new(super::options::MQTT_MAX_PACKET_SIZE),
            connection: AtomicU64::new(0),
            default_timeout,
            pid: crate::runtime::current_pid(),
            mqtt,
            cancel: CancellationToken::new(),
            closing: CancellationToken::new(),
            runtime,
            cleanups: watch::Sender::new(0),
            client_id,
        }
    }

    /// Waits until requests can be sent.
    pub(crate) async fn wait_ready(&self) -> Result<()> {
        if let LinkState::Ready = *self.link.borrow() {
            return Ok(());
        }
        let mut link = self.link.subscribe();
        loop {
            match &*link.borrow_and_update() {
                LinkState::Ready => return Ok(()),
                LinkState::Failed(error) => return Err(error.clone()),
                LinkState::Closed => return Err(Error::Closed),
                LinkState::Connecting => {}
            }
            link.changed().await.map_err(|_| Error::Closed)?;
        }
    }

    /// Reconnecting stopped for good: calls waiting and later calls fail with `error`,
    /// observations end, and users see `event`.
    pub(crate) fn give_up(&self, error: Error, event: ConnectionEvent) {
        self.set_link(LinkState::Failed(error.clone()));
        self.in_flight.fail_all(error);
        self.observers.close();
        self.status.change(event);
    }

    /// Sets the link state, unless the client is closed (which is final).
    pub(crate) fn set_link(&self, state: LinkState) {
        self.link.send_if_modified(|current| {
            if matches!(current, LinkState::Closed) {
                return false;
            }
            *current = state;
            true
        });
    }

    /// Sets the link state for the connection numbered `connection` ([`Shared::connection`]),
    /// unless that connection is gone or the client is closed; returns whether it was set.
    ///
    /// The check is made under the link's lock, and the event loop counts a loss before it
    /// sets `Connecting`: so a state for a lost connection never replaces `Connecting`.
    pub(crate) fn set_link_of(&self, connection: u64, state: LinkState) -> bool {
        self.link.send_if_modified(|current| {
            if matches!(current, LinkState::Closed) || self.current_connection() != connection {
                return false;
            }
            *current = state;
            true
        })
    }

    /// Runs `cleanup` (the release of a dropped lease, the STOP of a dropped observation,
    /// the undoing of an acquisition cut short) in the background; [`Shared::cleanups_done`]
    /// waits for it.
    pub(crate) fn spawn_cleanup(&self, cleanup: impl Future<Output = ()> + Send + 'static) {
        // Counted down however the task ends, even dropped unpolled.
        let done = self.track();
        self.runtime.spawn(async move {
            let _done = done;
            cleanup.await;
        });
    }

    /// Counts work that [`Shared::cleanups_done`] waits for, until the guard is dropped.
    pub(crate) fn track(&self) -> Tracked {
        self.cleanups.send_modify(|running| *running += 1);
        Tracked(self.cleanups.clone())
    }

    /// Returns once no tracked work (cleanup or acquisition) runs.
    pub(crate) async fn cleanups_done(&self) {
        // The sender lives in `self`: the wait cannot fail.
        let _ = self
            .cleanups
            .subscribe()
            .wait_for(|running| *running == 0)
            .await;
    }

    pub(crate) fn is_closed(&self) -> bool {
        matches!(*self.link.borrow(), LinkState::Closed)
    }

    /// The key of a notification topic, if it is one of ours.
    pub(crate) fn notification_key(&self, topic: &[u8]) -> Option<Bytes> {
        let hex_key = topic.strip_prefix(self.notification_prefix.as_bytes())?;
        hex::decode(hex_key).ok().map(Bytes::from)
    }

    pub(crate) fn current_connection(&self) -> u64 {
        self.connection.load(Ordering::Acquire)
    }

    pub(crate) fn broker_max_packet(&self) -> u32 {
        self.broker_max_packet.load(Ordering::Relaxed)
    }

    /// Ends the client: background tasks stop, calls in flight and later fail with
    /// [`Error::Closed`], observations end.
    pub(crate) fn shutdown(&self) {
        if !matches!(self.link.send_replace(LinkState::Closed), LinkState::Closed) {
            tracing::debug!(broker = %self.broker, client_id = %self.client_id, "client closed");
        }
        self.status
            .change(ConnectionEvent::new(ConnectionState::Closed));
        self.cancel.cancel();
        self.in_flight.close();
        self.observers.close();
    }
}

/// What every handle of one client shares: its connection, and the tasks that keep it. The
/// connection is shut down when the last handle (a client, an observation, a listing) goes.
pub(crate) struct ClientInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) tasks: Mutex<Vec<JoinHandle<()>>>,
    /// [`ConnectOptions::max_in_flight`](super::ConnectOptions::max_in_flight).
    pub(crate) max_in_flight: usize,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

/// Work counted by [`Shared::track`]; dropping it counts it done.
pub(crate) struct Tracked(watch::Sender<usize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.send_modify(|running| *running -= 1);
    }
}

/// 128 bits from the operating system (different in every process, even after fork).
pub(crate) fn random_u128() -> u128 {
    let mut bytes = [0u8; 16];
    match getrandom::fill(&mut bytes) {
        Ok(()) => u128::from_le_bytes(bytes),
        // Only uniqueness matters here, not secrecy.
        Err(_) => fastrand::u128(..) ^ u128::from(std::process::id()),
    }
}

/// A client id for clients that do not set one.
pub(crate) fn generate_client_id() -> String {
    format!("statestore-{:016x}", random_u128() as u64)
}
