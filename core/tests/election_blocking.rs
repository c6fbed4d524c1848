//! The blocking election, from plain threads: a standby takes over when the leader's client
//! is closed, and the leadership stream shows it.

use std::time::Duration;

use statestore::blocking::{Client, Election};
use statestore::lease::{LeaderEvent, LossReason};
use statestore_testkit as kit;

const TTL: Duration = Duration::from_millis(500);

#[test]
fn the_standby_takes_over_when_the_leader_dies() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let connect = || Client::connect(kit::options(server.local_addr())).unwrap();
    let (leader_client, standby_client, watcher) = (connect(), connect(), connect());
    let leader = Election::new(&leader_client, "leader", "primary", TTL).unwrap();
    let standby = Election::new(&standby_client, "leader", "standby", TTL).unwrap();
    let mut changes = Election::new(&watcher, "leader", "watcher", TTL)
        .unwrap()
        .observe()
        .unwrap();
    let wait = Duration::from_secs(10);
    assert_eq!(
        changes.next_timeout(wait).unwrap(),
        Some(LeaderEvent::Vacant)
    );

    let term = leader.campaign().unwrap();
    assert!(leader.is_leader());
    assert_eq!(leader.fencing_token(), Some(term.clone()));
    assert_eq!(
        changes.next_timeout(wait).unwrap(),
        Some(LeaderEvent::Elected {
            leader: "primary".into()
        })
    );
    let campaign = std::thread::spawn(move || standby.campaign().map(|term| (standby, term)));

    leader_client.close().unwrap();
    let loss = leader.lost().unwrap().expect("lost, not resigned");
    assert_eq!(loss.reason, LossReason::ClientClosed);
    let (standby, standby_term) = campaign.join().unwrap().unwrap();
    assert!(standby_term > term);
    assert_eq!(standby.leader().unwrap(), Some("standby".into()));
    assert_eq!(
        changes.next_timeout(wait).unwrap(),
        Some(LeaderEvent::Vacant)
    );
    assert_eq!(
        changes.next_timeout(wait).unwrap(),
        Some(LeaderEvent::Elected {
            leader: "standby".into()
        })
    );
    standby.resign().unwrap();
    assert_eq!(standby.lost().unwrap(), None);
    assert_eq!(
        changes.next_timeout(wait).unwrap(),
        Some(LeaderEvent::Vacant)
    );
}
