//! A malicious state store: on a real Mosquitto, it answers each request according to its
//! key with a truncated, oversized, wrongly typed, duplicated, misaddressed, late or missing
//! answer, and floods observers with broken and valid notifications. Clients in every
//! language run the catalogue `tests/chaos/hostile.json` against it
//! (`statestore-chaos hostile` prints `hostile ready on 127.0.0.1:PORT` and serves until
//! stdin is closed).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::AsyncClient;
use statestore::protocol::{topics, Notification, Request};
use statestore_testkit::stand_in::{self, Received};

/// Size of the `h/huge` value: half the default maximum packet of the local server.
pub const HUGE: usize = 2 * 1024 * 1024;
/// Depth of the `h/nested` array.
const NESTING: usize = 100_000;
/// Valid notifications sent to an observer of `h/notify-storm` before the final one.
pub const STORM: usize = 2000;
/// Notifications (of [`FLOOD_VALUE`] bytes each) sent to an observer of `h/notify-flood`:
/// 100 MiB that an observer which does not read must not end up holding.
pub const FLOOD: usize = 50_000;
/// See [`FLOOD`].
pub const FLOOD_VALUE: usize = 2048;

/// The answer to one request: payload and user properties, how often, after how long, and
/// with which correlation data.
struct Answer {
    payload: Bytes,
    properties: Vec<(String, String)>,
    times: usize,
    delay: Duration,
    correlation: Correlation,
}

enum Correlation {
    Echo,
    Random,
    Missing,
}

impl Answer {
    fn ok(payload: impl Into<Bytes>) -> Answer {
        Answer {
            payload: payload.into(),
            properties: vec![("__stat".into(), "200".into())],
            times: 1,
            delay: Duration::ZERO,
            correlation: Correlation::Echo,
        }
    }
}

/// What the malicious service answers to `request` (`None`: nothing).
fn answer(request: &Request) -> Option<Answer> {
    let key = request.key().clone();
    let is_get = matches!(request, Request::Get { .. });
    let value = |v: &[u8]| {
        let mut payload = format!("${}\r\n", v.len()).into_bytes();
        payload.extend_from_slice(v);
        payload.extend_from_slice(b"\r\n");
        Bytes::from(payload)
    };
    let normal = if is_get {
        value(b"v")
    } else if matches!(request, Request::Del { .. } | Request::VDel { .. }) {
        Bytes::from_static(b":1\r\n")
    } else {
        Bytes::from_static(b"+OK\r\n")
    };
    Some(match &key[..] {
        b"h/truncated" => Answer::ok(&b"$10\r\nabc"[..]),
        b"h/oversized-length" => Answer::ok(&b"$999999999999999999\r\n"[..]),
        b"h/negative-length" => Answer::ok(&b"$-5\r\n"[..]),
        b"h/wrong-type" => Answer::ok(if is_get {
            &b":5\r\n"[..]
        } else {
            &b"$1\r\nv\r\n"[..]
        }),
        // Random bytes after a NUL: never a RESP type marker, so the answer is garbage whatever
        // the draw (`h/dash-garbage` covers a leading `-`).
        b"h/garbage" => Answer::ok(
            std::iter::once(0u8)
                .chain((0..63).map(|_| fastrand::u8(..)))
                .collect::<Vec<u8>>(),
        ),
        b"h/dash-garbage" => Answer::ok(&b"-not an error line\r\n"[..]),
        b"h/empty" => Answer::ok(Bytes::new()),
        b"h/nested" => Answer::ok(b"*1\r\n".repeat(NESTING)),
        b"h/huge" => Answer::ok(if is_get {
            value(&vec![b'x'; HUGE])
        } else {
            normal
        }),
        b"h/invalid-utf8" => Answer::ok(if is_get {
            value(b"\xff\xfe\x00\x80")
        } else {
            normal
        }),
        b"h/twice" => Answer {
            times: 2,
            ..Answer::ok(normal)
        },
        b"h/wrong-correlation" => Answer {
            correlation: Correlation::Random,
            ..Answer::ok(normal)
        },
        b"h/no-correlation" => Answer {
            correlation: Correlation::Missing,
            ..Answer::ok(normal)
        },
        b"h/late" => Answer {
            delay: Duration::from_millis(1500),
            ..Answer::ok(normal)
        },
        b"h/silent" => return None,
        b"h/stat-500" => Answer {
            properties: vec![
                ("__stat".into(), "500".into()),
                ("__stMsg".into(), "internal failure".into()),
            ],
            ..Answer::ok(Bytes::new())
        },
        b"h/stat-garbage" => Answer {
            properties: vec![("__stat".into(), "two hundred".into())],
            ..Answer::ok(normal)
        },
        b"h/bad-ts" => Answer {
            properties: vec![
                ("__stat".into(), "200".into()),
                ("__ts".into(), "yesterday:-1:?".into()),
            ],
            ..Answer::ok(normal)
        },
        b"h/error-text" => Answer::ok(&b"-ERR something nobody documented\r\n"[..]),
        _ => Answer::ok(normal),
    })
}

