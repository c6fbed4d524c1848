//! Batches (`get_many`, `set_many`, `delete_many`) of the async and blocking clients against the
//! embedded state store server.

use std::time::Duration;

use bytes::Bytes;
use statestore::{
    Client, ConnectOptions, DeleteOptions, DeleteOutcome, Error, ErrorCode, SetCondition,
    SetOptions,
};
use statestore_testkit as kit;

fn values(results: Vec<Result<Option<statestore::Value>, Error>>) -> Vec<Option<Bytes>> {
    results
        .into_iter()
        .map(|result| result.unwrap().map(|value| value.value))
        .collect()
}

#[tokio::test]
async fn results_come_in_input_order_one_per_key_with_duplicates_and_missing_keys() {
    let (_server, client) = kit::embedded_with_client().await;
    kit::within("the batches", async {
        let written = client
            .set_many([("b", "2"), ("a", "1"), ("c", "3")], SetOptions::default())
            .await
            .unwrap();
        assert_eq!(written.len(), 3);
        assert!(written.iter().all(|r| r.as_ref().unwrap().applied));
        let read = client
            .get_many(["c", "missing", "a", "c", "b"])
            .await
            .unwrap();
        let some = |v: &'static str| Some(Bytes::from(v));
        assert_eq!(
            values(read),
            vec![some("3"), None, some("1"), some("3"), some("2")]
        );
        let deleted = client
            .delete_many(["a", "missing"], DeleteOptions::default())
            .await
            .unwrap();
        let outcomes: Vec<_> = deleted.into_iter().map(|r| r.unwrap().outcome).collect();
        assert_eq!(outcomes, [DeleteOutcome::Deleted, DeleteOutcome::NotFound]);
        assert_eq!(client.get("a").await.unwrap(), None);
    })
    .await;
}

#[tokio::test]
async fn a_batch_can_be_spawned() {
    let (_server, client) = kit::embedded_with_client().await;
    let task = tokio::spawn({
        let client = client.clone();
        async move {
            let items = vec![("s1".to_owned(), "v".to_owned())];
            client.set_many(items, SetOptions::default()).await?;
            client
                .delete_many(vec!["s2".to_owned()], DeleteOptions::default())
                .await?;
            client.get_many(vec!["s1".to_owned()]).await
        }
    });
    let read = kit::within("the spawned batch", task).await.unwrap();
    assert_eq!(values(read.unwrap()), vec![Some(Bytes::from("v"))]);
}

