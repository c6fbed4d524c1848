//! `statestore-testkit`: what the Rust tests of this repository share, written once.
//!
//! - Deadlines: [`DEADLINE`] and [`within`]. Every wait of a test goes through them, so an
//!   event that never comes fails the test with a message instead of hanging it.
//! - Ports and processes: [`free_port`], [`rss_kib`], and [`Fixture`] (a helper program that
//!   serves until its standard input closes).
//! - Brokers and servers on free loopback ports: [`Mosquitto`] (the real broker), [`SatBroker`]
//!   (an MQTT 5 broker with `K8S-SAT` enhanced authentication), [`embedded`],
//!   [`embedded_with_engine`], [`on_mosquitto`], [`on_mosquitto_with_engine`], and [`host`]
//!   (a runtime for the servers of tests that call the blocking API).
//! - Faults: [`Proxy`], a TCP proxy that cuts, refuses, swallows and delays connections.
//! - Stand-ins for the state store: [`stand_in::serve`] (subscribes to the request topic and
//!   hands each request over) and [`scripted::Scripted`] (answers as the test scripts it).
//! - Clients: [`options`], [`quick`], [`connect`], [`client`], [`embedded_with_client`],
//!   [`next_event`], [`set_all`].
//! - TLS: [`tls`] (a self-signed certificate, files, a server that speaks only TLS).
//! - For the Python, Node and C suites: the binary `statestore-testkit serve
//!   embedded|mosquitto|mosquitto-alone` starts [`embedded`], [`on_mosquitto`] or a
//!   [`Mosquitto`] alone, prints `ready on 127.0.0.1:PORT`, and serves until its standard
//!   input closes (the same protocol as a [`Fixture`]), so every suite starts its servers the
//!   same way.
//!
//! Helpers that only tests call panic with a message naming what failed: a broken
//! environment (Mosquitto not installed, no loopback) is a failed test. Those that programs
//! call too (the chaos run and the benchmark start Mosquitto, proxies, a SAT broker and
//! stand-ins) return errors.
//!
//! ```no_run
//! use statestore::SetOptions;
//!
//! # async fn demo() {
//! // A real Mosquitto, a state store attached to it, and a proxy in front that can cut links.
//! let (_broker, server) = statestore_testkit::on_mosquitto().await;
//! let proxy = statestore_testkit::Proxy::start(server.local_addr()).await.expect("proxy");
//! let client = statestore_testkit::connect(proxy.addr()).await;
//! client.set("k", "v", SetOptions::default()).await.expect("set");
//! proxy.cut();
//! # }
//! ```
#![warn(missing_docs)]

mod mosquitto;
mod process;
mod proxy;
mod sat;
pub mod scripted;
mod session;
pub mod stand_in;
pub mod tls;

use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use statestore::{Client, ConnectOptions, KeyEvent, Observation, SetOptions};
use statestore_server::{Credentials, EngineConfig, Mode, Server, ServerConfig};
use tokio::sync::Notify;

pub use mosquitto::Mosquitto;
pub use process::Fixture;
pub use proxy::Proxy;
pub use sat::SatBroker;
pub use session::{leftover_subscription, leftover_subscription_to};

/// How long a test waits for something to happen before it fails: an event that never comes
/// is a clear failure, not a hang. Far above any wait of a passing run, even on a loaded
/// machine, and below nextest's per-test deadline.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Waits for `future`; fails the test, naming `what`, if it has not finished within
/// [`DEADLINE`].
///
/// # Panics
/// When the deadline passes.
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(DEADLINE, future).await {
        Ok(output) => output,
        Err(_) => panic!("no {what} within {DEADLINE:?}"),
    }
}

/// Waits, within [`DEADLINE`], until `done` gives a value, asking it again each time
/// `changed` wakes its waiters ([`Notify::notify_waiters`]); fails the test naming `what`.
pub(crate) async fn until<T>(
    what: &str,
    changed: &Notify,
    mut done: impl FnMut() -> Option<T>,
) -> T {
    within(what, async {
        loop {
            // Registered before the check: a change between the check and the wait wakes it.
            let notified = changed.notified();
            if let Some(value) = done() {
                return value;
            }
            notified.await;
        }
    })
    .await
}

/// A loopback port the system considers free right now. Something else may take it before
/// the caller binds it: what then fails names the port, and a rerun picks another.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// `count` loopback ports the system considers free right now, all different: each is held
/// until all are found (one at a time, [`free_port`] may give the same port twice).
pub fn free_ports(count: usize) -> io::Result<Vec<u16>> {
    let held = (0..count)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()?;
    held.iter()
        .map(|listener| Ok(listener.local_addr()?.port()))
        .collect()
}

