//! Leases against the embedded state store: acquire, hold, renew, release, expiry and the
//! fencing that refuses a stale holder, loss reasons, drop.

use std::time::Duration;

use statestore::lease::{AcquireOutcome, Lease, LeaseState, LossReason};
use statestore::{Client, DeleteOptions, Error, KeyEvent, ServiceError, SetOptions};
use statestore_testkit as kit;

const TTL: Duration = Duration::from_millis(500);

fn fenced(token: &statestore::Hlc) -> SetOptions {
    SetOptions::default().fencing_token(token.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_holder_at_a_time_and_release_only_deletes_our_own() {
    let (server, alice_client) = kit::embedded_with_client().await;
    let bob_client = kit::client(&server).await;
    let alice = Lease::new(&alice_client, "printer", "alice").unwrap();
    let bob = Lease::new(&bob_client, "printer", "bob").unwrap();

    let AcquireOutcome::Acquired { token } = alice.try_acquire(TTL * 10).await.unwrap() else {
        panic!("the lease was free");
    };
    assert_eq!(alice.fencing_token(), Some(token.clone()));
    assert_eq!(
        alice.state(),
        LeaseState::Held {
            token: token.clone()
        }
    );
    assert_eq!(
        bob.try_acquire(TTL).await.unwrap(),
        AcquireOutcome::HeldBy {
            holder: Some("alice".into())
        }
    );
    assert_eq!(bob.holder().await.unwrap(), Some("alice".into()));
    assert!(!bob.is_held());

    // Acquiring again renews and keeps the token.
    assert_eq!(
        alice.try_acquire(TTL * 10).await.unwrap().token(),
        Some(&token)
    );
    alice.renew().await.unwrap();
    assert_eq!(alice.fencing_token(), Some(token.clone()));

    // Bob's release does not delete Alice's lease.
    assert!(!bob.release().await.unwrap());
    assert_eq!(alice.holder().await.unwrap(), Some("alice".into()));

    assert!(alice.release().await.unwrap());
    assert_eq!(alice.state(), LeaseState::NotHeld);
    assert_eq!(alice.holder().await.unwrap(), None);
    let bob_token = bob.try_acquire(TTL).await.unwrap();
    assert!(bob_token.token().unwrap() > &token, "{bob_token:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_waits_for_the_release() {
    let (server, alice_client) = kit::embedded_with_client().await;
    let bob_client = kit::client(&server).await;
    let alice = Lease::new(&alice_client, "printer", "alice").unwrap();
    let bob = Lease::new(&bob_client, "printer", "bob").unwrap();
    let alice_token = alice.acquire(Duration::from_secs(30)).await.unwrap();

    let waiting = tokio::spawn({
        let bob = bob.clone();
        async move { bob.acquire(Duration::from_secs(30)).await }
    });
    assert!(!waiting.is_finished(), "Alice holds it for 30 s");
    alice.release().await.unwrap();

    let bob_token = waiting.await.unwrap().unwrap();
    assert!(bob_token > alice_token);
    assert_eq!(bob.holder().await.unwrap(), Some("bob".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_stops_renewing_loses_and_its_old_token_is_refused() {
    let (server, old_client) = kit::embedded_with_client().await;
    let new_client = kit::client(&server).await;
    let old = Lease::new(&old_client, "lease", "old").unwrap();
    let new = Lease::new(&new_client, "lease", "new").unwrap();

    let old_token = old.acquire(TTL).await.unwrap();
    old_client
        .set("protected", "by old", fenced(&old_token))
        .await
        .unwrap();

    // The old holder never renews: the lease expires on the service, the new holder (waiting
    // on the notification) takes it, and the old holder is told at its deadline.
    let (new_token, loss) = tokio::join!(new.acquire(TTL * 10), old.lost());
    let new_token = new_token.unwrap();
    let loss = loss.expect("lost, not released");
    assert_eq!(loss.reason, LossReason::Expired);
    assert!(new_token > old_token);
    assert!(matches!(old.renew().await, Err(Error::NotHeld(_))));

    new_client
        .set("protected", "by new", fenced(&new_token))
        .await
        .unwrap();
    let stale = old_client
        .set("protected", "by old, late", fenced(&old_token))
        .await;
    assert_eq!(
        stale,
        Err(Error::Service(ServiceError::FencingTokenLowerVersion))
    );
    let stale_delete = old_client
        .delete(
            "protected",
            DeleteOptions::default().fencing_token(old_token),
        )
        .await;
    assert_eq!(
        stale_delete,
        Err(Error::Service(ServiceError::FencingTokenLowerVersion))
    );
    assert_eq!(
        new_client.get("protected").await.unwrap().unwrap().value,
        "by new"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_renewal_holds_the_lease_over_many_ttls() {
    let (server, holder_client) = kit::embedded_with_client().await;
    let other_client = kit::client(&server).await;
    let holder = Lease::new(&holder_client, "lease", "holder")
        .unwrap()
        .auto_renew(true);
    let other = Lease::new(&other_client, "lease", "other").unwrap();
    let token = holder.acquire(Duration::from_millis(300)).await.unwrap();

    // Renewals show up as SET notifications of our holder name.
    let mut changes = other_client.observe("lease").await.unwrap();
    for _ in 0..5 {
        match changes.next().await {
            Some(KeyEvent::Set { value, .. }) => assert_eq!(value, "holder"),
            other => panic!("expected a renewal, got {other:?}"),
        }
    }
    assert_eq!(
        other
            .acquire_timeout(Duration::from_millis(300), Duration::from_secs(1))
            .await,
        Err(Error::Timeout(Duration::from_secs(1)))
    );
    assert_eq!(holder.state(), LeaseState::Held { token });
    assert_eq!(other.holder().await.unwrap(), Some("holder".into()));

    assert!(holder.release().await.unwrap());
    loop {
        match changes.next().await {
            Some(KeyEvent::Delete { .. }) => break,
            Some(KeyEvent::Set { .. }) => continue, // Renewals while the other one waited.
            other => panic!("expected the release, got {other:?}"),
        }
    }
    assert!(other.try_acquire(TTL).await.unwrap().is_acquired());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_finds_another_holder_reports_the_takeover() {
    let (_server, client) = kit::embedded_with_client().await;
    let lease = Lease::new(&client, "lease", "me").unwrap().auto_renew(true);
    lease.acquire(Duration::from_millis(600)).await.unwrap();
    // Someone ignores the protocol and overwrites the key.
    client
        .set("lease", "intruder", SetOptions::default())
        .await
        .unwrap();
    let loss = lease.lost().await.expect("lost");
    assert_eq!(loss.reason, LossReason::TakenOver);
    // The holder is read after the loss is declared, and filled in then.
    let mut states = lease.watch();
    let holder = kit::within("the holder in the loss", async {
        loop {
            if let Some(holder) = lease.state().loss().and_then(|l| l.holder.clone()) {
                return holder;
            }
            let _ = states.changed().await;
        }
    })
    .await;
    assert_eq!(holder, "intruder");
    assert!(matches!(lease.state(), LeaseState::Lost(_)));
    assert_eq!(lease.fencing_token(), None);
    // Our release leaves the intruder's key alone.
    assert!(!lease.release().await.unwrap());
    assert_eq!(
        client.get("lease").await.unwrap().unwrap().value,
        "intruder"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_loses_the_lease() {
    let (_server, client) = kit::embedded_with_client().await;
    let lease = Lease::new(&client, "lease", "me").unwrap().auto_renew(true);
    lease.acquire(Duration::from_millis(600)).await.unwrap();
    client.close().await.unwrap();
    let loss = lease.lost().await.expect("lost");
    assert_eq!(loss.reason, LossReason::ClientClosed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_releases_the_lease() {
    let (server, client) = kit::embedded_with_client().await;
    let watcher = kit::client(&server).await;
    let lease = Lease::new(&client, "lease", "me").unwrap().auto_renew(true);
    lease.acquire(Duration::from_secs(30)).await.unwrap();
    let mut changes = watcher.observe("lease").await.unwrap();
    let clone = lease.clone();
    drop(lease);
    assert!(clone.is_held(), "a clone keeps the holding");
    drop(clone);
    loop {
        match changes.next().await {
            Some(KeyEvent::Delete { .. }) => break,
            Some(KeyEvent::Set { .. }) => continue, // A renewal before the drop.
            other => panic!("expected the release, got {other:?}"),
        }
    }
    assert_eq!(watcher.get("lease").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_can_be_awaited() {
    let (_server, client) = kit::embedded_with_client().await;
    let lease = Lease::new(&client, "lease", "me").unwrap();
    let mut states = lease.watch();
    assert_eq!(states.current(), LeaseState::NotHeld);
    assert_eq!(lease.lost().await, None, "not held: returns at once");
    let token = lease.acquire(TTL).await.unwrap();
    assert_eq!(states.changed().await, Some(LeaseState::Held { token }));
    lease.release().await.unwrap();
    assert_eq!(states.changed().await, Some(LeaseState::NotHeld));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_before_anything_is_sent() {
    let (_server, client) = kit::embedded_with_client().await;
    let invalid = |result: statestore::Result<Lease>| {
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "{result:?}"
        )
    };
    invalid(Lease::new(&client, "", "me"));
    invalid(Lease::new(&client, "k", ""));
    let lease = Lease::new(&client, "k", "me").unwrap();
    assert!(matches!(
        lease.try_acquire(Duration::from_micros(10)).await,
        Err(Error::InvalidArgument(text)) if text.contains("TTL")
    ));
    assert!(matches!(lease.renew().await, Err(Error::NotHeld(_))));
    assert_eq!(client.get("k").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_wait_leaves_no_key_behind() {
    let (server, holder_client) = kit::embedded_with_client().await;
    let waiter_client = kit::client(&server).await;
    let holder = Lease::new(&holder_client, "lease", "holder").unwrap();
    let waiter = Lease::new(&waiter_client, "lease", "waiter").unwrap();
    holder.acquire(Duration::from_secs(30)).await.unwrap();
    let result = waiter
        .acquire_timeout(Duration::from_secs(30), Duration::from_millis(200))
        .await;
    assert_eq!(result, Err(Error::Timeout(Duration::from_millis(200))));
    assert_eq!(waiter.state(), LeaseState::NotHeld);
    assert_eq!(
        holder.holder().await.unwrap(),
        Some("holder".into()),
        "the abandoned wait did not touch the holder's key"
    );
}

/// The handles foreign bindings hold: owned, cloneable, shareable across threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_send_and_sync_handles() {
    fn assert_handle<T: Clone + Send + Sync + 'static>() {}
    assert_handle::<Lease>();
    assert_handle::<statestore::Lock>();
    assert_handle::<statestore::Election>();
    assert_handle::<statestore::blocking::Lease>();
    let (_server, client) = kit::embedded_with_client().await;
    let lease = Lease::new(&client, "lease", "me").unwrap();
    let token = tokio::spawn({
        let lease = lease.clone();
        async move { lease.acquire(TTL).await }
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(lease.fencing_token(), Some(token));
    let _: &Client = lease.client();
}
