//! Polls the rumqttc event loop: (re)subscribes on every connection, forwards requests,
//! reconnects with backoff, and reports readiness once.

use std::time::Duration;

use rumqttc::v5::mqttbytes::v5::{Packet, Publish, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop};
use rumqttc::Outgoing;
use statestore::protocol::topics::INVOKE_TOPIC;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::service::{claimed_by_client, Inbound, Input, UserProperties};
use crate::ServerError;

const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

type Ready = oneshot::Sender<Result<(), ServerError>>;

/// Runs until the publisher's DISCONNECT has gone out (orderly shutdown) or `cancel` fires
/// while disconnected.
pub(super) async fn run(
    mut event_loop: EventLoop,
    client: AsyncClient,
    requests: mpsc::UnboundedSender<Input>,
    ready: Ready,
    cancel: CancellationToken,
) {
    let mut ready = Some(ready);
    // Dropped on cancel, so the service sees the end of its input and winds down.
    let mut requests = Some(requests);
    let mut backoff = BACKOFF_MIN;
    loop {
        let event = tokio::select! {
            event = event_loop.poll() => event,
            () = cancel.cancelled(), if requests.is_some() => {
                requests = None;
                continue;
            }
        };
        match event {
            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                info!(
                    client_id = event_loop.options.client_id(),
                    session_present = ack.session_present,
                    "connected to the broker"
                );
                backoff = BACKOFF_MIN;
                // Subscribing on every connection also covers a session the broker lost.
                let client = client.clone();
                tokio::spawn(async move {
                    if let Err(error) = client.subscribe(INVOKE_TOPIC, QoS::ExactlyOnce).await {
                        debug!(%error, "could not queue the subscription");
                    }
                });
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                let refused: Vec<_> = ack
                    .return_codes
                    .iter()
                    .filter(|code| !matches!(code, SubscribeReasonCode::Success(_)))
                    .collect();
                if refused.is_empty() {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(Ok(()));
                    }
                } else {
                    let reason = format!("{refused:?}");
                    error!(
                        reason,
                        "the broker refused the subscription to the invoke topic"
                    );
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(Err(ServerError::Subscribe(reason)));
                        return;
                    }
                }
            }
            Ok(Event::Incoming(Packet::Publish(publish))) => {
                if let Some(requests) = &requests {
                    forward(publish, requests);
                }
            }
            Ok(Event::Incoming(Packet::Disconnect(disconnect))) => {
                warn!(reason = ?disconnect.reason_code, "the broker disconnected the server");
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) => {
                debug!("disconnected from the broker");
                return;
            }
            Ok(_) => {}
            Err(error) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(ServerError::Connect {
                        address: String::new(),
                        reason: error.to_string(),
                    }));
                    return;
                }
                if requests.is_none() {
                    return;
                }
                warn!(error = %error, retry_in = ?backoff, "lost the broker connection");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = cancel.cancelled() => return,
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// Hands a request to the service; anything else on other topics is ignored.
fn forward(publish: Publish, requests: &mpsc::UnboundedSender<Input>) {
    if publish.topic != INVOKE_TOPIC.as_bytes() {
        debug!(topic = ?publish.topic, "ignoring a message outside the invoke topic");
        return;
    }
    let properties = publish.properties.unwrap_or_default();
    let user_properties = UserProperties::collect(
        properties
            .user_properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    );
    let identity = claimed_by_client(
        user_properties.source_id.clone(),
        properties.response_topic.as_deref(),
    );
    let qos = match publish.qos {
        QoS::AtMostOnce => 0,
        QoS::AtLeastOnce => 1,
        QoS::ExactlyOnce => 2,
    };
    let _ = requests.send(Input::Request(Inbound {
        payload: publish.payload,
        qos,
        response_topic: properties.response_topic,
        correlation_data: properties.correlation_data,
        identity,
        properties: user_properties,
    }));
}
