//! A lock stays exclusive across a restart of the state store: leases write their key with
//! `aio-persistence`, so a restarted server (`--data-dir`) still knows the holder while its
//! lease is valid. Without it a second holder would get the lock at once after a SIGKILL
//! (the chaos run checks this end to end).

use std::time::Duration;

use statestore::lease::Lock;
use statestore::{Client, ConnectOptions, SetOptions};
use statestore_server::{Mode, PersistenceConfig, Server, ServerConfig};

fn config(dir: &std::path::Path, listen: std::net::SocketAddr) -> ServerConfig {
    ServerConfig {
        mode: Mode::Embedded { listen },
        persistence: Some(PersistenceConfig::new(dir)),
        ..ServerConfig::default()
    }
}

fn options(addr: std::net::SocketAddr) -> ConnectOptions {
    statestore_testkit::options(addr).default_timeout(Duration::from_secs(5))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_stays_exclusive_across_a_state_store_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(config(dir.path(), "127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap();
    let addr = server.local_addr();
    let first = Client::connect(options(addr)).await.unwrap();
    let second = Client::connect(options(addr)).await.unwrap();
    let ttl = Duration::from_secs(10);
    let held = Lock::new(&first, "lock", ttl)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let token = held.fencing_token().clone();
    let persisted = SetOptions::default().persist(true).fencing_token(token);
    first.set("counter", "1", persisted).await.unwrap();

    server.shutdown().await;
    let server = Server::start(config(dir.path(), addr)).await.unwrap();
    assert_eq!(
        second.get("counter").await.unwrap().unwrap().value,
        "1",
        "the persisted key survived the restart"
    );

    // The first holder's lease runs for 10 s and nothing told it otherwise.
    let contender = Lock::new(&second, "lock", ttl)
        .unwrap()
        .timeout(Duration::from_secs(3));
    let taken = tokio::time::timeout(Duration::from_secs(30), contender.lock())
        .await
        .expect("lock() ends within its timeout");
    assert!(
        !(held.is_held() && taken.is_ok()),
        "two holders at once after the restart: the first ({:?}) and the second (token {:?})",
        held.state(),
        taken.as_ref().map(|g| g.fencing_token().to_string()),
    );
    server.shutdown().await;
}
