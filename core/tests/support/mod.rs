//! Helpers shared by the client integration tests: servers, a cutting proxy, a scripted
//! stand-in service. Every wait in them fails the test after [`DEADLINE`] instead of hanging.
#![allow(dead_code)]

pub mod proxy;
pub mod sat_broker;
pub mod scripted;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use statestore::{Client, ConnectOptions, KeyEvent, Observation};
use statestore_server::Server;

/// How long a test waits for something to happen before it fails: an event that never comes
/// is a clear failure, not a hang. Far above any wait of a passing run, even on a loaded
/// machine, and below nextest's per-test deadline.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Waits for `future`; fails the test, naming `what`, if it has not finished within
/// [`DEADLINE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(DEADLINE, future).await {
        Ok(output) => output,
        Err(_) => panic!("no {what} within {DEADLINE:?}"),
    }
}

/// The next event of `observation` (`None`: it ended), within [`DEADLINE`].
pub async fn next_event(observation: &mut Observation) -> Option<KeyEvent> {
    let what = format!(
        "event on the observation of {:?}",
        String::from_utf8_lossy(observation.key())
    );
    within(&what, observation.next()).await
}

/// Options for a client of the broker at `addr`.
pub fn options(addr: SocketAddr) -> ConnectOptions {
    ConnectOptions::new(addr.ip().to_string(), addr.port())
}

/// Options with a short default timeout, for tests that wait for timeouts.
pub fn quick(addr: SocketAddr) -> ConnectOptions {
    options(addr).default_timeout(Duration::from_secs(2))
}

/// A client of `server`.
pub async fn client(server: &Server) -> Client {
    Client::connect(options(server.local_addr()))
        .await
        .expect("connect to the test server")
}

/// An embedded server and a client of it.
pub async fn embedded() -> (Server, Client) {
    let server = statestore_server::testing::embedded().await;
    let client = client(&server).await;
    (server, client)
}
