//! Leases against a scripted service whose replies the test holds back: the interleavings of
//! a renewal, an acquisition and a release that a real service only produces by chance.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use statestore::lease::{Lease, LeaseState, Loss, LossReason};
use statestore::protocol::Request;
use statestore::{Client, Error};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Gate, Received, Reply, Scripted};
use statestore_testkit::{within, SatBroker};

const TS: &str = "1700000000000:0:StateStore";

async fn start(
    script: impl Fn(&Received) -> Option<Reply> + Send + Sync + 'static,
) -> (SatBroker, Scripted, Client) {
    let broker = SatBroker::start().await.expect("SAT broker");
    let service = Scripted::start(broker.addr(), script).await;
    // Calls wait far longer than the TTLs used here: only the gates decide when they end.
    let options = kit::options(broker.addr()).default_timeout(Duration::from_secs(45));
    let client = Client::connect(options).await.expect("connect");
    (broker, service, client)
}

/// A service that never answers a SET and answers anything else with `:1`.
async fn start_with_sets_unanswered() -> (SatBroker, Scripted, Client) {
    let never = Gate::new();
    start(move |received| match received.request {
        Request::Set { .. } => Some(Reply::ok(b"+OK\r\n").with("__ts", TS).after(&never)),
        _ => Some(Reply::ok(b":1\r\n")),
    })
    .await
}

/// Polls `future` once: whether it finished.
async fn poll_once<F: Future>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

/// A release that starts while an acquisition is in flight ends the
/// holding that acquisition begins, instead of clearing the state before it and leaving
/// `Held` for a key its VDEL deleted.
#[tokio::test]
async fn a_release_ends_the_holding_of_an_acquisition_in_flight() {
    let set_replies = Gate::new();
    let (_broker, service, client) = start({
        let set_replies = set_replies.clone();
        move |received| match received.request {
            Request::Set { .. } => Some(Reply::ok(b"+OK\r\n").with("__ts", TS).after(&set_replies)),
            Request::VDel { .. } => Some(Reply::ok(b":1\r\n")),
            _ => Some(Reply::ok(b"$-1\r\n")),
        }
    })
    .await;
    let lease = Lease::new(&client, "printer", "alice").unwrap();
    let acquiring = tokio::spawn({
        let lease = lease.clone();
        async move { lease.try_acquire(Duration::from_secs(30)).await }
    });
    service.wait_received(1).await;

    // The release starts while the SET's reply is held back.
    let mut release = std::pin::pin!(lease.release());
    assert!(poll_once(release.as_mut()).await.is_pending());
    set_replies.open_one();
    let outcome = within("the acquisition", acquiring).await.unwrap();
    assert!(outcome.unwrap().is_acquired());
    assert!(within("the release", release).await.unwrap());

    let received = service.received();
    assert!(
        matches!(received.last().unwrap().request, Request::VDel { .. }),
        "{received:?}"
    );
    assert_eq!(
        lease.state(),
        LeaseState::NotHeld,
        "the key was deleted after the acquisition: the lease is not held"
    );
}

/// Answers the first SET with +OK and a version; later SETs as `script_set` says.
fn first_set_applies(
    later_sets: impl Fn() -> Reply + Send + Sync + 'static,
    gets: impl Fn() -> Reply + Send + Sync + 'static,
) -> impl Fn(&Received) -> Option<Reply> + Send + Sync + 'static {
    let sets = AtomicUsize::new(0);
    move |received| match received.request {
        Request::Set { .. } if sets.fetch_add(1, Ordering::SeqCst) == 0 => {
            Some(Reply::ok(b"+OK\r\n").with("__ts", TS))
        }
        Request::Set { .. } => Some(later_sets()),
        Request::Get { .. } => Some(gets()),
        _ => Some(Reply::ok(b":1\r\n")),
    }
}

/// A renewal that finds another holder declares the loss at once; the
/// holder's name, read afterwards, is filled in when the read answers.
#[tokio::test]
async fn a_renewal_that_finds_another_holder_declares_the_loss_before_reading_it() {
    let get_replies = Gate::new();
    let (_broker, service, client) = start(first_set_applies(
        || Reply::ok(b":-1\r\n").with("__ts", TS),
        {
            let get_replies = get_replies.clone();
            move || Reply::ok(b"$3\r\nbob\r\n").after(&get_replies)
        },
    ))
    .await;
    let lease = Lease::new(&client, "printer", "alice").unwrap();
    assert!(lease
        .try_acquire(Duration::from_secs(30))
        .await
        .unwrap()
        .is_acquired());
    let renewing = tokio::spawn({
        let lease = lease.clone();
        async move { lease.renew().await }
    });
    let received = service.wait_received(3).await;
    assert!(
        matches!(received[2].request, Request::Get { .. }),
        "{received:?}"
    );

    // The GET is not answered yet, and the loss is already known.
    assert_eq!(
        lease.state(),
        LeaseState::Lost(Loss::new(LossReason::TakenOver))
    );
    get_replies.open_one();
    let renewed = within("the renewal", renewing).await.unwrap();
    assert!(matches!(renewed, Err(Error::NotHeld(_))), "{renewed:?}");
    assert_eq!(
        lease.state(),
        LeaseState::Lost(Loss {
            reason: LossReason::TakenOver,
            holder: Some("bob".into()),
            error: None,
        })
    );
}

