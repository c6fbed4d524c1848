//! `bindings::lost_within`, the `lost(timeout)` every language calls: the loss or nothing,
//! with one meaning of the timeout (none: until decided, zero: now, else at most that long).
#![cfg(feature = "bindings")]

use std::time::Duration;

use statestore::bindings::{lost_within, Pending};
use statestore::lease::{Lease, LossReason};
use statestore_testkit as kit;

const LONG: Duration = Duration::from_secs(60);

/// Waited for the way a blocking binding waits (on the calling thread).
fn wait(lease: &Lease, timeout: Option<Duration>) -> Option<LossReason> {
    Pending::spawn(lost_within(lease, timeout))
        .wait()
        .unwrap()
        .map(|loss| loss.reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loss_or_nothing_for_every_timeout() {
    let (_server, client) = kit::embedded_with_client().await;
    let never = Lease::new(&client, "never", "me").unwrap();
    let released = Lease::new(&client, "released", "me").unwrap();
    let held = Lease::new(&client, "held", "me").unwrap().auto_renew(true);
    let expiring = Lease::new(&client, "expiring", "me").unwrap();
    released.acquire(LONG).await.unwrap();
    released.release().await.unwrap();
    held.acquire(LONG).await.unwrap();
    expiring.acquire(Duration::from_millis(300)).await.unwrap();

    let loss = kit::within("the expiry", lost_within(&expiring, None))
        .await
        .unwrap();
    assert_eq!(loss.map(|l| l.reason), Some(LossReason::Expired));

    tokio::task::spawn_blocking(move || {
        for timeout in [None, Some(Duration::ZERO), Some(LONG), Some(Duration::MAX)] {
            assert_eq!(wait(&never, timeout), None, "never held, {timeout:?}");
            assert_eq!(wait(&released, timeout), None, "released, {timeout:?}");
            assert_eq!(
                wait(&expiring, timeout),
                Some(LossReason::Expired),
                "lost, {timeout:?}"
            );
        }
        // Still held: zero answers now, a short time answers when it is up; neither is an error.
        assert_eq!(wait(&held, Some(Duration::ZERO)), None);
        assert_eq!(wait(&held, Some(Duration::from_millis(100))), None);
        assert!(held.is_held());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_without_limit_ends_with_the_release() {
    let (_server, client) = kit::embedded_with_client().await;
    let lease = Lease::new(&client, "released-later", "me").unwrap();
    lease.acquire(LONG).await.unwrap();
    let waiting = tokio::spawn(lost_within(&lease, None));
    lease.release().await.unwrap();
    let outcome = kit::within("the release", waiting).await.unwrap().unwrap();
    assert!(outcome.is_none(), "{outcome:?}");
}
