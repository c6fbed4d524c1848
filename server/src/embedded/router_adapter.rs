//! The one place that knows the mqtt5 broker's router: the state store attaches to it as an
//! internal session (no TCP connection), subscribed to the invoke topic. Requests arrive as
//! full PUBLISH packets with the broker-stamped `x-mqtt-client-id`; responses and
//! notifications are routed back in; forbidden clients are cut off.
//!
//! `register_session`, `DeliveryLanes` and `QueueHandle` are public but low-level parts of
//! mqtt5 0.49 (pinned with `=`): keep every use of them in this file.

use std::sync::Arc;

use mqtt5::broker::router::{
    DeliveryLanes, LaneReceivers, MessageRouter, SubscriptionRequest, TakeoverNotice,
};
use mqtt5::broker::storage::QueueHandle;
use mqtt5::packet::publish::PublishPacket;
use mqtt5::{PropertyId, PropertyValue, QoS};
use statestore::protocol::topics::INVOKE_TOPIC;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error};

use crate::service::{stamped_by_broker, Inbound, Input, OutMessage, Outbound, UserProperties};
use crate::ServerError;

/// Requests the router may hold for us before it parks them in the session's overflow
/// queue (which [`receive`] drains too, so nothing is lost either way).
const LANE_CAPACITY: usize = 4096;

/// Messages taken from the overflow queue at once.
const QUEUE_BATCH: usize = 1024;

/// The internal session, subscribed to the invoke topic.
pub(crate) struct Attachment {
    router: Arc<MessageRouter>,
    session_id: String,
    lanes: LaneReceivers,
    queue: QueueHandle,
    takeover: oneshot::Receiver<TakeoverNotice>,
}

/// Registers the internal session and subscribes it to the invoke topic at QoS 2, so that
/// every request is delivered with the QoS it was published with.
pub(crate) async fn attach(router: Arc<MessageRouter>) -> Result<Attachment, ServerError> {
    // Random, so that no client can take the session over by connecting with its id.
    let session_id = format!("statestore-server-{:016x}", fastrand::u64(..));
    let (lanes, receivers) = DeliveryLanes::channel(LANE_CAPACITY);
    let (takeover_tx, takeover) = oneshot::channel();
    let queue = router.queue_handle(&session_id);
    router
        .register_session(session_id.clone(), lanes, queue.clone(), takeover_tx, true)
        .await;
    router
        .subscribe(SubscriptionRequest::new(
            session_id.clone(),
            INVOKE_TOPIC,
            QoS::ExactlyOnce,
        ))
        .await
        .map_err(|e| ServerError::Subscribe(e.to_string()))?;
    Ok(Attachment {
        router,
        session_id,
        lanes: receivers,
        queue,
        takeover,
    })
}

impl Attachment {
    /// Where [`publish`] sends from.
    pub fn publisher(&self) -> Publisher {
        Publisher {
            router: Arc::clone(&self.router),
            session_id: self.session_id.clone(),
        }
    }
}

/// Forwards requests and client disconnects to the service, in broker order, until
/// `cancel` fires or the service is gone. Requests are always taken before disconnect
/// events, so a KEYNOTIFY sent just before a disconnect is applied before the disconnect
/// drops it (the request reached our lane before the broker reported the disconnect).
pub(crate) async fn receive(
    mut attachment: Attachment,
    input: mpsc::Sender<Input>,
    mut gone: mpsc::UnboundedReceiver<String>,
    cancel: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            message = attachment.lanes.recv() => match message {
                Some(message) => Input::Request(inbound(message.publish)),
                None => break,
            },
            () = attachment.queue.notified() => {
                if !forward_overflow(&attachment.queue, &input).await {
                    break;
                }
                continue;
            }
            Some(client_id) = gone.recv() => {
                // The broker reports a disconnect after it let a reconnect with the same
                // id through: if that reconnect already happened, the registrations it
                // made must not be dropped for the old connection.
                if attachment.router.is_connected(&client_id).await {
                    debug!(client_id, "client reconnected before its disconnect was reported: keeping its registrations");
                    continue;
                }
                Input::ClientGone(client_id)
            }
            _ = &mut attachment.takeover => {
                error!("the state store's broker session was taken over: no more requests");
                break;
            }
        };
        if input.send(next).await.is_err() {
            break;
        }
    }
    attachment
        .router
        .unregister_client(&attachment.session_id)
        .await;
    debug!("router adapter detached");
}