/// Connects to the broker at `broker` and serves until the returned task is aborted.
pub async fn start(broker: SocketAddr) -> Result<tokio::task::JoinHandle<()>, String> {
    stand_in::serve(broker, "hostile", |client, received: Received| {
        let Some(topic) = received.properties.response_topic.clone() else {
            return;
        };
        let requester = received.user_property("__srcId").map(str::to_owned);
        tokio::spawn(respond(
            client.clone(),
            received.request,
            topic,
            received.properties.correlation_data,
            requester,
        ));
    })
    .await
    .map_err(|e| format!("hostile service: {e}"))
}

async fn respond(
    client: AsyncClient,
    request: Request,
    topic: String,
    correlation: Option<Bytes>,
    requester: Option<String>,
) {
    let storm =
        matches!(&request, Request::KeyNotify { stop: false, key } if key == "h/notify-storm");
    let flood =
        matches!(&request, Request::KeyNotify { stop: false, key } if key == "h/notify-flood");
    let Some(answer) = answer(&request) else {
        return;
    };
    tokio::time::sleep(answer.delay).await;
    let correlation_data = match answer.correlation {
        Correlation::Echo => correlation,
        Correlation::Random => Some(Bytes::from(
            (0..16).map(|_| fastrand::u8(..)).collect::<Vec<_>>(),
        )),
        Correlation::Missing => None,
    };
    for _ in 0..answer.times {
        let properties = PublishProperties {
            correlation_data: correlation_data.clone(),
            user_properties: answer.properties.clone(),
            ..PublishProperties::default()
        };
        let _ = client
            .publish_with_properties(
                topic.clone(),
                QoS::AtLeastOnce,
                false,
                answer.payload.clone(),
                properties,
            )
            .await;
    }
    if let (true, Some(id)) = (storm, &requester) {
        notify_storm(&client, id).await;
    }
    if let (true, Some(id)) = (flood, &requester) {
        notify_flood(&client, id).await;
    }
}

/// Broken notifications, one for a key nobody observes, a huge one, then [`STORM`] valid
/// ones and `NOTIFY SET VALUE final`: an observer must see exactly the valid ones.
async fn notify_storm(client: &AsyncClient, requester: &str) {
    let topic = topics::notification_topic(requester, b"h/notify-storm");
    let publish = |topic: String, payload: Bytes| {
        let client = client.clone();
        async move {
            let properties = PublishProperties {
                user_properties: vec![("__ts".into(), "000000000000001:00000:hostile".into())],
                ..PublishProperties::default()
            };
            let _ = client
                .publish_with_properties(topic, QoS::AtLeastOnce, false, payload, properties)
                .await;
        }
    };
    let set = |value: &[u8]| {
        Notification::Set {
            value: Bytes::copy_from_slice(value),
        }
        .encode()
    };
    publish(
        topic.clone(),
        Bytes::from_static(b"\x00\xffnot resp at all"),
    )
    .await;
    publish(
        topic.clone(),
        Bytes::from_static(b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET"),
    )
    .await;
    publish(
        topic.clone(),
        Bytes::from_static(b"*2\r\n$6\r\nNOTIFY\r\n$7\r\nEXPLODE\r\n"),
    )
    .await;
    publish(
        format!(
            "{}/{}/command/notify/ZZ-not-hex",
            topics::NOTIFY_PREFIX,
            hex::encode_upper(requester)
        ),
        set(b"to a key that is not hex"),
    )
    .await;
    publish(
        topics::notification_topic(requester, b"h/nobody-observes"),
        set(b"stray"),
    )
    .await;
    publish(topic.clone(), set(&vec![b'y'; HUGE])).await;
    for n in 0..STORM {
        publish(topic.clone(), set(n.to_string().as_bytes())).await;
    }
    publish(topic, set(b"final")).await;
}

/// [`FLOOD`] valid notifications as fast as the broker takes them, then `final`.
async fn notify_flood(client: &AsyncClient, requester: &str) {
    let topic = topics::notification_topic(requester, b"h/notify-flood");
    let value = Notification::Set {
        value: Bytes::from(vec![b'f'; FLOOD_VALUE]),
    }
    .encode();
    for _ in 0..FLOOD {
        let _ = client
            .publish_with_properties(
                topic.clone(),
                QoS::AtLeastOnce,
                false,
                value.clone(),
                PublishProperties::default(),
            )
            .await;
    }
    let done = Notification::Set {
        value: Bytes::from_static(b"final"),
    }
    .encode();
    let _ = client
        .publish_with_properties(
            topic,
            QoS::AtLeastOnce,
            false,
            done,
            PublishProperties::default(),
        )
        .await;
}