/// Resident memory of process `pid` in KiB (`None` once it is gone).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// A runtime for the servers of a test that calls the blocking API, which must be called
/// outside any runtime.
///
/// # Panics
/// If the runtime cannot start.
pub fn host() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("start the servers' runtime")
}

/// An embedded server (broker and state store in this process) on `127.0.0.1:<free port>`
/// with default settings.
///
/// # Panics
/// If the server cannot start.
pub async fn embedded() -> Server {
    embedded_with_engine(EngineConfig::default()).await
}

/// Like [`embedded`], with these engine settings (smaller SCAN pages, say).
///
/// # Panics
/// If the server cannot start.
pub async fn embedded_with_engine(engine: EngineConfig) -> Server {
    let config = ServerConfig {
        engine,
        ..ServerConfig::default()
    };
    match Server::start(config).await {
        Ok(server) => server,
        Err(error) => panic!("cannot start the embedded state store: {error}"),
    }
}

/// An [`embedded`] server that lets in only `username` with `password`.
///
/// # Panics
/// If the server cannot start.
pub async fn embedded_with_credentials(username: &str, password: &str) -> Server {
    let config = ServerConfig {
        credentials: Some(Credentials {
            username: username.into(),
            password: password.into(),
        }),
        ..ServerConfig::default()
    };
    match Server::start(config).await {
        Ok(server) => server,
        Err(error) => panic!("cannot start the embedded state store with credentials: {error}"),
    }
}

/// A [`Mosquitto`] and a state store attached to it (external mode).
///
/// # Panics
/// If Mosquitto or the server cannot start.
pub async fn on_mosquitto() -> (Mosquitto, Server) {
    on_mosquitto_with_engine(EngineConfig::default()).await
}

/// Like [`on_mosquitto`], with these engine settings.
///
/// # Panics
/// If Mosquitto or the server cannot start.
pub async fn on_mosquitto_with_engine(engine: EngineConfig) -> (Mosquitto, Server) {
    let broker = match Mosquitto::start() {
        Ok(broker) => broker,
        Err(error) => panic!("cannot start mosquitto (run scripts/setup.sh): {error}"),
    };
    let config = ServerConfig {
        mode: Mode::External {
            host: broker.addr().ip().to_string(),
            port: broker.port(),
        },
        engine,
        ..ServerConfig::default()
    };
    match Server::start(config).await {
        Ok(server) => (broker, server),
        Err(error) => panic!("cannot attach the state store to mosquitto: {error}"),
    }
}

/// Options for a client of the broker at `addr`.
pub fn options(addr: SocketAddr) -> ConnectOptions {
    ConnectOptions::new(addr.ip().to_string(), addr.port())
}

/// Options with a short default timeout (2 s), for tests that wait for timeouts.
pub fn quick(addr: SocketAddr) -> ConnectOptions {
    options(addr).default_timeout(Duration::from_secs(2))
}

/// A client of the broker at `addr`, with default options.
///
/// # Panics
/// If it cannot connect.
pub async fn connect(addr: SocketAddr) -> Client {
    match Client::connect(options(addr)).await {
        Ok(client) => client,
        Err(error) => panic!("cannot connect to the test broker at {addr}: {error}"),
    }
}

/// A client of `server`.
///
/// # Panics
/// If it cannot connect.
pub async fn client(server: &Server) -> Client {
    connect(server.local_addr()).await
}

/// An [`embedded`] server and a client of it.
///
/// # Panics
/// If either cannot start.
pub async fn embedded_with_client() -> (Server, Client) {
    let server = embedded().await;
    let client = client(&server).await;
    (server, client)
}

/// The next event of `observation` (`None`: it ended), within [`DEADLINE`].
///
/// # Panics
/// When the deadline passes.
pub async fn next_event(observation: &mut Observation) -> Option<KeyEvent> {
    let what = format!(
        "event on the observation of {:?}",
        String::from_utf8_lossy(observation.key())
    );
    within(&what, observation.next()).await
}

/// Sets each of `keys` to `v`.
///
/// # Panics
/// If a SET fails.
pub async fn set_all(client: &Client, keys: &[&[u8]]) {
    for key in keys {
        if let Err(error) = client.set(key.to_vec(), "v", SetOptions::default()).await {
            panic!("cannot set {:?}: {error}", String::from_utf8_lossy(key));
        }
    }
}
