//! Many clients contending for one lock: never two holders at once, fencing tokens that only
//! grow, and a counter incremented under the lock that counts every increment.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use statestore::lease::Lock;
use statestore::{Client, Hlc, SetOptions};
use statestore_testkit as kit;
use tokio::task::JoinSet;

const CLIENTS: usize = 8;
const TTL: Duration = Duration::from_secs(2);

fn number(value: Option<bytes::Bytes>) -> u64 {
    value
        .map(|v| std::str::from_utf8(&v).unwrap().parse().unwrap())
        .unwrap_or(0)
}

async fn clients(addr: SocketAddr) -> Vec<Client> {
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(Client::connect(kit::options(addr)).await.unwrap());
    }
    clients
}

/// Shared by the contenders: how many believe they hold the lock, the last token seen.
#[derive(Default)]
struct Witness {
    holders: AtomicUsize,
    last_token: Mutex<Option<Hlc>>,
}

impl Witness {
    fn enter(&self, token: &Hlc) {
        let before = self.holders.fetch_add(1, Ordering::SeqCst);
        assert_eq!(before, 0, "two clients hold the lock at once");
        let mut last = self.last_token.lock().unwrap();
        if let Some(last) = last.as_ref() {
            assert!(token > last, "fencing token {token} not above {last}");
        }
        *last = Some(token.clone());
    }

    fn leave(&self) {
        self.holders.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Each client takes the lock `rounds` times and increments the counter by hand (GET, then
/// SET with the fencing token) while holding it.
async fn contend_with_guards(addr: SocketAddr, rounds: usize) {
    let witness = Arc::new(Witness::default());
    let mut tasks = JoinSet::new();
    for client in clients(addr).await {
        let witness = witness.clone();
        tasks.spawn(async move {
            let lock = Lock::new(&client, "lock", TTL).unwrap();
            for _ in 0..rounds {
                let guard = lock.lock().await.unwrap();
                witness.enter(guard.fencing_token());
                let n = number(client.get("counter").await.unwrap().map(|v| v.value));
                let fenced = SetOptions::default().fencing_token(guard.fencing_token().clone());
                client
                    .set("counter", (n + 1).to_string(), fenced)
                    .await
                    .unwrap();
                assert!(guard.is_held(), "the lock was lost: {:?}", guard.state());
                witness.leave();
                guard.release().await.unwrap();
                // Think time, so that the releaser does not always win the next round.
                tokio::time::sleep(Duration::from_millis(fastrand::u64(0..5))).await;
            }
            client.close().await.unwrap();
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    let reader = Client::connect(kit::options(addr)).await.unwrap();
    let total = number(reader.get("counter").await.unwrap().map(|v| v.value));
    assert_eq!(total, (CLIENTS * rounds) as u64);
    assert_eq!(reader.get("lock").await.unwrap(), None, "the lock is free");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_never_hold_the_lock_together() {
    let server = kit::embedded().await;
    contend_with_guards(server.local_addr(), 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_never_hold_the_lock_together_through_mosquitto() {
    let (_broker, server) = kit::on_mosquitto().await;
    contend_with_guards(server.local_addr(), 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_under_contention_count_every_increment() {
    const ROUNDS: usize = 15;
    let server = kit::embedded().await;
    let mut tasks = JoinSet::new();
    for client in clients(server.local_addr()).await {
        tasks.spawn(async move {
            let lock = Lock::new(&client, "lock", TTL).unwrap();
            let mut written = Vec::new();
            for _ in 0..ROUNDS {
                let value = lock
                    .update("counter", |old| Some((number(old) + 1).to_string().into()))
                    .await
                    .unwrap();
                written.push(number(value));
            }
            written
        });
    }
    let mut written = Vec::new();
    while let Some(result) = tasks.join_next().await {
        written.extend(result.unwrap());
    }
    written.sort_unstable();
    let expected: Vec<u64> = (1..=(CLIENTS * ROUNDS) as u64).collect();
    assert_eq!(written, expected, "every increment wrote a distinct value");
    let reader = kit::client(&server).await;
    let total = number(reader.get("counter").await.unwrap().map(|v| v.value));
    assert_eq!(total, (CLIENTS * ROUNDS) as u64);
}
