//! The embedded broker's routing of messages to wildcard subscriptions (it looks filters up by
//! their literal leading levels): each filter gets exactly the topics MQTT says it matches,
//! with subscriptions of sessions whose clients have gone, and after unsubscribing. The same
//! table runs on Mosquitto, which checks the table.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use statestore_testkit::{embedded, within, Mosquitto};

const TOPICS: &[&str] = &[
    "a", "a/b", "a/b/c", "a/x/c", "a/b/c/d", "/a", "/a/b", "b", "a/", "$app/x",
];

/// Each filter and the topics of [`TOPICS`] it matches.
const FILTERS: &[(&str, &[&str])] = &[
    (
        "#",
        &[
            "a", "a/b", "a/b/c", "a/x/c", "a/b/c/d", "/a", "/a/b", "b", "a/",
        ],
    ),
    ("a/#", &["a", "a/b", "a/b/c", "a/x/c", "a/b/c/d", "a/"]),
    ("a/b/#", &["a/b", "a/b/c", "a/b/c/d"]),
    ("a/+", &["a/b", "a/"]),
    ("a/+/c", &["a/b/c", "a/x/c"]),
    ("+/b/+", &["a/b/c"]),
    ("+", &["a", "b"]),
    ("/+", &["/a"]),
    ("/a/#", &["/a", "/a/b"]),
    ("+/+", &["a/b", "/a", "a/"]),
    ("$app/#", &["$app/x"]),
    ("a/b/c/d/#", &["a/b/c/d"]),
];

async fn connect(addr: SocketAddr, id: &str, clean: bool) -> (AsyncClient, EventLoop) {
    let mut options = MqttOptions::new(id, addr.ip().to_string(), addr.port());
    options.set_clean_start(clean);
    options.set_session_expiry_interval(Some(300));
    let (client, mut events) = AsyncClient::new(options, 64);
    within("CONNACK", async {
        loop {
            if let Event::Incoming(Packet::ConnAck(_)) = events.poll().await.expect("connect") {
                return;
            }
        }
    })
    .await;
    (client, events)
}

/// Subscribes to `filters` (and to `marker`), waiting for the SUBACKs.
async fn subscribe(client: &AsyncClient, events: &mut EventLoop, filters: &[&str]) {
    for filter in filters {
        client.subscribe(*filter, QoS::AtLeastOnce).await.unwrap();
    }
    within("SUBACKs", async {
        let mut acks = 0;
        while acks < filters.len() {
            if let Event::Incoming(Packet::SubAck(_)) = events.poll().await.expect("subscribe") {
                acks += 1;
            }
        }
    })
    .await;
}

/// The topics `events` receives until `marker` arrives (one publisher's messages arrive in
/// the order it sent them), each once at most.
async fn received(events: &mut EventLoop, marker: &str) -> BTreeSet<String> {
    within("the marker message", async {
        let mut topics = BTreeSet::new();
        loop {
            if let Event::Incoming(Packet::Publish(publish)) = events.poll().await.expect("poll") {
                let topic = String::from_utf8(publish.topic.to_vec()).unwrap();
                if topic == marker {
                    return topics;
                }
                assert!(topics.insert(topic.clone()), "{topic} delivered twice");
            }
        }
    })
    .await
}

/// Publishes to each of [`TOPICS`], then to `marker`.
async fn publish_all(publisher: &AsyncClient, marker: &str) {
    for topic in TOPICS.iter().copied().chain([marker]) {
        publisher
            .publish(topic, QoS::AtLeastOnce, false, "x")
            .await
            .unwrap();
    }
}

async fn routes_as_mqtt_says(addr: SocketAddr, broker: &str) {
    let marker = format!("marker/{broker}");
    // Sessions kept for clients that have gone, holding filters of every shape.
    for (i, (filter, _)) in FILTERS.iter().enumerate() {
        let (client, mut events) = connect(addr, &format!("gone-{broker}-{i}"), false).await;
        subscribe(&client, &mut events, &[filter, "gone/#"]).await;
        client.disconnect().await.unwrap();
        while !matches!(
            events.poll().await,
            Ok(Event::Outgoing(rumqttc::Outgoing::Disconnect)) | Err(_)
        ) {}
    }
    let (publisher, mut publishing) = connect(addr, &format!("publisher-{broker}"), true).await;
    tokio::spawn(async move { while publishing.poll().await.is_ok() {} });
    for (i, (filter, expected)) in FILTERS.iter().enumerate() {
        let id = format!("subscriber-{broker}-{i}");
        let (client, mut events) = connect(addr, &id, true).await;
        subscribe(&client, &mut events, &[filter, &marker]).await;
        publish_all(&publisher, &marker).await;
        let expected: BTreeSet<String> = expected.iter().map(|t| t.to_string()).collect();
        assert_eq!(
            received(&mut events, &marker).await,
            expected,
            "{broker}: {filter}"
        );

        // Unsubscribed, the filter gets nothing more.
        client.unsubscribe(*filter).await.unwrap();
        within("UNSUBACK", async {
            while !matches!(
                events.poll().await,
                Ok(Event::Incoming(Packet::UnsubAck(_)))
            ) {}
        })
        .await;
        publish_all(&publisher, &marker).await;
        assert_eq!(
            received(&mut events, &marker).await,
            BTreeSet::new(),
            "{broker}: {filter} after UNSUBSCRIBE"
        );
        client.disconnect().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcard_filters_get_exactly_their_topics() {
    let server = embedded().await;
    routes_as_mqtt_says(server.local_addr(), "embedded").await;
    let mosquitto = Mosquitto::start().expect("mosquitto (run scripts/setup.sh)");
    routes_as_mqtt_says(mosquitto.addr(), "mosquitto").await;
}
