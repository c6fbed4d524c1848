//! rumqttc connections of the raw requester and the echo responder: Nagle off, the benchmark's
//! packet size limit, a request channel deep enough for every request in flight.

use std::net::SocketAddr;
use std::time::Duration;

use rumqttc::v5::mqttbytes::v5::{Packet, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use rumqttc::NetworkOptions;

use crate::wire::MAX_PACKET_SIZE;

/// Capacity of the request channel: four times the deepest in-flight count, so that
/// `try_publish` from the polling task never finds it full in practice.
pub const REQUEST_CHANNEL_CAPACITY: usize = 1024;

/// How long connecting and subscribing may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for a connection to `addr` as `client_id`.
pub fn options(client_id: &str, addr: SocketAddr) -> MqttOptions {
    let mut options = MqttOptions::new(client_id, addr.ip().to_string(), addr.port());
    options
        .set_keep_alive(Duration::from_secs(60))
        .set_clean_start(true)
        .set_max_packet_size(Some(MAX_PACKET_SIZE))
        .set_topic_alias_max(None);
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    network.set_connection_timeout(SETUP_TIMEOUT.as_secs());
    options.set_network_options(network);
    options
}

/// Connects to `addr` and subscribes to `filter` with QoS 1; returns once the broker granted
/// the subscription.
pub async fn connect(
    client_id: &str,
    addr: SocketAddr,
    filter: &str,
) -> Result<(AsyncClient, EventLoop), String> {
    let (client, mut eventloop) =
        AsyncClient::new(options(client_id, addr), REQUEST_CHANNEL_CAPACITY);
    client
        .subscribe(filter, QoS::AtLeastOnce)
        .await
        .map_err(|e| format!("{client_id}: cannot subscribe to {filter}: {e}"))?;
    let granted = async {
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::SubAck(ack))) => {
                    return if ack
                        .return_codes
                        .iter()
                        .all(|code| matches!(code, SubscribeReasonCode::Success(_)))
                    {
                        Ok(())
                    } else {
                        Err(format!("subscription refused: {:?}", ack.return_codes))
                    };
                }
                Ok(_) => {}
                Err(error) => return Err(format!("connection failed: {error}")),
            }
        }
    };
    match tokio::time::timeout(SETUP_TIMEOUT, granted).await {
        Ok(Ok(())) => Ok((client, eventloop)),
        Ok(Err(error)) => Err(format!("{client_id} to {addr}: {error}")),
        Err(_) => Err(format!(
            "{client_id} to {addr}: not subscribed within {SETUP_TIMEOUT:?}"
        )),
    }
}

/// Sends DISCONNECT and waits (briefly) until the connection is closed.
pub async fn disconnect(client: &AsyncClient, eventloop: &mut EventLoop) {
    if client.try_disconnect().is_err() {
        return;
    }
    let closed = async { while eventloop.poll().await.is_ok() {} };
    let _ = tokio::time::timeout(Duration::from_secs(1), closed).await;
}

/// Queues a QoS 1 publish without waiting, for the task that polls the event loop: if the
/// request channel is full, a separate task waits for room (awaiting here would deadlock, as
/// only this task drains the channel).
pub fn publish_now(
    client: &AsyncClient,
    topic: String,
    payload: bytes::Bytes,
    properties: rumqttc::v5::mqttbytes::v5::PublishProperties,
) -> Result<(), String> {
    use rumqttc::v5::{ClientError, Request};
    match client.try_publish_with_properties(topic, QoS::AtLeastOnce, false, payload, properties) {
        Ok(()) => Ok(()),
        Err(ClientError::TryRequest(Request::Publish(publish))) => {
            let client = client.clone();
            tokio::spawn(async move {
                let topic = String::from_utf8_lossy(&publish.topic).into_owned();
                let properties = publish.properties.unwrap_or_default();
                let _ = client
                    .publish_with_properties(
                        topic,
                        QoS::AtLeastOnce,
                        false,
                        publish.payload,
                        properties,
                    )
                    .await;
            });
            Ok(())
        }
        Err(error) => Err(format!("cannot publish: {error}")),
    }
}
