//! Leader election with several candidates: one leader at a time, failover when the leader's
//! client dies, resignation, the leadership stream, and the lost-leadership signal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore::lease::{Election, LeaderEvent, LeaseState, LossReason};
use statestore::Client;
use statestore_testkit as kit;
use statestore_testkit::Proxy;
use tokio::sync::mpsc;

// Long enough that a starved 2-core machine does not let a live leader's lease expire.
const TTL: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_failover_when_the_leader_dies() {
    const CANDIDATES: usize = 4;
    let server = kit::embedded().await;
    let watcher = kit::client(&server).await;
    let mut changes = Election::new(&watcher, "leader", "watcher", TTL)
        .unwrap()
        .observe()
        .await
        .unwrap();
    assert_eq!(
        kit::within("a leadership change", changes.next()).await,
        Some(LeaderEvent::Vacant)
    );

    let leaders = Arc::new(AtomicUsize::new(0));
    let (elected, mut elected_rx) = mpsc::unbounded_channel::<(Bytes, Client)>();
    let mut candidates = Vec::new();
    for n in 0..CANDIDATES {
        let client = kit::client(&server).await;
        let election = Election::new(&client, "leader", format!("node-{n}"), TTL).unwrap();
        let leaders = leaders.clone();
        let elected = elected.clone();
        candidates.push(tokio::spawn(async move {
            election.campaign().await.unwrap();
            let before = leaders.fetch_add(1, Ordering::SeqCst);
            assert_eq!(before, 0, "two leaders at once");
            assert!(election.is_leader());
            elected
                .send((election.candidate().clone(), client))
                .unwrap();
            let loss = election.lost().await.expect("lost, not resigned");
            leaders.fetch_sub(1, Ordering::SeqCst);
            assert_eq!(loss.reason, LossReason::ClientClosed);
        }));
    }
    drop(elected);

    let mut order = Vec::new();
    for _ in 0..CANDIDATES {
        let (leader, client) = kit::within("an election", elected_rx.recv())
            .await
            .expect("a leader is elected");
        // The stream shows the same leader (after a vacancy, except for the first one).
        loop {
            match kit::within("a leadership change", changes.next())
                .await
                .expect("stream open")
            {
                LeaderEvent::Elected { leader: shown } => {
                    assert_eq!(shown, leader);
                    break;
                }
                LeaderEvent::Vacant => continue,
            }
        }
        assert_eq!(leaders.load(Ordering::SeqCst), 1);
        order.push(leader);
        // The leader dies: its key expires and another candidate takes over.
        client.close().await.unwrap();
    }
    order.sort();
    order.dedup();
    assert_eq!(order.len(), CANDIDATES, "every candidate led once");
    assert_eq!(
        kit::within("a leadership change", changes.next()).await,
        Some(LeaderEvent::Vacant)
    );
    for candidate in candidates {
        candidate.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resigning_hands_leadership_to_a_waiting_candidate() {
    let server = kit::embedded().await;
    let a_client = kit::client(&server).await;
    let b_client = kit::client(&server).await;
    let a = Election::new(&a_client, "leader", "a", TTL).unwrap();
    let b = Election::new(&b_client, "leader", "b", TTL).unwrap();
    let a_term = a.campaign().await.unwrap();
    assert_eq!(a.leader().await.unwrap(), Some("a".into()));
    assert_eq!(a.fencing_token(), Some(a_term.clone()));
    assert!(!b.try_campaign().await.unwrap().is_acquired());

    let b_campaign = tokio::spawn({
        let b = b.clone();
        async move { b.campaign().await }
    });
    let mut changes = b.observe().await.unwrap();
    assert_eq!(
        kit::within("a leadership change", changes.next()).await,
        Some(LeaderEvent::Elected { leader: "a".into() })
    );
    a.resign().await.unwrap();
    assert_eq!(a.lost().await, None, "resigned, not lost");
    assert!(!a.is_leader());
    let b_term = b_campaign.await.unwrap().unwrap();
    assert!(b_term > a_term);
    assert!(b.is_leader());
    assert_eq!(a.leader().await.unwrap(), Some("b".into()));
    assert_eq!(
        kit::within("a leadership change", changes.next()).await,
        Some(LeaderEvent::Vacant)
    );
    assert_eq!(
        kit::within("a leadership change", changes.next()).await,
        Some(LeaderEvent::Elected { leader: "b".into() })
    );
    // Renewals of the same leader are not changes.
    assert!(changes.try_next().unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_knows_it_lost_before_another_is_elected() {
    let server = kit::embedded().await;
    let proxy = Proxy::start(server.local_addr()).await.expect("proxy");
    let leader_client = Client::connect(kit::options(proxy.addr())).await.unwrap();
    let other_client = kit::client(&server).await;
    let leader = Election::new(&leader_client, "leader", "cut-off", TTL).unwrap();
    let other = Election::new(&other_client, "leader", "other", TTL).unwrap();
    leader.campaign().await.unwrap();

    proxy.refuse(true);
    proxy.cut();
    tokio::time::timeout(TTL * 10, other.campaign())
        .await
        .expect("elected once the old term expires")
        .unwrap();
    match leader.state() {
        LeaseState::Lost(loss) => assert_eq!(loss.reason, LossReason::Expired),
        state => panic!("the old leader still believes it leads: {state:?}"),
    }
    assert_eq!(other.leader().await.unwrap(), Some("other".into()));
}
