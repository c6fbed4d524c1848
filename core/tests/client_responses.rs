//! The client against a scripted service on Mosquitto: the exact request envelope, every
//! service error, RPC-level failures, odd responses, timeouts, shutdown with calls in flight
//! and the sharing of KEYNOTIFY registrations.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use statestore::protocol::{Request, ServiceError};
use statestore::{Client, DeleteOptions, Error, Hlc, SetOptions};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Received, Reply, Scripted};
use statestore_testkit::Mosquitto;

async fn start(
    script: impl Fn(&Received) -> Option<Reply> + Send + Sync + 'static,
) -> (Mosquitto, Scripted, Client) {
    let broker = Mosquitto::start().expect("start mosquitto");
    let service = Scripted::start(broker.addr(), script).await;
    let client = Client::connect(kit::quick(broker.addr()))
        .await
        .expect("connect");
    (broker, service, client)
}

/// Answers like a minimal service: +OK to SET and KEYNOTIFY, nil to GET, :1 to deletes.
fn plain(request: &Received) -> Option<Reply> {
    Some(
        match request.request {
            Request::Get { .. } => Reply::ok(b"$-1\r\n"),
            Request::Del { .. } | Request::VDel { .. } => Reply::ok(b":1\r\n"),
            _ => Reply::ok(b"+OK\r\n"),
        }
        .with("__ts", "1700000000000:0:StateStore"),
    )
}

#[tokio::test]
async fn requests_carry_the_envelope_of_the_sdks() {
    let (_broker, service, client) = start(plain).await;
    let token = Hlc::new(1_700_000_000_000, "StateStore");
    client
        .set(
            "k",
            "v",
            SetOptions::default()
                .fencing_token(token.clone())
                .persist(true)
                .timeout(Duration::from_millis(1500)),
        )
        .await
        .unwrap();
    client.get("k").await.unwrap();
    client
        .delete("k", DeleteOptions::default().fencing_token(token.clone()))
        .await
        .unwrap();
    let received = service.wait_received(3).await;

    let set = &received[0];
    let props = &set.properties;
    assert_eq!(
        props.response_topic.as_deref(),
        Some(
            format!(
                "clients/{}/services/statestore/_any_/command/invoke/response",
                client.client_id()
            )
            .as_str()
        )
    );
    assert_eq!(props.correlation_data.as_ref().map(|c| c.len()), Some(16));
    assert_eq!(props.message_expiry_interval, Some(2), "1.5 s rounded up");
    assert_eq!(
        props.content_type.as_deref(),
        Some("application/octet-stream")
    );
    assert_eq!(props.payload_format_indicator, Some(0));
    assert_eq!(set.user_property("__srcId"), Some(client.client_id()));
    assert_eq!(set.user_property("__protVer"), Some("1.0"));
    assert_eq!(set.user_property("__ft"), Some(token.to_string().as_str()));
    assert_eq!(set.user_property("aio-persistence"), Some("true"));
    let sent_ts: Hlc = set.user_property("__ts").unwrap().parse().unwrap();
    assert_eq!(sent_ts.node, client.client_id());

    let get = &received[1];
    assert_eq!(get.user_property("__ft"), None);
    assert_eq!(get.user_property("aio-persistence"), None);
    assert_eq!(
        get.properties.message_expiry_interval,
        Some(2),
        "client default 2 s"
    );
    let get_ts: Hlc = get.user_property("__ts").unwrap().parse().unwrap();
    assert!(get_ts > sent_ts, "one clock, always advancing");
    assert_ne!(
        get.properties.correlation_data,
        set.properties.correlation_data
    );

    assert_eq!(
        received[2].user_property("__ft"),
        Some(token.to_string().as_str())
    );
}

