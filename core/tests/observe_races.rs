//! KEYNOTIFY registrations against a scripted service whose replies the test holds back: one
//! slow key must not hold up the others, and no registration is left on the service without
//! an observer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use statestore::protocol::Request;
use statestore::{Client, Error};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Gate, Received, Reply, Scripted};
use statestore_testkit::{within, Proxy, SatBroker};

async fn start(
    default_timeout: Duration,
    script: impl Fn(&Received) -> Option<Reply> + Send + Sync + 'static,
) -> (SatBroker, Scripted, Client) {
    let broker = SatBroker::start().await.expect("SAT broker");
    let service = Scripted::start(broker.addr(), script).await;
    let options = kit::options(broker.addr()).default_timeout(default_timeout);
    let client = Client::connect(options).await.expect("connect");
    (broker, service, client)
}

fn keynotify(received: &Received) -> Option<(&Bytes, bool)> {
    match &received.request {
        Request::KeyNotify { key, stop } => Some((key, *stop)),
        _ => None,
    }
}

/// A KEYNOTIFY the service is slow to answer holds up only the
/// registrations of its own key.
#[tokio::test]
async fn a_slow_registration_does_not_hold_up_other_keys() {
    let slow_replies = Gate::new();
    let (_broker, service, client) = start(Duration::from_secs(45), {
        let slow_replies = slow_replies.clone();
        move |received| match keynotify(received) {
            Some((key, _)) if key == "slow" => Some(Reply::ok(b"+OK\r\n").after(&slow_replies)),
            _ => Some(Reply::ok(b"+OK\r\n")),
        }
    })
    .await;
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.observe("slow").await }
    });
    service.wait_received(1).await;

    let fast = within("the observation of another key", client.observe("fast")).await;
    assert!(fast.is_ok(), "{fast:?}");
    assert!(!slow.is_finished(), "the slow key's answer is still held");
    slow_replies.open_one();
    assert!(within("the slow observation", slow).await.unwrap().is_ok());
}

/// An `observe` whose KEYNOTIFY fails with an unknown
/// outcome (here its timeout, which paused time makes fire before the client-wide bound of
/// the same length) may have registered the key: a STOP follows.
#[tokio::test]
async fn an_observe_with_an_unknown_outcome_is_stopped() {
    let (_broker, service, client) = start(Duration::from_secs(5), |received| {
        match keynotify(received) {
            Some((_, false)) => None, // Registered, but the answer is lost.
            _ => Some(Reply::ok(b"+OK\r\n")),
        }
    })
    .await;
    tokio::time::pause();
    let observed = client.observe("k").await;
    tokio::time::resume();
    assert!(matches!(observed, Err(Error::Timeout(_))), "{observed:?}");

    let received = service.wait_received(2).await;
    let keynotifies: Vec<_> = received.iter().filter_map(keynotify).collect();
    assert_eq!(
        keynotifies,
        [(&Bytes::from("k"), false), (&Bytes::from("k"), true)],
        "{received:?}"
    );
}

/// The re-registration of an observed key after a
/// reconnect takes the key's registration lock, so that the STOP sent when its last
/// observation is dropped meanwhile waits for it instead of overtaking it (which, should the
/// re-registration be sent again, leaves it registered with nobody observing).
///
/// The order at the service shows it: the re-registration, its GET, then the STOP; with the
/// STOP overtaking, the GET comes after it.
#[tokio::test]
async fn a_stop_waits_for_the_re_registration_in_flight() {
    let re_registration = Gate::new();
    let broker = SatBroker::start().await.expect("SAT broker");
    let service = Scripted::start(broker.addr(), {
        let re_registration = re_registration.clone();
        let registrations = AtomicUsize::new(0);
        move |received| match keynotify(received) {
            Some((_, false)) if registrations.fetch_add(1, Ordering::SeqCst) == 1 => {
                Some(Reply::ok(b"+OK\r\n").after(&re_registration))
            }
            Some(_) => Some(Reply::ok(b"+OK\r\n")),
            None => Some(Reply::ok(b"$-1\r\n")),
        }
    })
    .await;
    let proxy = Proxy::start(broker.addr()).await.expect("proxy");
    let options = kit::options(proxy.addr()).default_timeout(Duration::from_secs(45));
    let client = Client::connect(options).await.expect("connect");
    let observation = client.observe("k").await.unwrap();
    proxy.cut();
    service
        .wait_until("the re-registration", |received| {
            received.iter().filter_map(keynotify).count() == 2
        })
        .await;

    // The last observation goes while the re-registration waits for its answer.
    drop(observation);
    re_registration.open_one();
    let is_stop = |r: &Received| keynotify(r).is_some_and(|(_, stop)| stop);
    service
        .wait_until("the STOP", |received| received.iter().any(is_stop))
        .await;
    // Two round trips: a GET the re-registration sends on its answer is out before them.
    client.get("marker").await.unwrap();
    client.get("marker").await.unwrap();

    let received = service.received();
    let is_get_k = |r: &Received| matches!(&r.request, Request::Get { key } if key == "k");
    let stop = received.iter().position(is_stop).unwrap();
    assert!(
        !received[stop..].iter().any(is_get_k),
        "the STOP overtook the re-registration: {received:#?}"
    );
    assert_eq!(received.iter().filter(|r| is_stop(r)).count(), 1);
}
