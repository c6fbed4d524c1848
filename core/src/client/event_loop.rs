//! The task that owns and polls rumqttc's event loop.
//!
//! It never publishes (publishing from the polling task deadlocks rumqttc when its request
//! channel is full): subscriptions and re-registrations happen in the session task, requests
//! in the callers' tasks. It routes incoming messages, backs off between reconnection
//! attempts, fails requests lost with a session, and disconnects cleanly on shutdown.

use std::future::pending;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{ConnAck, Packet, Publish, SubscribeReasonCode};
use rumqttc::v5::{Event, EventLoop};
use rumqttc::Outgoing;
use tokio::sync::{mpsc, watch};

use super::backoff::Backoff;
use super::connection::{ConnectionEvent, ConnectionState};
use super::envelope;
use super::in_flight::Reply;
use super::options::MQTT_MAX_PACKET_SIZE;
use super::session::SessionEvent;
use super::shared::{LinkState, Shared};
use super::shown::ShownKey;
use super::types::KeyEvent;
use crate::protocol::Notification;

/// How long a clean shutdown waits for the DISCONNECT to be written.
const DISCONNECT_GRACE: Duration = Duration::from_secs(1);

pub(crate) struct EventLoopTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) eventloop: EventLoop,
    pub(crate) backoff: Backoff,
    pub(crate) session: mpsc::UnboundedSender<SessionEvent>,
    /// New service-account tokens, when that authentication is used.
    pub(crate) tokens: Option<watch::Receiver<Bytes>>,
    /// Whether resuming the session is worth asking for on reconnects.
    pub(crate) resume_sessions: bool,
    /// Since when the connection is lost, and how many reconnection attempts failed.
    pub(crate) outage: Option<Outage>,
}

/// A lost connection being repaired.
pub(crate) struct Outage {
    since: Instant,
    failures: u32,
}

/// What to do after a connection failed.
enum Next {
    Retry(Duration),
    GiveUp,
}