#[tokio::test]
async fn every_service_error_maps_to_its_variant() {
    let texts = [
        ("the request timestamp is too far in the future; ensure that the client and broker system clocks are synchronized", ServiceError::TimestampSkew),
        ("a fencing token is required for this request", ServiceError::FencingTokenRequired),
        ("the request fencing token timestamp is too far in the future; ensure that the client and broker system clocks are synchronized", ServiceError::FencingTokenSkew),
        ("the request fencing token is a lower version than the fencing token protecting the resource", ServiceError::FencingTokenLowerVersion),
        ("the request fencing token is a lower version that the fencing token protecting the resource", ServiceError::FencingTokenLowerVersion),
        ("the quota has been exceeded", ServiceError::QuotaExceeded),
        ("syntax error", ServiceError::SyntaxError),
        ("not authorized", ServiceError::NotAuthorized),
        ("unknown command", ServiceError::UnknownCommand),
        ("wrong number of arguments", ServiceError::WrongNumberOfArguments),
        ("missing timestamp", ServiceError::MissingTimestamp),
        ("malformed timestamp", ServiceError::MalformedTimestamp),
        ("the key length is zero", ServiceError::KeyLengthZero),
        ("the disk is on fire", ServiceError::Unknown("the disk is on fire".into())),
    ];
    let (_broker, _service, client) = start(|request| {
        let Request::Set { value, .. } = &request.request else {
            return None;
        };
        // The value says which error to answer, in both spellings of the document.
        let text = std::str::from_utf8(value).unwrap();
        Some(Reply::ok(format!("-ERR {text}\r\n").as_bytes()))
    })
    .await;
    for (text, expected) in texts {
        let err = client
            .set("k", text, SetOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err, Error::Service(expected.clone()), "{text}");
        assert!(!err.outcome_unknown());
    }
}

#[tokio::test]
async fn document_spellings_of_responses_are_accepted() {
    let (_broker, _service, client) = start(|request| {
        Some(match request.request {
            Request::Set { .. } => Reply::ok(b"-1\r\n"),
            Request::VDel { .. } => Reply::ok(b"-1\r\n"),
            _ => Reply::ok(b"-ERR: syntax error\r\n"),
        })
    })
    .await;
    assert!(
        !client
            .set("k", "v", SetOptions::default())
            .await
            .unwrap()
            .applied
    );
    assert_eq!(
        client
            .vdel("k", "v", DeleteOptions::default())
            .await
            .unwrap()
            .outcome,
        statestore::DeleteOutcome::ValueMismatch
    );
    assert_eq!(
        client.get("k").await,
        Err(Error::Service(ServiceError::SyntaxError))
    );
}

#[tokio::test]
async fn rpc_failures_and_odd_responses() {
    let (_broker, service, client) = start(|request| {
        let key = request.request.key().clone();
        Some(match &key[..] {
            b"status-503" => Reply {
                payload: Default::default(),
                user_properties: vec![
                    ("__stat".into(), "503".into()),
                    ("__stMsg".into(), "service unavailable".into()),
                ],
                gate: None,
            },
            b"no-status" => Reply {
                payload: bytes::Bytes::from_static(b"+OK\r\n"),
                user_properties: vec![],
                gate: None,
            },
            b"garbage" => Reply::ok(b"hello"),
            b"wrong-type" => Reply::ok(b":5\r\n"),
            b"bad-ts" => Reply::ok(b"+OK\r\n").with("__ts", "not a clock"),
            b"future-ts" => Reply::ok(b"+OK\r\n").with("__ts", "999999999999999:0:StateStore"),
            _ => Reply::ok(b"+OK\r\n"),
        })
    })
    .await;
    let set = |key: &'static str| client.set(key, "v", SetOptions::default());
    assert_eq!(
        set("status-503").await,
        Err(Error::Rpc {
            status: 503,
            message: "service unavailable".into()
        })
    );
    assert!(matches!(
        set("no-status").await,
        Err(Error::Rpc { status: 0, .. })
    ));
    assert!(matches!(
        set("garbage").await,
        Err(Error::UnexpectedPayload(_))
    ));
    assert!(matches!(
        set("wrong-type").await,
        Err(Error::UnexpectedPayload(_))
    ));
    assert!(matches!(
        client.get("wrong-type").await,
        Err(Error::UnexpectedPayload(_))
    ));
    // A successful write stays a success whatever its __ts looks like.
    let unreadable = set("bad-ts").await.unwrap();
    assert!(unreadable.applied);
    assert_eq!(unreadable.version, None);
    let ahead = set("future-ts").await.unwrap();
    assert!(ahead.applied);
    assert_eq!(ahead.version.unwrap().wall_ms, 999_999_999_999_999);
    // The clock was not dragged into the far future: our next __ts is near the wall clock.
    assert!(set("plain").await.unwrap().applied);
    let last = service.received().pop().unwrap();
    let sent: Hlc = last.user_property("__ts").unwrap().parse().unwrap();
    assert!(
        sent.wall_ms < statestore::protocol::hlc::unix_ms_now() + 60_000,
        "{sent}"
    );
}