#[tokio::test]
async fn an_empty_batch_sends_nothing_and_returns_nothing() {
    let (_server, client) = kit::embedded_with_client().await;
    let none: [&str; 0] = [];
    assert!(client.get_many(none).await.unwrap().is_empty());
    let no_items: [(&str, &str); 0] = [];
    assert!(client
        .set_many(no_items, SetOptions::default())
        .await
        .unwrap()
        .is_empty());
    assert!(client
        .delete_many(none, DeleteOptions::default())
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_refused_key_is_its_own_result_and_the_others_are_applied() {
    let (_server, client) = kit::embedded_with_client().await;
    let first = client
        .set("lock", "holder", SetOptions::default())
        .await
        .unwrap()
        .version
        .unwrap();
    let newer = client
        .set("lock", "holder", SetOptions::default())
        .await
        .unwrap()
        .version
        .unwrap();
    // "fenced" is protected by the newer token, so the older one is refused for it alone.
    client
        .set(
            "fenced",
            "v1",
            SetOptions::default().fencing_token(newer.clone()),
        )
        .await
        .unwrap();
    let results = kit::within(
        "the batch",
        client.set_many(
            [("free-1", "x"), ("fenced", "x"), ("free-2", "x")],
            SetOptions::default().fencing_token(first),
        ),
    )
    .await
    .unwrap();
    assert!(results[0].as_ref().unwrap().applied);
    let refused = results[1].as_ref().unwrap_err();
    assert_eq!(refused.code(), ErrorCode::FencingTokenLowerVersion);
    assert!(results[2].as_ref().unwrap().applied);
    assert_eq!(
        values(
            client
                .get_many(["free-1", "fenced", "free-2"])
                .await
                .unwrap()
        ),
        vec![Some("x".into()), Some("v1".into()), Some("x".into())]
    );
    // A condition that does not hold is a result, not an error.
    client
        .set("plain", "x", SetOptions::default())
        .await
        .unwrap();
    let nx = client
        .set_many(
            [("plain", "y"), ("new", "y")],
            SetOptions::default().condition(SetCondition::OnlyIfAbsent),
        )
        .await
        .unwrap();
    let applied: Vec<_> = nx.into_iter().map(|r| r.unwrap().applied).collect();
    assert_eq!(applied, [false, true]);
}

#[tokio::test]
async fn bad_input_names_the_item_and_sends_nothing() {
    let (_server, client) = kit::embedded_with_client().await;
    let err = client
        .set_many([("k0", "v"), ("k1", "v"), ("", "v")], SetOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.to_string().contains("batch item 2"), "{err}");
    assert!(err.to_string().contains("the key is empty"), "{err}");
    // The embedded broker's maximum packet size is 4 MiB.
    let huge = Bytes::from(vec![b'x'; 5 * 1024 * 1024]);
    let err = client
        .set_many(
            [(Bytes::from("k0"), Bytes::from("v")), ("k1".into(), huge)],
            SetOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("batch item 1 (key \"k1\")")
            && err.to_string().contains("maximum packet size"),
        "{err}"
    );
    // Had anything been sent, k0 would be there.
    assert_eq!(client.get("k0").await.unwrap(), None);
    for err in [
        client.get_many(["k0", ""]).await.unwrap_err(),
        client
            .delete_many(["k0", ""], DeleteOptions::default())
            .await
            .unwrap_err(),
        client
            .get_many_with_timeout(["k0"], Some(Duration::ZERO))
            .await
            .unwrap_err(),
        client
            .set_many(
                [("k0", "v")],
                SetOptions::default().expiry(Duration::from_micros(10)),
            )
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    }
    assert_eq!(client.get("k0").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_keys_in_one_batch() {
    let (_server, client) = kit::embedded_with_client().await;
    let keys: Vec<String> = (0..10_000).map(|i| format!("key-{i}")).collect();
    kit::within("10 000 keys written, read and deleted", async {
        let items = keys.iter().map(|k| (k.clone(), format!("value-of-{k}")));
        let written = client.set_many(items, SetOptions::default()).await.unwrap();
        assert_eq!(written.len(), keys.len());
        assert!(written.iter().all(|r| r.as_ref().unwrap().applied));
        let read = client.get_many(keys.iter().cloned()).await.unwrap();
        for (key, value) in keys.iter().zip(values(read)) {
            assert_eq!(value, Some(Bytes::from(format!("value-of-{key}"))));
        }
        let deleted = client
            .delete_many(keys.iter().cloned(), DeleteOptions::default())
            .await
            .unwrap();
        assert!(deleted.iter().all(|r| r.as_ref().unwrap().deleted()));
    })
    .await;
}

#[tokio::test]
async fn max_in_flight_is_a_connect_option_of_at_least_one() {
    let server = kit::embedded().await;
    let options = |n| kit::options(server.local_addr()).max_in_flight(n);
    assert_eq!(
        ConnectOptions::new("h", 1).max_in_flight,
        statestore::DEFAULT_MAX_IN_FLIGHT
    );
    for bad in [0, 65_536] {
        let err = Client::connect(options(bad)).await.unwrap_err();
        assert!(err.to_string().contains("max_in_flight"), "{err}");
    }
    // One at a time is a loop of single calls, with the same results.
    let client = Client::connect(options(1)).await.unwrap();
    let items = (0..20).map(|i| (format!("k{i}"), format!("v{i}")));
    let written = kit::within("the batch", client.set_many(items, SetOptions::default()))
        .await
        .unwrap();
    assert_eq!(written.len(), 20);
    let read = client
        .get_many((0..20).map(|i| format!("k{i}")))
        .await
        .unwrap();
    let expected: Vec<_> = (0..20)
        .map(|i| Some(Bytes::from(format!("v{i}"))))
        .collect();
    assert_eq!(values(read), expected);
}

#[tokio::test]
async fn a_dropped_batch_stops_sending() {
    // One request at a time over a link with 20 ms each way: about 25 SETs a second.
    let server = kit::embedded().await;
    let proxy = kit::Proxy::start(server.local_addr()).await.unwrap();
    proxy.latency(Duration::from_millis(20));
    let slow = kit::within(
        "the connection through the proxy",
        Client::connect(kit::options(proxy.addr()).max_in_flight(1)),
    )
    .await
    .unwrap();
    let direct = kit::client(&server).await;
    let items: Vec<_> = (0..100).map(|i| (format!("dropped:{i:03}"), "v")).collect();
    let batch = slow.set_many(items, SetOptions::default());
    // The caller gives up on the batch after 150 ms: the future is dropped unfinished.
    assert!(tokio::time::timeout(Duration::from_millis(150), batch)
        .await
        .is_err());
    let written = || async {
        kit::within("listing the keys", direct.keys_all("dropped:*"))
            .await
            .unwrap()
            .len()
    };
    // The request under way when it was dropped lands within a round trip; none may follow.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after_drop = written().await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let later = written().await;
    assert!(after_drop < 100, "{after_drop} keys written");
    assert_eq!(
        later, after_drop,
        "the batch went on sending after it was dropped"
    );
}

#[test]
fn the_blocking_client_has_the_same_batches() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = statestore::blocking::Client::connect(kit::options(server.local_addr())).unwrap();
    let written = client
        .set_many([("x", "1"), ("y", "2")], SetOptions::default())
        .unwrap();
    assert_eq!(written.len(), 2);
    assert_eq!(
        values(client.get_many(["y", "x", "z"]).unwrap()),
        vec![Some("2".into()), Some("1".into()), None]
    );
    let deleted = client
        .delete_many(["x", "x"], DeleteOptions::default())
        .unwrap();
    let mut outcomes: Vec<_> = deleted.into_iter().map(|r| r.unwrap().outcome).collect();
    outcomes.sort_by_key(|outcome| *outcome as i32);
    assert_eq!(outcomes, [DeleteOutcome::Deleted, DeleteOutcome::NotFound]);
}