/// The keeper's renewal waits for the lease's requests (here an
/// acquisition whose SET goes unanswered) no later than the holding's deadline, and then
/// declares the loss.
#[tokio::test]
async fn expiry_is_declared_while_an_acquisition_holds_the_requests() {
    let set_replies = Gate::new();
    let (_broker, service, client) = start(first_set_applies(
        {
            let set_replies = set_replies.clone();
            move || {
                Reply::ok(b"+OK\r\n")
                    .with("__ts", "1700000000001:0:StateStore")
                    .after(&set_replies)
            }
        },
        || Reply::ok(b"$-1\r\n"),
    ))
    .await;
    let ttl = Duration::from_secs(2);
    let lease = Lease::new(&client, "printer", "alice").unwrap();
    assert!(lease.try_acquire(ttl).await.unwrap().is_acquired());
    let acquiring = tokio::spawn({
        let lease = lease.clone();
        async move { lease.try_acquire(ttl).await }
    });
    service.wait_received(2).await;
    // Renewing from now on: the renewal is due, and has to wait for the acquisition.
    lease.set_auto_renew(true);

    let loss = within("the loss", lease.lost()).await;
    assert_eq!(loss.map(|l| l.reason), Some(LossReason::Expired));
    assert!(
        !acquiring.is_finished(),
        "declared while the acquisition still waits for its answer"
    );
    assert_eq!(service.received().len(), 2, "no renewal went out");

    // The acquisition that lands begins a new holding (whose deadline counts from when its
    // SET was sent, so it may already be over).
    set_replies.open_one();
    let acquired = within("the acquisition", acquiring).await.unwrap();
    assert!(acquired.unwrap().is_acquired());
}

/// An acquisition (as when `statestore lock` is interrupted by SIGINT) whose future is
/// dropped while its SET is in flight gives the key back (the SET may have applied), as one
/// cut short by its timeout does, even if the client is closed right after.
#[tokio::test]
async fn an_acquisition_dropped_mid_attempt_gives_the_key_back() {
    let (_broker, service, client) = start_with_sets_unanswered().await;
    let lease = Lease::new(&client, "printer", "alice").unwrap();
    let acquiring = tokio::spawn({
        let lease = lease.clone();
        async move { lease.acquire(Duration::from_secs(30)).await }
    });
    service.wait_received(1).await;
    acquiring.abort();
    assert!(acquiring.await.unwrap_err().is_cancelled());
    // Closing at once, as `statestore lock` does after the signal, still lets it out.
    within("the close", client.close()).await.unwrap();

    let received = service.received();
    assert!(
        matches!(
            &received[1].request,
            Request::VDel { key, value } if key == "printer" && value == "alice"
        ),
        "{received:?}"
    );
    assert_eq!(lease.state(), LeaseState::NotHeld);
}

/// Closing the client while an acquisition's SET is in flight ends the acquisition with
/// `Closed` and gives the key back before the connection goes (the SET may have applied):
/// a lock is not left taken by a closed client until its TTL ends. One attempt
/// (`try_acquire`) and a wait (`acquire`) alike.
#[tokio::test]
async fn closing_during_an_acquisition_gives_the_key_back() {
    for waits in [false, true] {
        let (_broker, service, client) = start_with_sets_unanswered().await;
        let lease = Lease::new(&client, "printer", "alice").unwrap();
        let acquiring = tokio::spawn({
            let lease = lease.clone();
            async move {
                if waits {
                    lease.acquire(Duration::from_secs(30)).await.map(|_| ())
                } else {
                    lease.try_acquire(Duration::from_secs(30)).await.map(|_| ())
                }
            }
        });
        service.wait_received(1).await;
        within("the close", client.close()).await.unwrap();

        let ended = within("the acquisition", acquiring).await.unwrap();
        assert!(
            matches!(ended, Err(Error::Closed)),
            "waits {waits}: {ended:?}"
        );
        let received = service.received();
        assert!(
            matches!(
                received.get(1).map(|r| &r.request),
                Some(Request::VDel { key, value }) if key == "printer" && value == "alice"
            ),
            "waits {waits}: {received:?}"
        );
        assert_eq!(lease.state(), LeaseState::NotHeld);
    }
}
