//! A stand-in for the state store on a real broker: an MQTT 5 client subscribed to the
//! request topic that hands every request to its caller, who answers however it likes (any
//! payload, any properties, late, twice, or not at all). It lets tests reach answers the real
//! service never gives.

use std::io;
use std::net::SocketAddr;

use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use statestore::protocol::{topics, Request};
use tokio::task::JoinHandle;

/// The largest packet the stand-in takes from the broker (the test services send values far
/// larger than clients do).
const MAX_PACKET: u32 = 1 << 26;
/// Capacity of the stand-in's request channel: answers wait when it is full.
const REQUEST_CHANNEL_CAPACITY: usize = 4096;

/// A request as the stand-in received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request, decoded.
    pub request: Request,
    /// Its MQTT properties (response topic, correlation data, user properties).
    pub properties: PublishProperties,
}

impl Received {
    /// The value of the user property `name`.
    pub fn user_property(&self, name: &str) -> Option<&str> {
        self.properties
            .user_properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Connects to the broker at `broker` as `<name>-<random>`, subscribes to the request topic,
/// and once the broker has granted the subscription (so that no request is missed), serves in
/// a task of the calling runtime: each request that decodes goes to `on_request`, with a client
/// to answer through. The task ends when aborted or when the connection fails.
///
/// `on_request` must not wait for a publish: rumqttc stalls when the task that polls its
/// connection waits for its own full channel. Spawn the answer instead.
pub async fn serve(
    broker: SocketAddr,
    name: &str,
    mut on_request: impl FnMut(&AsyncClient, Received) + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    let mut options = MqttOptions::new(
        format!("{name}-{}", fastrand::u64(..)),
        broker.ip().to_string(),
        broker.port(),
    );
    options.set_max_packet_size(Some(MAX_PACKET));
    let mut network = rumqttc::NetworkOptions::new();
    network.set_tcp_nodelay(true);
    options.set_network_options(network);
    let (client, mut eventloop) = AsyncClient::new(options, REQUEST_CHANNEL_CAPACITY);
    client
        .subscribe(topics::INVOKE_TOPIC, QoS::AtLeastOnce)
        .await
        .map_err(|e| io::Error::other(format!("{name}: cannot subscribe: {e}")))?;
    tokio::time::timeout(crate::DEADLINE, subscribed(&mut eventloop))
        .await
        .map_err(|_| {
            io::Error::other(format!(
                "{name}: no SUBACK from {broker} within {:?}",
                crate::DEADLINE
            ))
        })?
        .map_err(|e| io::Error::other(format!("{name}: connection to {broker} failed: {e}")))?;
    Ok(tokio::spawn(async move {
        while let Ok(event) = eventloop.poll().await {
            let Event::Incoming(Packet::Publish(publish)) = event else {
                continue;
            };
            let properties = publish.properties.unwrap_or_default();
            let Ok(request) = Request::decode(&publish.payload) else {
                continue;
            };
            on_request(
                &client,
                Received {
                    request,
                    properties,
                },
            );
        }
    }))
}

async fn subscribed(eventloop: &mut EventLoop) -> Result<(), rumqttc::v5::ConnectionError> {
    loop {
        if let Event::Incoming(Packet::SubAck(_)) = eventloop.poll().await? {
            return Ok(());
        }
    }
}
