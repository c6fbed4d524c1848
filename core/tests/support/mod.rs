//! Helpers shared by the client integration tests: servers, a cutting proxy, a scripted
//! stand-in service.
#![allow(dead_code)]

pub mod proxy;
pub mod sat_broker;
pub mod scripted;

use std::net::SocketAddr;
use std::time::Duration;

use statestore::{Client, ConnectOptions};
use statestore_server::Server;

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