#[tokio::test]
async fn calls_time_out_and_free_their_slot() {
    let (_broker, service, client) = start(|_| None).await;
    let err = client
        .set(
            "k",
            "v",
            SetOptions::default().timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert_eq!(err, Error::Timeout(Duration::from_millis(200)));
    assert!(err.outcome_unknown());
    // The client's default timeout (2 s here) applies when the call sets none.
    assert_eq!(
        client.get("k").await,
        Err(Error::Timeout(Duration::from_secs(2)))
    );
    assert_eq!(
        client
            .get_with_timeout("k", Some(Duration::from_millis(100)))
            .await,
        Err(Error::Timeout(Duration::from_millis(100)))
    );
    assert_eq!(
        service.wait_received(3).await.len(),
        3,
        "each call was sent once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_with_calls_in_flight_fails_them_with_closed() {
    let (_broker, service, client) = start(|_| None).await;
    let calls: Vec<_> = (0..10)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .set(format!("k{i}"), "v", SetOptions::default())
                    .await
            })
        })
        .collect();
    service.wait_received(10).await;
    client.close().await.unwrap();
    for call in calls {
        assert_eq!(call.await.unwrap(), Err(Error::Closed));
    }
}

#[tokio::test]
async fn one_keynotify_per_key_and_stop_after_the_last_observer() {
    let stopped = Arc::new(tokio::sync::Notify::new());
    let stop_seen = Arc::new(AtomicBool::new(false));
    let (_broker, service, client) = start({
        let stopped = stopped.clone();
        let stop_seen = stop_seen.clone();
        move |request| {
            if let Request::KeyNotify { stop: true, .. } = request.request {
                stop_seen.store(true, Ordering::SeqCst);
                stopped.notify_one();
            }
            plain(request)
        }
    })
    .await;
    let keynotify = |service: &Scripted, stop: bool| {
        service
            .received()
            .iter()
            .filter(|r| matches!(r.request, Request::KeyNotify { stop: s, .. } if s == stop))
            .count()
    };
    let first = client.observe("k").await.unwrap();
    let second = client.observe("k").await.unwrap();
    let other = client.observe("other").await.unwrap();
    assert_eq!(keynotify(&service, false), 2, "one per key");
    drop(first);
    drop(second);
    kit::within("KEYNOTIFY STOP", stopped.notified()).await;
    assert!(stop_seen.load(Ordering::SeqCst));
    assert_eq!(keynotify(&service, true), 1);
    let again = client.observe("k").await.unwrap();
    assert_eq!(keynotify(&service, false), 3, "registered again");
    client.unobserve("other").await.unwrap();
    assert_eq!(keynotify(&service, true), 2);
    drop((other, again));
}

#[tokio::test]
async fn a_refused_keynotify_fails_observe_and_leaves_nothing_behind() {
    let (_broker, service, client) = start(|request| match request.request {
        Request::KeyNotify { .. } => Some(Reply::ok(b"-ERR not authorized\r\n")),
        _ => plain(request),
    })
    .await;
    for _ in 0..2 {
        assert!(matches!(
            client.observe("k").await,
            Err(Error::Service(ServiceError::NotAuthorized))
        ));
    }
    // Each attempt registered afresh (nothing half-registered was kept), and no STOP went out.
    client.get("k").await.unwrap();
    let received = service.wait_received(3).await;
    let verbs: Vec<_> = received.iter().map(|r| r.request.clone()).collect();
    assert!(
        matches!(
            &verbs[..],
            [
                Request::KeyNotify { stop: false, .. },
                Request::KeyNotify { stop: false, .. },
                Request::Get { .. }
            ]
        ),
        "{verbs:?}"
    );
}

#[tokio::test]
async fn invalid_input_never_reaches_the_service() {
    let (_broker, service, client) = start(plain).await;
    let short = Duration::from_micros(500);
    assert!(client.set("", "v", SetOptions::default()).await.is_err());
    assert!(client
        .set("k", "v", SetOptions::default().expiry(short))
        .await
        .is_err());
    assert!(client.get("").await.is_err());
    assert!(client.delete("", DeleteOptions::default()).await.is_err());
    assert!(client
        .vdel("", "v", DeleteOptions::default())
        .await
        .is_err());
    assert!(client.observe("").await.is_err());
    assert!(client
        .get_with_timeout("k", Some(Duration::ZERO))
        .await
        .is_err());
    client.get("only-this").await.unwrap();
    let received = service.wait_received(1).await;
    assert_eq!(received.len(), 1);
    assert!(matches!(&received[0].request, Request::Get { key } if key == "only-this"));
}
