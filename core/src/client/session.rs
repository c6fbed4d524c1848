//! The task that makes each new connection usable: subscribes to the response topic and the
//! notification filter (checking the SUBACK, which rumqttc only logs), opens the gate for
//! requests, and re-registers observed keys.

use std::sync::Arc;
use std::time::Duration;

use rumqttc::v5::mqttbytes::v5::{Filter, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use tokio::sync::mpsc;

use super::backoff::Backoff;
use super::observe;
use super::shared::{LinkState, Shared};
use crate::Error;

/// What the event loop tells the session task.
#[derive(Debug)]
pub(crate) enum SessionEvent {
    /// A CONNACK arrived.
    Connected {
        /// Whether the broker kept the previous session (and so our subscriptions).
        session_present: bool,
        /// Its number ([`Shared::connection`] after the CONNACK).
        connection: u64,
    },
    /// A SUBACK arrived.
    SubAck(Vec<SubscribeReasonCode>),
    /// The connection failed.
    Disconnected,
}

enum Subscribed {
    Yes,
    /// The connection changed before the SUBACK: handle this event instead.
    Interrupted(SessionEvent),
    Refused(Error),
}

/// Handles the connection events until the event loop ends. A refused subscription on a
/// later connection is asked again after `backoff` (the broker's rules may change while the
/// connection stays up, and nothing else would subscribe again).
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut events: mpsc::UnboundedReceiver<SessionEvent>,
    mut backoff: Backoff,
) {
    let mut first = true;
    let mut session = SessionSubscriptions::default();
    // The connection to subscribe on again, and when.
    let mut retry: Option<(u64, Duration)> = None;
    let mut next = events.recv().await;
    while let Some(event) = next.take() {
        if let SessionEvent::Connected {
            session_present,
            connection,
        } = event
        {
            let subscribed = if session.needed(session_present) {
                subscribe(&shared, &mut events).await
            } else {
                Subscribed::Yes
            };
            match subscribed {
                Subscribed::Yes => {
                    backoff.reset();
                    session.acknowledged();
                    // Not for a connection lost meanwhile (its loss is queued behind this
                    // SUBACK): the link stays connecting, and the next connection resyncs.
                    if shared.set_link_of(connection, LinkState::Ready) {
                        if !first {
                            tokio::spawn(observe::resync(shared.clone(), connection));
                        }
                        first = false;
                    }
                }
                Subscribed::Interrupted(event) => {
                    next = Some(event);
                    continue;
                }
                Subscribed::Refused(error) => {
                    tracing::error!(%error, "the broker refused the client's subscriptions");
                    // A refusal on a connection that is gone changes nothing: the next one
                    // subscribes again.
                    let current = shared.set_link_of(connection, LinkState::Failed(error));
                    if current && first {
                        // `connect` reports the error; nothing more to do.
                        shared.cancel.cancel();
                        return;
                    }
                    if current {
                        retry = Some((connection, backoff.next_delay()));
                    }
                }
            }
        }
        next = match retry.take() {
            None => events.recv().await,
            // Any event of the connection supersedes the retry: a loss, or a new connection
            // (which subscribes on its own).
            Some((connection, delay)) => tokio::select! {
                event = events.recv() => event,
                () = tokio::time::sleep(delay) => Some(SessionEvent::Connected {
                    session_present: false,
                    connection,
                }),
            },
        };
    }
}

/// Whether the broker's session holds the client's subscriptions.
///
/// A resumed session is not enough: a SUBSCRIBE cut off by a connection loss may never have
/// reached the broker, and a session resumed after that would leave the client deaf to its
/// responses (every call timing out, observations never resynced) for as long as it lasts.
#[derive(Debug, Default)]
struct SessionSubscriptions {
    /// A SUBACK confirmed the subscriptions in the current session.
    acknowledged: bool,
}

impl SessionSubscriptions {
    /// A connection is up: whether to subscribe on it.
    fn needed(&mut self, session_present: bool) -> bool {
        if !session_present {
            self.acknowledged = false;
        }
        !self.acknowledged
    }

    /// The broker confirmed the subscriptions (or the session already had them).
    fn acknowledged(&mut self) {
        self.acknowledged = true;
    }
}

async fn subscribe(
    shared: &Shared,
    events: &mut mpsc::UnboundedReceiver<SessionEvent>,
) -> Subscribed {
    let filters = [
        Filter::new(shared.response_topic.clone(), QoS::AtLeastOnce),
        Filter::new(shared.notification_filter.clone(), QoS::AtLeastOnce),
    ];
    if shared.mqtt.subscribe_many(filters).await.is_err() {
        return Subscribed::Refused(Error::Closed);
    }
    match events.recv().await {
        Some(SessionEvent::SubAck(codes)) => check_suback(shared, &codes),
        Some(event) => Subscribed::Interrupted(event),
        None => Subscribed::Refused(Error::Closed),
    }
}

fn check_suback(shared: &Shared, codes: &[SubscribeReasonCode]) -> Subscribed {
    let topics = [&shared.response_topic, &shared.notification_filter];
    for (topic, code) in topics.iter().zip(codes) {
        if !matches!(code, SubscribeReasonCode::Success(_)) {
            return Subscribed::Refused(Error::Connection(format!(
                "{}: the broker refused the subscription to {topic} ({code:?}): check its \
                 authorization rules",
                shared.broker
            )));
        }
    }
    if codes.len() != topics.len() {
        return Subscribed::Refused(Error::Connection(format!(
            "{}: the broker answered {} subscription codes for {} topics",
            shared.broker,
            codes.len(),
            topics.len()
        )));
    }
    Subscribed::Yes
}

#[cfg(test)]
mod tests {
    use super::SessionSubscriptions;

    #[test]
    fn subscribes_until_a_session_has_acknowledged_the_subscriptions() {
        let mut session = SessionSubscriptions::default();
        assert!(session.needed(false), "first connection");
        // That SUBSCRIBE was cut off: the resumed session may not have it.
        assert!(session.needed(true));
        session.acknowledged();
        assert!(!session.needed(true), "a resumed session keeps them");
        assert!(session.needed(false), "a new session has none");
        assert!(
            session.needed(true),
            "nor has that session, resumed before its SUBACK"
        );
        session.acknowledged();
        assert!(!session.needed(true));
    }
}
