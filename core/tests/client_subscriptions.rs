//! The client's subscriptions: on a later connection, a refusal is not final while the
//! connection stays up; after `close()`, none is left in the session the broker keeps.

use std::time::Duration;

use statestore::{Client, Error};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Reply, Scripted};
use statestore_testkit::{within, Proxy, SatBroker};

/// A SUBACK refused on a reconnection leaves the client failed only
/// until a later subscription attempt on the same connection is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_resubscription_is_retried_on_the_same_connection() {
    let broker = SatBroker::start().await.expect("SAT broker");
    let _service = Scripted::start(broker.addr(), |_| Some(Reply::ok(b"$-1\r\n"))).await;
    let proxy = Proxy::start(broker.addr()).await.expect("proxy");
    let mut options = kit::options(proxy.addr());
    // Clean sessions: every connection subscribes.
    options.session_expiry = Duration::ZERO;
    let client = Client::connect(options).await.expect("connect");
    client.get("k").await.unwrap();

    broker.deny_subscriptions();
    let checks = broker.subscription_checks();
    let granted = broker.subscriptions_granted();
    proxy.cut();
    broker.subscription_checked(checks + 1).await;
    broker.allow_subscriptions();
    // Asked again on the same connection, and granted this time.
    broker.subscriptions_granted_at_least(granted + 2).await;
    assert_eq!(proxy.accepted(), 2, "no new connection");

    // The client offers no event for its link becoming ready: until it has handled that
    // SUBACK, calls fail at once with the refusal, so ask again after a pause.
    within("a call that works again", async {
        loop {
            match client.get("k").await {
                Ok(_) => return,
                Err(Error::Connection(error)) => {
                    assert!(error.contains("refused the subscription"), "{error}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(other) => panic!("unexpected error {other:?}"),
            }
        }
    })
    .await;
    assert_eq!(proxy.accepted(), 2, "no new connection was needed");
}

/// The session a broker keeps after `close()` (the client asked for a session expiry) holds no
/// subscription: a client taking it over gets nothing published to the departed client's
/// notification or response topics; a client connecting again with that id subscribes again.
/// Checked on the embedded broker and on Mosquitto.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_leaves_no_subscription_in_the_kept_session() {
    let embedded = kit::embedded().await;
    let (mosquitto, _attached) = kit::on_mosquitto().await;
    for (broker, addr) in [
        ("embedded", embedded.local_addr()),
        ("mosquitto", mosquitto.addr()),
    ] {
        let id = format!("departed-{broker}");
        let client = Client::connect(kit::options(addr).client_id(id.as_str()))
            .await
            .expect("connect");
        client.get("k").await.unwrap();
        client.close().await.unwrap();
        let left = kit::leftover_subscription(addr, &id).await.unwrap();
        assert_eq!(
            left, None,
            "{broker}: a departed client's topic has a subscriber"
        );

        // A new client with the same id resumes that session and subscribes again.
        let again = Client::connect(kit::options(addr).client_id(id.as_str()))
            .await
            .expect("connect again");
        let mut changes = again.observe("k").await.unwrap();
        kit::set_all(&again, &[b"k"]).await;
        assert!(kit::next_event(&mut changes).await.is_some(), "{broker}");
        again.close().await.unwrap();
    }
}
