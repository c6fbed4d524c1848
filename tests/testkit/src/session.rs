//! What a broker keeps of a client that has gone: [`leftover_subscription`] (a state store
//! client's topics) and [`leftover_subscription_to`] (any topics).

use std::io;
use std::net::SocketAddr;

use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use statestore::protocol::topics;

use crate::within;

/// Takes over the session the broker at `addr` keeps for the state store client `client_id`,
/// which must have gone (the session must be there: an error otherwise), and tells whether it
/// still holds a subscription to the client's notification or response topics (see
/// [`leftover_subscription_to`]). The session is then taken, so ask once per client.
///
/// # Panics
/// When the answer does not come within [`crate::DEADLINE`].
pub async fn leftover_subscription(
    addr: SocketAddr,
    client_id: &str,
) -> io::Result<Option<String>> {
    let topics = [
        topics::notification_topic(client_id, b"k"),
        topics::response_topic(client_id),
    ];
    leftover_subscription_to(addr, client_id, &topics).await
}

/// Takes over the session the broker at `addr` keeps for the MQTT client `client_id`, which
/// must have gone (the session must be there: an error otherwise), and tells whether it still
/// holds a subscription matching one of `topics`: publishes to each, then to a marker topic
/// subscribed to now, and returns the first of those topics to arrive before the marker (one
/// publisher's messages arrive in the order it sent them), or `None`. The session is then
/// taken, so ask once per client.
///
/// # Panics
/// When the answer does not come within [`crate::DEADLINE`].
pub async fn leftover_subscription_to(
    addr: SocketAddr,
    client_id: &str,
    topics: &[String],
) -> io::Result<Option<String>> {
    let mut options = MqttOptions::new(client_id, addr.ip().to_string(), addr.port());
    options.set_clean_start(false);
    options.set_session_expiry_interval(Some(60));
    let (mqtt, mut events) = AsyncClient::new(options, 10);
    let marker = format!("marker/{client_id}");
    let mut published = false;
    let outcome = within("the takeover of a session", async {
        loop {
            match events.poll().await.map_err(io::Error::other)? {
                Event::Incoming(Packet::ConnAck(connack)) if !connack.session_present => {
                    return Err(io::Error::other(format!(
                        "the broker kept no session for {client_id}"
                    )));
                }
                Event::Incoming(Packet::ConnAck(_)) => mqtt
                    .subscribe(marker.as_str(), QoS::AtLeastOnce)
                    .await
                    .map_err(io::Error::other)?,
                Event::Incoming(Packet::SubAck(_)) if !published => {
                    published = true;
                    for topic in topics.iter().chain([&marker]) {
                        mqtt.publish(topic.as_str(), QoS::AtLeastOnce, false, "x")
                            .await
                            .map_err(io::Error::other)?;
                    }
                }
                Event::Incoming(Packet::Publish(publish)) => {
                    let topic = String::from_utf8_lossy(&publish.topic).into_owned();
                    return Ok((topic != marker).then_some(topic));
                }
                _ => {}
            }
        }
    })
    .await;
    let _ = mqtt.disconnect().await;
    outcome
}