/// Forwards what the router parked in the overflow queue; false if the service is gone.
async fn forward_overflow(queue: &QueueHandle, input: &mpsc::Sender<Input>) -> bool {
    loop {
        let batch = queue.take(QUEUE_BATCH).await;
        if batch.is_empty() {
            return true;
        }
        for message in batch {
            let request = Input::Request(inbound(message.to_publish_packet()));
            if input.send(request).await.is_err() {
                return false;
            }
        }
    }
}

/// A request as the service sees it.
fn inbound(packet: PublishPacket) -> Inbound {
    let properties = &packet.properties;
    let users = properties
        .get_all(PropertyId::UserProperty)
        .unwrap_or(&[])
        .iter()
        .filter_map(|value| match value {
            PropertyValue::Utf8StringPair(name, value) => Some((name.as_str(), value.as_str())),
            _ => None,
        });
    let user_properties = UserProperties::collect(users);
    let response_topic = match properties.get(PropertyId::ResponseTopic) {
        Some(PropertyValue::Utf8String(topic)) => Some(topic.clone()),
        _ => None,
    };
    let correlation_data = match properties.get(PropertyId::CorrelationData) {
        Some(PropertyValue::BinaryData(data)) => Some(data.clone()),
        _ => None,
    };
    Inbound {
        identity: stamped_by_broker(user_properties.broker_client_id.clone()),
        payload: packet.payload,
        qos: packet.qos as u8,
        response_topic,
        correlation_data,
        properties: user_properties,
    }
}

/// Routes the service's messages into the broker.
pub(crate) struct Publisher {
    router: Arc<MessageRouter>,
    session_id: String,
}

impl Publisher {
    /// Carries out the service's actions until it stops. Routing never waits for a slow
    /// subscriber: the deadline is "now", so a client that does not read has its messages
    /// parked in its own session queue and delays nobody else.
    pub async fn run(self, mut output: mpsc::Receiver<Outbound>) {
        while let Some(action) = output.recv().await {
            match action {
                Outbound::Publish(message) => {
                    let packet = packet(message);
                    self.router
                        .route_message_with_deadline(
                            &packet,
                            Some(&self.session_id),
                            Instant::now(),
                        )
                        .await;
                }
                Outbound::Disconnect(client_id) => self.router.disconnect_client(&client_id).await,
            }
        }
    }
}

fn packet(message: OutMessage) -> PublishPacket {
    let mut packet = PublishPacket::new(message.topic, message.payload, QoS::AtLeastOnce);
    if let Some(data) = message.correlation_data {
        packet.properties.set_correlation_data(data);
    }
    for (name, value) in message.user_properties {
        packet.properties.add_user_property(name.to_owned(), value);
    }
    packet
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn packets_round_trip_through_the_conversions() {
        let message = OutMessage {
            topic: "clients/c/r".to_owned(),
            payload: Bytes::from_static(b"+OK\r\n"),
            correlation_data: Some(Bytes::from_static(&[0, 255])),
            user_properties: vec![
                ("__srcId", "c".to_owned()),
                ("x-mqtt-client-id", "c".to_owned()),
            ],
        };
        let mut sent = packet(message);
        sent.properties.set_response_topic("clients/c/r".to_owned());
        assert_eq!(&sent.payload[..], b"+OK\r\n");
        let request = inbound(sent);
        assert_eq!(request.qos, 1);
        assert_eq!(request.response_topic.as_deref(), Some("clients/c/r"));
        assert_eq!(request.correlation_data.as_deref(), Some(&[0, 255][..]));
        assert_eq!(request.identity, Ok("c".to_owned()));
    }
}
