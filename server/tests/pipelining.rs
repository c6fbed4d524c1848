//! A client with many messages in flight gets every packet the embedded broker owes it, once
//! and in order: the broker writes the acknowledgements and deliveries it has ready together,
//! and none may be lost or reordered on the way. The same run on Mosquitto checks the test.

use std::net::SocketAddr;

use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rumqttc::NetworkOptions;
use statestore_testkit::{embedded, within, Mosquitto};

/// Enough to wrap the client's packet identifiers many times over.
const MESSAGES: u32 = 3000;

/// The client's packet identifiers run from 1 to this and start again; an identifier whose
/// PUBACK never came blocks the client when it comes round again, so a lost PUBACK stops the
/// run within this many messages instead of passing unnoticed.
const IDENTIFIERS: u16 = 16;

/// One client publishes [`MESSAGES`] QoS 1 messages to a topic it subscribes to, as fast as
/// the broker acknowledges them: each PUBACK, and each message back in the order sent.
async fn every_ack_and_delivery_arrives(addr: SocketAddr, broker: &str) {
    let id = format!("pipelining-{broker}");
    let topic = format!("pipelined/{broker}");
    let mut options = MqttOptions::new(&id, addr.ip().to_string(), addr.port());
    options.set_outgoing_inflight_upper_limit(IDENTIFIERS);
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    options.set_network_options(network);
    let (client, mut events) = AsyncClient::new(options, 64);
    client.subscribe(&topic, QoS::AtLeastOnce).await.unwrap();
    within(&format!("{broker}: the SUBACK"), async {
        while !matches!(
            events.poll().await.expect("subscribe"),
            Event::Incoming(Packet::SubAck(_))
        ) {}
    })
    .await;

    let publisher = client.clone();
    let publish_topic = topic.clone();
    let publishing = tokio::spawn(async move {
        for seq in 0..MESSAGES {
            publisher
                .publish(
                    &publish_topic,
                    QoS::AtLeastOnce,
                    false,
                    seq.to_be_bytes().to_vec(),
                )
                .await
                .unwrap();
        }
    });

    let (mut acks, mut delivered) = (0u32, 0u32);
    within(
        &format!("{broker}: {MESSAGES} PUBACKs and deliveries"),
        async {
            while acks < MESSAGES || delivered < MESSAGES {
                match events.poll().await.expect("poll") {
                    Event::Incoming(Packet::PubAck(_)) => acks += 1,
                    Event::Incoming(Packet::Publish(publish)) => {
                        let seq = u32::from_be_bytes(publish.payload[..].try_into().unwrap());
                        assert_eq!(
                            seq, delivered,
                            "{broker}: message {seq} came when {delivered} was due"
                        );
                        delivered += 1;
                    }
                    _ => {}
                }
            }
        },
    )
    .await;
    assert_eq!((acks, delivered), (MESSAGES, MESSAGES), "{broker}");
    publishing.await.unwrap();
    client.disconnect().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelining_client_gets_every_ack_and_delivery_in_order() {
    let server = embedded().await;
    every_ack_and_delivery_arrives(server.local_addr(), "embedded").await;
    let mosquitto = Mosquitto::start().expect("mosquitto (run scripts/setup.sh)");
    every_ack_and_delivery_arrives(mosquitto.addr(), "mosquitto").await;
}
