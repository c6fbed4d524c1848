//! The blocking lease, from plain threads: acquire, wait, expiry with the stale token
//! refused, automatic renewal, loss signal, and refusal inside an async runtime.

use std::time::Duration;

use statestore::blocking::{Client, Lease};
use statestore::lease::{AcquireOutcome, LeaseState, LossReason};
use statestore::{Error, ServiceError, SetOptions};
use statestore_server::Server;
use statestore_testkit as kit;

const TTL: Duration = Duration::from_millis(500);

fn client(server: &Server) -> Client {
    Client::connect(kit::options(server.local_addr())).unwrap()
}

#[test]
fn a_waiting_holder_takes_over_after_the_ttl_and_the_stale_token_is_refused() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let old_client = client(&server);
    let new_client = client(&server);
    let old = Lease::new(&old_client, "lease", "old").unwrap();
    let new = Lease::new(&new_client, "lease", "new").unwrap();

    let old_token = old.acquire(TTL).unwrap();
    assert_eq!(
        new.try_acquire(TTL).unwrap(),
        AcquireOutcome::HeldBy {
            holder: Some("old".into())
        }
    );
    let fenced = |token: &statestore::Hlc| SetOptions::default().fencing_token(token.clone());
    old_client
        .set("protected", "old", fenced(&old_token))
        .unwrap();

    let waiter = std::thread::spawn(move || new.acquire(TTL * 10).map(|token| (new, token)));
    let loss = old.lost().unwrap().expect("lost, not released");
    assert_eq!(loss.reason, LossReason::Expired);
    let (new, new_token) = waiter.join().unwrap().unwrap();
    assert!(new_token > old_token);
    assert_eq!(new.fencing_token(), Some(new_token.clone()));
    new_client
        .set("protected", "new", fenced(&new_token))
        .unwrap();
    assert_eq!(
        old_client.set("protected", "old again", fenced(&old_token)),
        Err(Error::Service(ServiceError::FencingTokenLowerVersion))
    );
    assert!(matches!(old.renew(), Err(Error::NotHeld(_))));
    assert!(new.release().unwrap());
    assert_eq!(new.holder().unwrap(), None);
}

#[test]
fn automatic_renewal_and_the_loss_signal() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = client(&server);
    let lease = Lease::new(&client, "lease", "me").unwrap().auto_renew(true);
    assert!(lease.is_auto_renew());
    let token = lease.acquire(Duration::from_millis(300)).unwrap();
    // Held across several TTLs, thanks to the renewals.
    assert_eq!(
        lease.lost_timeout(Duration::from_secs(1)).unwrap(),
        LeaseState::Held {
            token: token.clone()
        }
    );
    assert!(lease.is_held());
    client
        .set("lease", "intruder", SetOptions::default())
        .unwrap();
    let LeaseState::Lost(loss) = lease.lost_timeout(Duration::from_secs(10)).unwrap() else {
        panic!("not lost: {:?}", lease.state());
    };
    assert_eq!(loss.reason, LossReason::TakenOver);
    // The holder is read after the loss is declared, and filled in then.
    let mut states = lease.as_async().watch();
    let holder = host.block_on(kit::within("the holder in the loss", async {
        loop {
            if let Some(holder) = lease.state().loss().and_then(|l| l.holder.clone()) {
                return holder;
            }
            let _ = states.changed().await;
        }
    }));
    assert_eq!(holder, "intruder");
    assert_eq!(lease.fencing_token(), None);
    assert_eq!(lease.key(), "lease");
    assert_eq!(lease.holder_name(), "me");
    assert!(!lease.as_async().is_held());
}

#[test]
fn waiting_is_bounded_by_its_timeout() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = client(&server);
    let holder = Lease::new(&client, "lease", "holder").unwrap();
    let waiter = Lease::new(&client, "lease", "waiter").unwrap();
    holder.acquire(Duration::from_secs(30)).unwrap();
    assert_eq!(
        waiter.acquire_timeout(Duration::from_secs(30), Duration::from_millis(200)),
        Err(Error::Timeout(Duration::from_millis(200)))
    );
    assert!(holder.renew().is_ok());
}

#[test]
fn blocking_calls_inside_a_runtime_fail_instead_of_blocking() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = client(&server);
    let lease = Lease::new(&client, "lease", "me").unwrap();
    let result = host.block_on(async { lease.try_acquire(TTL) });
    assert!(matches!(result, Err(Error::Runtime(_))), "{result:?}");
}
