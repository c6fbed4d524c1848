//! Connection faults: requests lost with a session, sessions resumed, observations resynced
//! after a cut connection and after a broker restart, calls during an outage.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use statestore::protocol::Request;
use statestore::{Client, Error, KeyEvent, Observation, SetOptions};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Reply, Scripted};
use statestore_testkit::{Mosquitto, Proxy};

fn set() -> SetOptions {
    SetOptions::default()
}

/// An embedded server, a proxy in front of it, and a writer client connected directly.
async fn behind_proxy() -> (statestore_server::Server, Proxy, Client) {
    let server = kit::embedded().await;
    let proxy = Proxy::start(server.local_addr()).await.expect("proxy");
    let writer = kit::client(&server).await;
    (server, proxy, writer)
}

/// Skips `Set`/`Delete` events until the next `Resynced`, and returns its value.
async fn next_resync(observation: &mut Observation) -> Option<bytes::Bytes> {
    loop {
        match kit::next_event(observation).await {
            Some(KeyEvent::Resynced { value }) => return value.map(|v| v.value),
            Some(_) => continue,
            None => panic!("the observation ended instead of resyncing"),
        }
    }
}

/// Skips events until `value` is notified as set (or read by a resync: a resync that follows
/// a later connection loss may report it instead of a notification).
async fn until_set_to(observation: &mut Observation, value: &str) {
    loop {
        match kit::next_event(observation).await {
            Some(KeyEvent::Set { value: set, .. }) if set == value => return,
            Some(KeyEvent::Resynced { value: Some(read) }) if read.value == value => return,
            Some(_) => continue,
            None => panic!("the observation ended before {value:?} was set"),
        }
    }
}

