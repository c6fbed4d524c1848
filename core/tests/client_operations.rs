//! Every operation and option of the async client against the embedded state store server.

use std::time::Duration;

use bytes::Bytes;
use statestore::protocol::hlc::unix_ms_now;
use statestore::{
    Client, DeleteOptions, DeleteOutcome, Error, Hlc, KeyEvent, ServiceError, SetCondition,
    SetOptions,
};
use statestore_server::{EngineConfig, Server, ServerConfig};
use statestore_testkit as kit;

fn set() -> SetOptions {
    SetOptions::default()
}

fn del() -> DeleteOptions {
    DeleteOptions::default()
}

#[tokio::test]
async fn set_then_get_returns_the_value_and_its_version() {
    let (_server, client) = kit::embedded_with_client().await;
    let key = Bytes::from_static(b"k\r\n\0\xff");
    let value = Bytes::from_static(b"v\r\n$3\r\n\0");
    let written = client.set(key.clone(), value.clone(), set()).await.unwrap();
    assert!(written.applied);
    let version = written.version.expect("SET is versioned");
    assert_eq!(version.node, "StateStore");
    let read = client.get(key).await.unwrap().expect("present");
    assert_eq!(read.value, value);
    assert_eq!(read.version, Some(version.clone()));

    let newer = client.set("k2", "", set()).await.unwrap();
    assert!(newer.version.unwrap() > version, "versions grow");
    assert_eq!(client.get("k2").await.unwrap().unwrap().value, "");
    assert_eq!(client.get("missing").await.unwrap(), None);
}

#[tokio::test]
async fn set_conditions_nx_and_nex() {
    let (_server, client) = kit::embedded_with_client().await;
    let nx = set().condition(SetCondition::OnlyIfAbsent);
    let nex = set().condition(SetCondition::OnlyIfAbsentOrEqual);
    assert!(client.set("nx", "a", nx.clone()).await.unwrap().applied);
    let refused = client.set("nx", "b", nx).await.unwrap();
    assert!(!refused.applied);
    assert_eq!(client.get("nx").await.unwrap().unwrap().value, "a");

    assert!(client.set("nex", "a", nex.clone()).await.unwrap().applied);
    assert!(
        client.set("nex", "a", nex.clone()).await.unwrap().applied,
        "equal value"
    );
    assert!(!client.set("nex", "b", nex).await.unwrap().applied);
    assert_eq!(client.get("nex").await.unwrap().unwrap().value, "a");
}

#[tokio::test]
async fn delete_and_vdel_report_their_outcome() {
    let (_server, client) = kit::embedded_with_client().await;
    client.set("d", "v", set()).await.unwrap();
    let deleted = client.delete("d", del()).await.unwrap();
    assert_eq!(deleted.outcome, DeleteOutcome::Deleted);
    assert!(deleted.deleted());
    assert_eq!(
        client.delete("d", del()).await.unwrap().outcome,
        DeleteOutcome::NotFound
    );
    assert_eq!(client.get("d").await.unwrap(), None);

    client.set("vd", "mine", set()).await.unwrap();
    let mismatch = client.vdel("vd", "theirs", del()).await.unwrap();
    assert_eq!(mismatch.outcome, DeleteOutcome::ValueMismatch);
    assert!(client.get("vd").await.unwrap().is_some());
    assert_eq!(
        client.vdel("vd", "mine", del()).await.unwrap().outcome,
        DeleteOutcome::Deleted
    );
    assert_eq!(
        client.vdel("vd", "mine", del()).await.unwrap().outcome,
        DeleteOutcome::NotFound
    );
}

#[tokio::test]
async fn expiry_deletes_the_key_and_notifies() {
    let (_server, client) = kit::embedded_with_client().await;
    let mut changes = client.observe("ttl").await.unwrap();
    client
        .set("ttl", "soon gone", set().expiry(Duration::from_millis(50)))
        .await
        .unwrap();
    assert!(matches!(
        kit::next_event(&mut changes).await,
        Some(KeyEvent::Set { .. })
    ));
    match kit::next_event(&mut changes).await {
        Some(KeyEvent::Delete { version }) => assert!(version.is_some()),
        other => panic!("expected the expiry's DELETE, got {other:?}"),
    }
    assert_eq!(client.get("ttl").await.unwrap(), None);

    // A long expiry keeps the key.
    client
        .set("long", "v", set().expiry(Duration::from_secs(600)))
        .await
        .unwrap();
    assert!(client.get("long").await.unwrap().is_some());
}

