//! `statestore watch`: events as lines (human and JSON), reconnects, SIGINT.

mod support;

use std::time::Duration;

use statestore::{Client, ConnectOptions, DeleteOptions, ReconnectPolicy, SetOptions};
use statestore_testkit as kit;
use support::Tool;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_lines_for_set_delete_and_expiry_then_sigint_ends_with_0() {
    let server = kit::embedded().await;
    let tool = Tool::new(server.local_addr());
    let writer = kit::connect(server.local_addr()).await;
    let mut watch = tool.spawn(&["watch", "color", "size", "color"]);
    assert_eq!(watch.line().await, r#"watching "color" "size""#);

    let set = writer
        .set("color", "red\n", SetOptions::default())
        .await
        .unwrap();
    let version = set.version.unwrap();
    assert_eq!(
        watch.line().await,
        format!(r#""color" set "red\n" (version {version})"#)
    );
    writer
        .set(
            "size",
            "XL",
            SetOptions::default().expiry(Duration::from_millis(100)),
        )
        .await
        .unwrap();
    assert!(watch.line().await.starts_with(r#""size" set "XL""#));
    assert!(
        watch.line().await.starts_with(r#""size" deleted"#),
        "expiry"
    );
    writer
        .delete("color", DeleteOptions::default())
        .await
        .unwrap();
    assert!(watch.line().await.starts_with(r#""color" deleted"#));
    writer
        .set("other", "x", SetOptions::default())
        .await
        .unwrap();

    watch.signal(libc::SIGINT);
    let (code, rest, stderr) = watch.finish().await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(rest.is_empty(), "no event for an unwatched key: {rest:?}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_with_binary_values_then_sigterm_ends_with_0() {
    let server = kit::embedded().await;
    let tool = Tool::new(server.local_addr());
    let writer = kit::connect(server.local_addr()).await;
    let mut watch = tool.spawn(&["watch", "--json", "--timeout", "2s", "k"]);
    let ready = watch.json_line().await;
    assert_eq!(ready["event"], "ready");
    assert_eq!(ready["keys"], serde_json::json!(["k"]));

    let set = writer
        .set("k", &b"\x00\xff"[..], SetOptions::default())
        .await
        .unwrap();
    let event = watch.json_line().await;
    assert_eq!(event["key"], "k");
    assert_eq!(event["event"], "set");
    assert_eq!(event["value"], "AP8=");
    assert_eq!(event["encoding"], "base64");
    assert_eq!(event["version"], set.version.unwrap().to_string());

    writer
        .set("k", "plain", SetOptions::default())
        .await
        .unwrap();
    let event = watch.json_line().await;
    assert_eq!(
        (&event["value"], &event["encoding"]),
        (&"plain".into(), &"utf8".into())
    );
    writer.delete("k", DeleteOptions::default()).await.unwrap();
    let event = watch.json_line().await;
    assert_eq!(event["event"], "delete");
    assert!(event.get("value").is_none());

    watch.signal(libc::SIGTERM);
    let (code, _, stderr) = watch.finish().await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_is_survived_and_reported_as_a_resync() {
    let (mut broker, _server) = kit::on_mosquitto().await;
    let tool = Tool::new(broker.addr());
    let mut watch = tool.spawn(&["watch", "--json", "--timeout", "2s", "k"]);
    assert_eq!(watch.json_line().await["event"], "ready");
    let options = ConnectOptions::new(broker.addr().ip().to_string(), broker.port()).reconnect(
        ReconnectPolicy::new(Duration::from_millis(50), Duration::from_millis(200)),
    );
    let writer = Client::connect(options).await.unwrap();
    writer.set("k", "v1", SetOptions::default()).await.unwrap();
    assert_eq!(watch.json_line().await["value"], "v1");

    let _broker = tokio::task::spawn_blocking(move || {
        broker.restart().expect("restart mosquitto");
        broker
    })
    .await
    .unwrap();

    // The state store (attached to the broker) kept the key; the watch says it resynced.
    let event = watch.json_line().await;
    assert_eq!(event["event"], "resynced", "{event}");
    assert_eq!(event["value"], "v1");
    // And it goes on: a later change arrives.
    // The writer may still be reconnecting: retry calls whose outcome is unknown, for a bounded time.
    let retrying = async {
        loop {
            match writer.set("k", "v2", SetOptions::default()).await {
                Ok(_) => break,
                Err(error) if error.outcome_unknown() => continue,
                Err(error) => panic!("{error}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), retrying)
        .await
        .expect("the writer could set the key within 60 s of the broker restart");
    loop {
        let event = watch.json_line().await;
        if event["event"] == "set" && event["value"] == "v2" {
            break;
        }
    }
    watch.signal(libc::SIGINT);
    assert_eq!(watch.finish().await.0, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_whose_reconnecting_gives_up_ends_with_the_connection_status_and_reason() {
    let server = kit::embedded().await;
    let addr = server.local_addr();
    let tool = Tool::new(addr);
    let mut watch = tool.spawn(&["watch", "--reconnect-max-attempts", "1", "k"]);
    assert_eq!(watch.line().await, r#"watching "k""#);
    server.shutdown().await;
    let (code, rest, stderr) = watch.finish().await;
    assert_eq!(code, Some(5), "the connection status; stderr: {stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(
        stderr.contains("reconnecting gave up") && stderr.contains(&addr.to_string()),
        "{stderr}"
    );
}