/// Waits for a spawned call, which its own timeout bounds.
async fn joined<T>(call: tokio::task::JoinHandle<T>) -> T {
    kit::within("end of a call", call)
        .await
        .expect("the call's task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_session_writes_fail_as_lost_and_reads_are_retried() {
    let (_server, proxy, writer) = behind_proxy().await;
    let mut options = kit::options(proxy.addr());
    options.session_expiry = Duration::ZERO; // The broker forgets the session at once.
    let client = Client::connect(options).await.unwrap();
    writer.set("k", "before", set()).await.unwrap();

    proxy.swallow(true);
    let write = tokio::spawn({
        let client = client.clone();
        async move { client.set("k", "lost", set()).await }
    });
    proxy.swallowed_at_least(1).await;
    let swallowed_write = proxy.swallowed();
    let read = tokio::spawn({
        let client = client.clone();
        async move { client.get("k").await }
    });
    proxy.swallowed_at_least(swallowed_write + 1).await;
    proxy.swallow(false);
    proxy.cut();

    let lost = joined(write).await.unwrap_err();
    assert_eq!(lost, Error::ConnectionLost);
    assert!(lost.outcome_unknown());
    let value = joined(read).await.unwrap().unwrap();
    assert_eq!(
        value.value, "before",
        "the read was sent again and answered"
    );
    // The client is usable after the reconnect.
    assert!(client.set("k", "after", set()).await.unwrap().applied);
    assert_eq!(writer.get("k").await.unwrap().unwrap().value, "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_resumed_session_a_write_in_flight_completes() {
    let (_server, proxy, writer) = behind_proxy().await;
    let client = Client::connect(kit::options(proxy.addr()).client_id("resumer"))
        .await
        .unwrap();
    proxy.swallow(true);
    let write = tokio::spawn({
        let client = client.clone();
        async move { client.set("k", "resent", set()).await }
    });
    proxy.swallowed_at_least(1).await;
    proxy.swallow(false);
    proxy.cut();
    // rumqttc re-sends the unacknowledged PUBLISH on the resumed session.
    assert!(joined(write).await.unwrap().applied);
    assert_eq!(writer.get("k").await.unwrap().unwrap().value, "resent");
    assert!(proxy.accepted() >= 2, "it did reconnect");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_resync_after_a_cut_and_report_changes_made_meanwhile() {
    let (_server, proxy, writer) = behind_proxy().await;
    let client = Client::connect(kit::options(proxy.addr())).await.unwrap();
    let mut first = client.observe("k").await.unwrap();
    let mut second = client.observe("k").await.unwrap();
    let mut absent = client.observe("absent").await.unwrap();
    writer.set("k", "v1", set()).await.unwrap();
    assert!(matches!(
        kit::next_event(&mut first).await,
        Some(KeyEvent::Set { .. })
    ));

    proxy.refuse(true);
    proxy.cut();
    writer.set("k", "changed while away", set()).await.unwrap();
    proxy.refuse(false);

    assert_eq!(next_resync(&mut first).await.unwrap(), "changed while away");
    assert_eq!(
        next_resync(&mut second).await.unwrap(),
        "changed while away"
    );
    assert_eq!(next_resync(&mut absent).await, None);
    // Re-registered: later changes are notified again.
    writer.set("k", "v3", set()).await.unwrap();
    until_set_to(&mut first, "v3").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_resync_after_a_broker_restart() {
    let (mut broker, _server) = kit::on_mosquitto().await;
    let client = Client::connect(kit::quick(broker.addr())).await.unwrap();
    let writer = Client::connect(kit::quick(broker.addr())).await.unwrap();
    let mut changes = client.observe("k").await.unwrap();
    writer.set("k", "v1", set()).await.unwrap();
    assert!(matches!(
        kit::next_event(&mut changes).await,
        Some(KeyEvent::Set { .. })
    ));

    let _broker = tokio::task::spawn_blocking(move || {
        broker.restart().expect("restart mosquitto");
        broker
    })
    .await
    .unwrap();

    // The state store (external mode) kept its data; our registration was lost with the
    // broker and is restored.
    assert_eq!(next_resync(&mut changes).await.unwrap(), "v1");
    let rewrite = kit::within("write after the restart", async {
        loop {
            // The writer may still be reconnecting: its first attempts can time out.
            match writer.set("k", "v2", set()).await {
                Ok(result) => break result,
                Err(error) if error.outcome_unknown() => continue,
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await;
    assert!(rewrite.applied);
    until_set_to(&mut changes, "v2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_re_registration_is_sent_again_without_waiting_for_the_call_timeout() {
    let broker = Mosquitto::start().unwrap();
    let registrations = Arc::new(AtomicUsize::new(0));
    let _service = Scripted::start(broker.addr(), {
        let registrations = registrations.clone();
        move |request| match request.request {
            // The first re-registration is lost, like one sent after a broker restart before
            // the state store has resubscribed.
            Request::KeyNotify { stop: false, .. }
                if registrations.fetch_add(1, Ordering::SeqCst) == 1 =>
            {
                None
            }
            Request::Get { .. } => Some(Reply::ok(b"$1\r\nv\r\n")),
            _ => Some(Reply::ok(b"+OK\r\n")),
        }
    })
    .await;
    let proxy = Proxy::start(broker.addr()).await.expect("proxy");
    // A call timeout far beyond the test's deadline: only an early retry resyncs in time.
    let options = kit::options(proxy.addr()).default_timeout(Duration::from_secs(600));
    let client = Client::connect(options).await.unwrap();
    let mut changes = client.observe("k").await.unwrap();

    proxy.cut();
    assert_eq!(next_resync(&mut changes).await.unwrap(), "v");
    assert!(
        registrations.load(Ordering::SeqCst) >= 3,
        "registered again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_during_an_outage_time_out_and_work_again_after_it() {
    let (_server, proxy, _writer) = behind_proxy().await;
    let client = Client::connect(kit::options(proxy.addr())).await.unwrap();
    proxy.refuse(true);
    proxy.cut();
    let timeout = Duration::from_millis(300);
    assert_eq!(
        client.get_with_timeout("k", Some(timeout)).await,
        Err(Error::Timeout(timeout))
    );
    assert_eq!(
        client.set("k", "v", set().timeout(timeout)).await.map(drop),
        Err(Error::Timeout(timeout))
    );
    proxy.refuse(false);
    // Within the default timeout the client reconnects (backoff) and the call goes through.
    assert!(client.set("k", "v", set()).await.unwrap().applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_an_outage_is_prompt() {
    let broker = Mosquitto::start().unwrap();
    let proxy = Proxy::start(broker.addr()).await.expect("proxy");
    let client = Client::connect(kit::options(proxy.addr())).await.unwrap();
    proxy.refuse(true);
    proxy.cut();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.get("k").await }
    });
    client.close().await.unwrap();
    assert_eq!(joined(call).await, Err(Error::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_session_with_disconnect() {
    let (_server, proxy, _writer) = behind_proxy().await;
    let client = Client::connect(kit::options(proxy.addr())).await.unwrap();
    client.set("k", "v", set()).await.unwrap();
    client.close().await.unwrap();
    let last = proxy.ended(1).await;
    // An MQTT 5 DISCONNECT with reason "normal disconnection": 0xE0 0x00.
    assert!(
        last.ends_with(&[0xE0, 0x00]),
        "last bytes sent: {last:02X?}"
    );

    // Dropping the last handle does the same.
    let dropped = Client::connect(kit::options(proxy.addr())).await.unwrap();
    dropped.get("k").await.unwrap();
    drop(dropped);
    let last = proxy.ended(2).await;
    assert!(
        last.ends_with(&[0xE0, 0x00]),
        "last bytes sent: {last:02X?}"
    );
}
