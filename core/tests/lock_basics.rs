//! Locks and guards against the embedded state store: try, wait, timeout, release on drop,
//! loss, and the acquire-and-update helper.

use std::time::Duration;

use statestore::lease::{LeaseState, Lock, LossReason};
use statestore::{Error, KeyEvent, ServiceError, SetOptions};
use statestore_testkit as kit;

const TTL: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_is_not_taken_and_is_free_again_after_release() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    let guard = lock.try_lock().await.unwrap().expect("free");
    assert!(guard.is_held());
    assert_eq!(guard.name(), "lock");
    assert_eq!(
        lock.holder().await.unwrap().as_ref(),
        Some(guard.holder_name())
    );
    // Every guard has a holder name of its own, even on the same client.
    assert!(lock.try_lock().await.unwrap().is_none());
    guard.release().await.unwrap();
    assert_eq!(lock.holder().await.unwrap(), None);
    assert!(lock.try_lock().await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_guard_releases_the_lock_and_wakes_a_waiter() {
    let (server, client) = kit::embedded_with_client().await;
    let other = kit::client(&server).await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    let guard = lock.lock().await.unwrap();
    let first_token = guard.fencing_token().clone();
    let waiter = tokio::spawn({
        let lock = Lock::new(&other, "lock", TTL).unwrap();
        async move { lock.lock().await.map(|g| g.fencing_token().clone()) }
    });
    drop(guard);
    let second_token = waiter.await.unwrap().unwrap();
    assert!(second_token > first_token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_stops_at_the_timeout() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    let _guard = lock.lock().await.unwrap();
    let waiting = lock.clone().timeout(Duration::from_millis(200));
    assert_eq!(
        waiting.lock().await.unwrap_err(),
        Error::Timeout(Duration::from_millis(200))
    );
    assert_eq!(
        waiting.update("k", |_| Some("v".into())).await,
        Err(Error::Timeout(Duration::from_millis(200)))
    );
    assert_eq!(client.get("k").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_without_renewal_loses_the_lock_after_its_ttl() {
    let (server, client) = kit::embedded_with_client().await;
    let other = kit::client(&server).await;
    let ttl = Duration::from_millis(400);
    let lock = Lock::new(&client, "lock", ttl).unwrap().auto_renew(false);
    let guard = lock.lock().await.unwrap();
    let mut changes = other.observe("lock").await.unwrap();
    guard.renew().await.unwrap();
    let loss = guard.lost().await.expect("lost, not released");
    assert_eq!(loss.reason, LossReason::Expired);
    assert!(!guard.is_held());
    assert!(matches!(guard.renew().await, Err(Error::NotHeld(_))));
    // The service expires the key too (and notifies).
    loop {
        match changes.next().await {
            Some(KeyEvent::Delete { .. }) => break,
            Some(KeyEvent::Set { .. }) => continue,
            other => panic!("expected the expiry, got {other:?}"),
        }
    }
    let next = Lock::new(&other, "lock", ttl).unwrap();
    let next_guard = next.try_lock().await.unwrap().expect("expired");
    assert!(next_guard.fencing_token() > guard.fencing_token());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_reads_writes_with_the_token_and_deletes_on_none() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    let mut seen = Vec::new();
    let written = lock
        .update("k", |old| {
            seen.push(old.clone());
            Some("one".into())
        })
        .await
        .unwrap();
    assert_eq!(written, Some("one".into()));
    let written = lock
        .update("k", |old| {
            seen.push(old.clone());
            Some("two".into())
        })
        .await
        .unwrap();
    assert_eq!(written, Some("two".into()));
    assert_eq!(seen, vec![None, Some("one".into())]);
    assert_eq!(
        lock.holder().await.unwrap(),
        None,
        "released after each update"
    );

    // The key is fenced now: writes that bypass the lock are refused.
    assert_eq!(
        client.set("k", "rogue", SetOptions::default()).await,
        Err(Error::Service(ServiceError::FencingTokenRequired))
    );

    assert_eq!(lock.update("k", |_| None).await.unwrap(), None);
    assert_eq!(client.get("k").await.unwrap(), None);
    // Nothing to delete: nothing sent, nothing fails.
    assert_eq!(lock.update("k", |_| None).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_refuses_bad_keys_without_taking_the_lock() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    for key in ["", "lock"] {
        assert!(matches!(
            lock.update(key, |_| Some("v".into())).await,
            Err(Error::InvalidArgument(_))
        ));
    }
    assert_eq!(lock.holder().await.unwrap(), None);
    assert!(matches!(
        Lock::new(&client, "", TTL),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Lock::new(&client, "lock", Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_reports_its_state_until_released() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    let guard = lock.lock().await.unwrap();
    assert_eq!(
        guard.state(),
        LeaseState::Held {
            token: guard.fencing_token().clone()
        }
    );
    let lost = tokio::time::timeout(Duration::from_millis(50), guard.lost()).await;
    assert!(lost.is_err(), "held: lost() keeps waiting");
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_phase_update_holds_the_lock_between_read_and_write() {
    let (_server, client) = kit::embedded_with_client().await;
    let lock = Lock::new(&client, "lock", TTL).unwrap();
    client
        .set("counter", "41", SetOptions::default())
        .await
        .unwrap();
    let txn = lock.begin_update("counter").await.unwrap();
    assert_eq!(txn.key(), "counter");
    assert_eq!(txn.old_value().map(|v| &v[..]), Some(&b"41"[..]));
    assert!(
        lock.try_lock().await.unwrap().is_none(),
        "held between the phases"
    );
    let token = txn.fencing_token().clone();
    assert_eq!(
        txn.commit(Some("42".into())).await.unwrap(),
        Some("42".into())
    );
    assert_eq!(lock.holder().await.unwrap(), None, "released by the commit");
    // The write carried the token: an unfenced write is now refused.
    assert_eq!(
        client.set("counter", "0", SetOptions::default()).await,
        Err(Error::Service(ServiceError::FencingTokenRequired))
    );
    let version = client.get("counter").await.unwrap().and_then(|v| v.version);
    assert!(
        version > Some(token),
        "the key moved past the token that fenced it"
    );

    let txn = lock.begin_update("counter").await.unwrap();
    txn.abort().await.unwrap();
    assert_eq!(lock.holder().await.unwrap(), None, "released by the abort");
    assert_eq!(
        client.get("counter").await.unwrap().map(|v| v.value),
        Some("42".into()),
        "an abort writes nothing"
    );
}