#[tokio::test]
async fn fencing_tokens_protect_keys() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = client
        .set(
            "lock",
            "holder-1",
            set()
                .condition(SetCondition::OnlyIfAbsentOrEqual)
                .expiry(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert!(lock.applied);
    let token = lock.version.unwrap();
    client
        .set("guarded", "v1", set().fencing_token(token.clone()))
        .await
        .unwrap();

    fn service<T: std::fmt::Debug>(result: Result<T, Error>) -> ServiceError {
        match result {
            Err(Error::Service(e)) => e,
            other => panic!("expected a service error, got {other:?}"),
        }
    }
    assert_eq!(
        service(client.set("guarded", "v2", set()).await),
        ServiceError::FencingTokenRequired
    );
    assert_eq!(
        service(client.delete("guarded", del()).await),
        ServiceError::FencingTokenRequired
    );
    assert_eq!(
        service(client.vdel("guarded", "v1", del()).await),
        ServiceError::FencingTokenRequired
    );
    let older = Hlc {
        wall_ms: token.wall_ms - 1,
        ..token.clone()
    };
    let err = client
        .set("guarded", "v2", set().fencing_token(older))
        .await
        .unwrap_err();
    assert_eq!(err.code(), statestore::ErrorCode::FencingTokenLowerVersion);
    let future = Hlc::new(unix_ms_now() + 3_600_000, "client");
    assert_eq!(
        service(
            client
                .set("guarded", "v2", set().fencing_token(future))
                .await
        ),
        ServiceError::FencingTokenSkew
    );
    assert_eq!(client.get("guarded").await.unwrap().unwrap().value, "v1");

    // A newer token (the lock re-taken) replaces the stored one; the old one is then refused.
    client.vdel("lock", "holder-1", del()).await.unwrap();
    let newer = client
        .set(
            "lock",
            "holder-2",
            set().condition(SetCondition::OnlyIfAbsent),
        )
        .await
        .unwrap()
        .version
        .unwrap();
    client
        .set("guarded", "v3", set().fencing_token(newer.clone()))
        .await
        .unwrap();
    assert_eq!(
        service(
            client
                .set("guarded", "v4", set().fencing_token(token))
                .await
        ),
        ServiceError::FencingTokenLowerVersion
    );
    let deleted = client
        .vdel("guarded", "v3", del().fencing_token(newer))
        .await
        .unwrap();
    assert_eq!(deleted.outcome, DeleteOutcome::Deleted);
}

#[tokio::test]
async fn quota_exceeded_is_reported() {
    let config = ServerConfig {
        engine: EngineConfig {
            max_keys: Some(1),
            ..EngineConfig::default()
        },
        ..ServerConfig::default()
    };
    let server = Server::start(config).await.unwrap();
    let client = kit::client(&server).await;
    client.set("one", "v", set()).await.unwrap();
    let err = client.set("two", "v", set()).await.unwrap_err();
    assert_eq!(err, Error::Service(ServiceError::QuotaExceeded));
    assert!(!err.outcome_unknown());
}

#[tokio::test]
async fn persistence_is_accepted() {
    let (_server, client) = kit::embedded_with_client().await;
    assert!(
        client
            .set("p", "v", set().persist(true))
            .await
            .unwrap()
            .applied
    );
}

#[tokio::test]
async fn invalid_input_is_rejected_before_sending() {
    let (_server, client) = kit::embedded_with_client().await;
    let invalid = |result: Result<(), Error>| {
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "{result:?}"
        );
    };
    invalid(client.set("", "v", set()).await.map(drop));
    invalid(client.get("").await.map(drop));
    invalid(client.delete("", del()).await.map(drop));
    invalid(client.vdel("", "v", del()).await.map(drop));
    invalid(client.observe("").await.map(drop));
    invalid(client.unobserve("").await);
    invalid(
        client
            .set("k", "v", set().expiry(Duration::from_micros(999)))
            .await
            .map(drop),
    );
    invalid(
        client
            .set("k", "v", set().timeout(Duration::ZERO))
            .await
            .map(drop),
    );
    // The embedded broker's maximum packet size is 4 MiB.
    let huge = Bytes::from(vec![b'x'; 5 * 1024 * 1024]);
    let err = client.set("k", huge, set()).await.unwrap_err();
    assert!(err.to_string().contains("maximum packet size"), "{err}");
    invalid(
        client
            .set("k", "v", set().expiry(Duration::ZERO))
            .await
            .map(drop),
    );
    // Nothing was stored and the connection is still fine.
    assert_eq!(client.get("k").await.unwrap(), None);
    let large = Bytes::from(vec![b'y'; 1024 * 1024]);
    client.set("big", large.clone(), set()).await.unwrap();
    assert_eq!(client.get("big").await.unwrap().unwrap().value, large);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests() {
    let (_server, client) = kit::embedded_with_client().await;
    let writes: Vec<_> = (0..1000)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .set(format!("key-{i}"), format!("value-{i}"), set())
                    .await
            })
        })
        .collect();
    for write in writes {
        assert!(write.await.unwrap().unwrap().applied);
    }
    let reads: Vec<_> = (0..1000)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { (i, client.get(format!("key-{i}")).await) })
        })
        .collect();
    for read in reads {
        let (i, value) = read.await.unwrap();
        assert_eq!(value.unwrap().unwrap().value, format!("value-{i}"));
    }
}

