//! Automatic renewal across broker outages: a cut shorter than the TTL goes unnoticed, a
//! longer one is reported as a loss before anyone else can take the lease.

use std::time::Duration;

use statestore::lease::{Lease, LeaseState, LossReason};
use statestore::{Client, ConnectOptions, KeyEvent, Observation, ReconnectPolicy};
use statestore_testkit as kit;
use statestore_testkit::Proxy;

/// Options that reconnect quickly, so that an outage ends when the proxy lets connections
/// through again rather than when a long backoff says so.
fn eager(options: ConnectOptions) -> ConnectOptions {
    options.reconnect(ReconnectPolicy::new(
        Duration::from_millis(20),
        Duration::from_millis(100),
    ))
}

/// Waits for the next SET of `key` to `holder` (a renewal), skipping other events.
async fn next_renewal(changes: &mut Observation, holder: &str) {
    loop {
        match kit::next_event(changes).await {
            Some(KeyEvent::Set { value, .. }) if value == holder => return,
            Some(_) => continue,
            None => panic!("the observation ended"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_survives_an_outage_shorter_than_the_ttl() {
    let ttl = Duration::from_secs(2);
    let server = kit::embedded().await;
    let proxy = Proxy::start(server.local_addr()).await.expect("proxy");
    let holder_client = Client::connect(eager(kit::options(proxy.addr())))
        .await
        .unwrap();
    let watcher = kit::client(&server).await;
    let lease = Lease::new(&holder_client, "lease", "holder")
        .unwrap()
        .auto_renew(true);
    let token = lease.acquire(ttl).await.unwrap();
    let mut changes = watcher.observe("lease").await.unwrap();
    next_renewal(&mut changes, "holder").await;

    // Right after a renewal: down for half the TTL, so the next renewal falls in the outage.
    proxy.refuse(true);
    proxy.cut();
    tokio::time::sleep(ttl / 2).await;
    proxy.refuse(false);

    next_renewal(&mut changes, "holder").await;
    next_renewal(&mut changes, "holder").await;
    assert!(proxy.accepted() >= 2, "the holder reconnected");
    assert_eq!(lease.state(), LeaseState::Held { token });
    assert_eq!(lease.holder().await.unwrap(), Some("holder".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_ttl_is_reported_as_a_loss_before_a_takeover() {
    let ttl = Duration::from_millis(800);
    let server = kit::embedded().await;
    let proxy = Proxy::start(server.local_addr()).await.expect("proxy");
    let holder_client = Client::connect(eager(kit::options(proxy.addr())))
        .await
        .unwrap();
    let other_client = kit::client(&server).await;
    let lease = Lease::new(&holder_client, "lease", "holder")
        .unwrap()
        .auto_renew(true);
    let other = Lease::new(&other_client, "lease", "other").unwrap();
    let old_token = lease.acquire(ttl).await.unwrap();

    proxy.refuse(true);
    proxy.cut();
    // The other client takes the lease once the service expires it; by then the holder must
    // already know it lost it.
    let new_token = tokio::time::timeout(ttl * 10, other.acquire(ttl))
        .await
        .expect("the lease expires within its TTL")
        .unwrap();
    let LeaseState::Lost(loss) = lease.state() else {
        panic!(
            "the holder still believes it holds the lease: {:?}",
            lease.state()
        );
    };
    assert_eq!(loss.reason, LossReason::Expired);
    assert!(loss.error.is_some(), "the failed renewal is reported");
    assert!(new_token > old_token);

    // Back online, the old holder stays out and cannot renew.
    proxy.refuse(false);
    assert!(lease.renew().await.is_err());
    assert_eq!(other.holder().await.unwrap(), Some("other".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_survives_a_mosquitto_restart() {
    let ttl = Duration::from_secs(2);
    let (mut broker, _server) = kit::on_mosquitto().await;
    // Requests sent before the state store has re-subscribed are lost: short timeouts.
    let holder_client = Client::connect(eager(kit::quick(broker.addr())))
        .await
        .unwrap();
    let watcher = Client::connect(eager(kit::quick(broker.addr())))
        .await
        .unwrap();
    let lease = Lease::new(&holder_client, "lease", "holder")
        .unwrap()
        .auto_renew(true);
    let token = lease.acquire(ttl).await.unwrap();
    let states = lease.watch();
    let mut changes = watcher.observe("lease").await.unwrap();

    // Restarting waits for the process: off the runtime's threads, which renew the lease.
    let _broker = tokio::task::spawn_blocking(move || {
        broker.restart().expect("restart mosquitto");
        broker
    })
    .await
    .unwrap();

    // The watcher's observation is restored, then renewals go on; the lease never changed
    // state meanwhile.
    loop {
        match kit::next_event(&mut changes).await {
            Some(KeyEvent::Resynced { value }) => {
                assert_eq!(value.map(|v| v.value), Some("holder".into()));
                break;
            }
            Some(_) => continue,
            None => panic!("the observation ended"),
        }
    }
    next_renewal(&mut changes, "holder").await;
    next_renewal(&mut changes, "holder").await;
    assert!(!states.has_changed(), "{:?}", states.current());
    assert_eq!(lease.state(), LeaseState::Held { token });
}