impl EventLoopTask {
    pub(crate) async fn run(mut self) {
        let mut connected = false;
        let mut ever_connected = false;
        loop {
            let event = tokio::select! {
                biased;
                () = self.shared.cancel.cancelled() => {
                    if connected {
                        self.disconnect().await;
                    }
                    return;
                }
                token = next_token(&mut self.tokens) => {
                    self.reconnect_with_token(token);
                    connected = false;
                    continue;
                }
                event = self.eventloop.poll() => event,
            };
            match event {
                Ok(Event::Incoming(Packet::ConnAck(connack))) => {
                    connected = true;
                    ever_connected = true;
                    self.on_connack(connack);
                }
                Ok(Event::Incoming(Packet::Publish(publish))) => self.route(publish),
                Ok(Event::Incoming(Packet::SubAck(suback))) => self.on_suback(suback.return_codes),
                Ok(_) => {}
                Err(error) if !ever_connected => {
                    // The first attempt decides whether `connect` succeeds: report, then stop.
                    let error = super::connect_error::failed(
                        &self.shared.broker,
                        &error,
                        self.shared.default_timeout,
                    );
                    self.shared.set_link(LinkState::Failed(error));
                    return;
                }
                Err(error) => {
                    if connected {
                        tracing::warn!(%error, "connection to the broker lost; reconnecting");
                        self.on_connection_lost();
                    } else {
                        tracing::debug!(%error, "reconnection attempt failed");
                    }
                    let reason = super::connect_error::lost(&self.shared.broker, &error, connected);
                    connected = false;
                    let delay = match self.after_failure(reason) {
                        Next::Retry(delay) => delay,
                        Next::GiveUp => return,
                    };
                    tokio::select! {
                        () = self.shared.cancel.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    /// Counts a failure of the connection (a loss, or a failed attempt) against the reconnect
    /// policy: the wait before the next attempt, announced as `reconnecting`, or giving up.
    fn after_failure(&mut self, reason: String) -> Next {
        let policy = self.backoff.policy();
        let outage = self.outage.get_or_insert(Outage {
            since: Instant::now(),
            failures: 0,
        });
        let elapsed = outage.since.elapsed();
        let attempts = outage.failures;
        let out_of_attempts = policy.max_attempts > 0 && attempts >= policy.max_attempts;
        let out_of_time = !policy.max_elapsed.is_zero() && elapsed >= policy.max_elapsed;
        if out_of_attempts || out_of_time {
            let bound = if out_of_attempts {
                format!("reconnect_max_attempts = {}", policy.max_attempts)
            } else {
                format!("reconnect_max_elapsed = {:?}", policy.max_elapsed)
            };
            let error = crate::Error::Connection(format!(
                "{reason}; gave up reconnecting after {attempts} attempts in {elapsed:.1?} \
                 ({bound}): check the broker, then connect a new client"
            ));
            tracing::error!(%error, "gave up reconnecting");
            self.shared.give_up(
                error,
                ConnectionEvent {
                    reason: Some(reason),
                    attempt: attempts,
                    ..ConnectionEvent::new(ConnectionState::GaveUp)
                },
            );
            return Next::GiveUp;
        }
        outage.failures += 1;
        let mut delay = self.backoff.next_delay();
        if !policy.max_elapsed.is_zero() {
            // The last attempt is made when the time is up, not a whole delay later.
            delay = delay.min(policy.max_elapsed.saturating_sub(elapsed));
        }
        tracing::debug!(
            attempt = outage.failures,
            ?delay,
            "reconnecting after a delay"
        );
        self.shared.status.change(ConnectionEvent {
            reason: Some(reason),
            attempt: outage.failures,
            delay: Some(delay),
            ..ConnectionEvent::new(ConnectionState::Reconnecting)
        });
        Next::Retry(delay)
    }

    fn on_connack(&mut self, connack: ConnAck) {
        self.backoff.reset();
        let reconnected = self.outage.take().is_some();
        tracing::info!(
            broker = %self.shared.broker,
            client_id = %self.shared.client_id,
            reconnected,
            session_present = connack.session_present,
            "connected to the broker"
        );
        self.shared.status.change(ConnectionEvent {
            session_lost: reconnected && !connack.session_present,
            ..ConnectionEvent::new(ConnectionState::Connected)
        });
        let max_packet = connack
            .properties
            .as_ref()
            .and_then(|p| p.max_packet_size)
            .unwrap_or(MQTT_MAX_PACKET_SIZE);
        self.shared
            .broker_max_packet
            .store(max_packet, Ordering::Relaxed);
        let connection = self.shared.connection.fetch_add(1, Ordering::AcqRel) + 1;
        if !connack.session_present {
            // rumqttc dropped whatever it had queued or in flight with the old session.
            let lost = self.shared.in_flight.fail_unknown();
            if lost > 0 {
                tracing::warn!(
                    lost,
                    "new MQTT session: requests in flight failed with ConnectionLost"
                );
            }
        }
        if self.resume_sessions {
            self.eventloop.options.set_clean_start(false);
        }
        let _ = self.session.send(SessionEvent::Connected {
            session_present: connack.session_present,
            connection,
        });
    }

    fn on_suback(&mut self, codes: Vec<SubscribeReasonCode>) {
        let _ = self.session.send(SessionEvent::SubAck(codes));
    }

    fn on_connection_lost(&mut self) {
        self.shared.in_flight.mark_connection_lost();
        // Before the link goes back to connecting: the session task's readiness for the lost
        // connection is refused from here on (see `Shared::set_link_of`).
        self.shared.connection.fetch_add(1, Ordering::AcqRel);
        self.shared.set_link(LinkState::Connecting);
        let _ = self.session.send(SessionEvent::Disconnected);
    }

    /// A rotated token: rumqttc 0.25 cannot send AUTH, so reconnect with the new token.
    fn reconnect_with_token(&mut self, token: Bytes) {
        tracing::info!("service-account token changed: reconnecting to authenticate with it");
        self.eventloop.options.set_authentication_data(Some(token));
        self.eventloop.clean();
        self.on_connection_lost();
        self.after_failure(format!(
            "{}: reconnecting to authenticate with a rotated service-account token",
            self.shared.broker
        ));
    }

    fn route(&self, publish: Publish) {
        let topic = &publish.topic[..];
        if topic == self.shared.response_topic.as_bytes() {
            let Some(correlation) = publish
                .properties
                .as_ref()
                .and_then(|p| p.correlation_data.as_ref())
            else {
                tracing::debug!("ignoring a response without correlation data");
                return;
            };
            let correlation = correlation.clone();
            let reply = Reply {
                payload: publish.payload,
                properties: publish.properties,
            };
            if !self.shared.in_flight.complete(&correlation, reply) {
                tracing::debug!("ignoring a response nobody waits for (late or duplicate)");
            }
        } else if let Some(key) = self.shared.notification_key(topic) {
            self.notify(key, &publish);
        } else {
            tracing::debug!(topic = %String::from_utf8_lossy(topic), "ignoring a message on an unexpected topic");
        }
    }

    fn notify(&self, key: Bytes, publish: &Publish) {
        let notification = match Notification::decode(&publish.payload) {
            Ok(notification) => notification,
            Err(error) => {
                tracing::warn!(%error, "ignoring an unreadable notification");
                return;
            }
        };
        let version = envelope::version(publish.properties.as_ref());
        self.shared.observe_version(version.as_ref());
        let event = match notification {
            Notification::Set { value } => {
                tracing::trace!(key = %ShownKey(&key), bytes = value.len(), "notification: set");
                KeyEvent::Set { value, version }
            }
            Notification::Delete => {
                tracing::trace!(key = %ShownKey(&key), "notification: delete");
                KeyEvent::Delete { version }
            }
        };
        for overflow in self.shared.observers.deliver(&key, event) {
            self.shared
                .runtime
                .spawn(overflow.resync(self.shared.clone()));
        }
    }

    /// Sends DISCONNECT and lets the event loop write it.
    ///
    /// A session the broker keeps after the client has gone (asked for with a session expiry)
    /// loses its subscriptions first: the client will not come back for them, and until the
    /// session expires a broker would match every message against the departed client's
    /// notification filter and queue what matches. rumqttc cannot give DISCONNECT a session
    /// expiry of zero, so the filters go with UNSUBSCRIBE, written before DISCONNECT on the
    /// same connection (so handled first); a full request channel skips them, as it would
    /// skip DISCONNECT.
    async fn disconnect(&mut self) {
        if self.resume_sessions {
            for topic in [
                &self.shared.notification_filter,
                &self.shared.response_topic,
            ] {
                let _ = self.shared.mqtt.try_unsubscribe(topic.as_str());
            }
        }
        if self.shared.mqtt.try_disconnect().is_err() {
            return;
        }
        let flushed = tokio::time::timeout(DISCONNECT_GRACE, async {
            loop {
                match self.eventloop.poll().await {
                    Ok(Event::Outgoing(Outgoing::Disconnect)) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        if flushed.is_err() {
            tracing::debug!("DISCONNECT not written within the grace period");
        }
    }
}

/// The next token, or never when there is no token to watch.
async fn next_token(tokens: &mut Option<watch::Receiver<Bytes>>) -> Bytes {
    if let Some(receiver) = tokens {
        if receiver.changed().await.is_ok() {
            return receiver.borrow_and_update().clone();
        }
        *tokens = None;
    }
    pending().await
}

#[cfg(test)]
mod tests {
    use rumqttc::v5::mqttbytes::v5::ConnectReturnCode;
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::{AsyncClient, MqttOptions};

    use super::*;
    use crate::client::options::ReconnectPolicy;
    use crate::client::session;

    fn connack() -> ConnAck {
        ConnAck {
            session_present: false,
            code: ConnectReturnCode::Success,
            properties: None,
        }
    }

    fn granted() -> Vec<SubscribeReasonCode> {
        vec![SubscribeReasonCode::Success(QoS::AtLeastOnce); 2]
    }

    /// Returns once every other task has done all it can: with time paused, a sleep ends
    /// only when the runtime is idle.
    async fn settle() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    fn link(shared: &Shared) -> LinkState {
        shared.link.borrow().clone()
    }

    /// A SUBACK that the session task handles after its connection was
    /// lost does not open the link for requests (nor start a resync) on the dead connection.
    #[tokio::test(start_paused = true)]
    async fn a_suback_handled_after_its_connection_dropped_leaves_the_link_connecting() {
        let (mqtt, eventloop) = AsyncClient::new(MqttOptions::new("t", "127.0.0.1", 9), 16);
        let shared = Arc::new(Shared::new(
            "127.0.0.1:1883".into(),
            "t".into(),
            Duration::from_secs(5),
            mqtt,
            tokio::runtime::Handle::current(),
        ));
        let (session_events, receiver) = mpsc::unbounded_channel();
        let mut task = EventLoopTask {
            shared: shared.clone(),
            eventloop,
            backoff: Backoff::new(ReconnectPolicy::default()),
            session: session_events,
            tokens: None,
            resume_sessions: false,
            outage: None,
        };
        tokio::spawn(session::run(
            shared.clone(),
            receiver,
            Backoff::new(ReconnectPolicy::default()),
        ));

        task.on_connack(connack());
        task.on_suback(granted());
        settle().await;
        assert!(matches!(link(&shared), LinkState::Ready));

        task.on_connection_lost();
        task.on_connack(connack());
        settle().await;
        assert!(
            matches!(link(&shared), LinkState::Connecting),
            "subscribing"
        );

        // The SUBACK arrives, then the connection drops before the session task runs.
        task.on_suback(granted());
        task.on_connection_lost();
        settle().await;
        assert!(
            matches!(link(&shared), LinkState::Connecting),
            "{:?} for a connection that is gone",
            link(&shared)
        );

        // The next connection opens it.
        task.on_connack(connack());
        task.on_suback(granted());
        settle().await;
        assert!(matches!(link(&shared), LinkState::Ready));
    }
}