#[tokio::test]
async fn notifications_of_set_and_delete_with_versions() {
    let (server, client) = kit::embedded_with_client().await;
    let writer = kit::client(&server).await;
    let mut changes = client.observe("watched").await.unwrap();
    assert_eq!(changes.key(), "watched");
    let written = writer.set("watched", "v1", set()).await.unwrap();
    assert_eq!(
        kit::next_event(&mut changes).await,
        Some(KeyEvent::Set {
            value: Bytes::from_static(b"v1"),
            version: written.version
        })
    );
    writer.delete("watched", del()).await.unwrap();
    assert!(matches!(
        kit::next_event(&mut changes).await,
        Some(KeyEvent::Delete { version: Some(_) })
    ));
    // Other keys are not reported.
    writer.set("other", "x", set()).await.unwrap();
    writer.set("watched", "v2", set()).await.unwrap();
    match kit::next_event(&mut changes).await {
        Some(KeyEvent::Set { value, .. }) => assert_eq!(value, "v2"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn observers_of_one_key_share_the_registration() {
    let (server, client) = kit::embedded_with_client().await;
    let writer = kit::client(&server).await;
    let mut first = client.observe("shared").await.unwrap();
    let mut second = client.observe("shared").await.unwrap();
    writer.set("shared", "a", set()).await.unwrap();
    assert!(matches!(
        kit::next_event(&mut first).await,
        Some(KeyEvent::Set { .. })
    ));
    assert!(matches!(
        kit::next_event(&mut second).await,
        Some(KeyEvent::Set { .. })
    ));
    drop(first);
    writer.set("shared", "b", set()).await.unwrap();
    match kit::next_event(&mut second).await {
        Some(KeyEvent::Set { value, .. }) => assert_eq!(value, "b"),
        other => panic!("{other:?}"),
    }
    // unobserve ends every observation of the key.
    client.unobserve("shared").await.unwrap();
    assert_eq!(kit::next_event(&mut second).await, None);
    client.unobserve("never-observed").await.unwrap();
}

#[tokio::test]
async fn observation_is_a_stream() {
    use std::future::poll_fn;
    use std::pin::Pin;
    let (_server, client) = kit::embedded_with_client().await;
    let mut changes = client.observe("s").await.unwrap();
    client.set("s", "v", set()).await.unwrap();
    let event = poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut changes), cx)).await;
    assert!(matches!(event, Some(KeyEvent::Set { .. })));
    assert_eq!(changes.try_next().unwrap(), None);
}

#[tokio::test]
async fn client_ids_are_used_or_generated() {
    let server = kit::embedded().await;
    let named = Client::connect(kit::options(server.local_addr()).client_id("my-app-1"))
        .await
        .unwrap();
    assert_eq!(named.client_id(), "my-app-1");
    let a = kit::client(&server).await;
    let b = kit::client(&server).await;
    assert_ne!(a.client_id(), b.client_id());
    assert!(a.client_id().starts_with("statestore-"));
    // The generated id works for notifications (it is part of the topic).
    let mut changes = a.observe("k").await.unwrap();
    b.set("k", "v", set()).await.unwrap();
    assert!(matches!(
        kit::next_event(&mut changes).await,
        Some(KeyEvent::Set { .. })
    ));
}

#[tokio::test]
async fn connecting_to_nothing_fails_fast() {
    let port = kit::free_port().unwrap();
    let err = Client::connect(statestore::ConnectOptions::new("127.0.0.1", port))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
    let err = Client::connect(statestore::ConnectOptions::new("127.0.0.1", port).client_id("a#b"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}

#[tokio::test]
async fn close_fails_later_calls_and_ends_observations() {
    let (_server, client) = kit::embedded_with_client().await;
    let mut changes = client.observe("k").await.unwrap();
    let clone = client.clone();
    client.close().await.unwrap();
    assert!(clone.is_closed());
    assert_eq!(kit::next_event(&mut changes).await, None);
    assert_eq!(clone.get("k").await, Err(Error::Closed));
    assert_eq!(
        clone.set("k", "v", set()).await.map(drop),
        Err(Error::Closed)
    );
    assert!(matches!(clone.observe("k").await, Err(Error::Closed)));
    assert_eq!(clone.unobserve("k").await, Err(Error::Closed));
    clone.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflowing_observation_drops_events_then_resyncs_to_the_current_value() {
    let (server, client) = kit::embedded_with_client().await;
    let writer = kit::client(&server).await;
    let mut changes = client.observe("k").await.unwrap();
    // More than the queue's bound, not consumed while it is written.
    let value = Bytes::from(vec![b'x'; 1 << 20]);
    let writes = statestore::OBSERVATION_QUEUE_LIMIT / value.len() + 8;
    for _ in 0..writes {
        writer.set("k", value.clone(), set()).await.unwrap();
    }
    writer.set("k", "final", set()).await.unwrap();
    let (mut sets, mut resynced, mut last) = (0, false, None);
    while !(resynced && last.as_deref() == Some(&b"final"[..])) {
        match kit::next_event(&mut changes).await {
            Some(KeyEvent::Set { value, .. }) => {
                sets += 1;
                last = Some(value);
            }
            Some(KeyEvent::Resynced { value }) => {
                resynced = true;
                last = value.map(|v| v.value);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        sets <= writes,
        "some events were dropped: {sets} of {}",
        writes + 1
    );
}
