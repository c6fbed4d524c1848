//! Helpers for tests of this crate and of others (dev-dependency): an embedded server on a
//! free port, a real Mosquitto broker, and a server attached to it.
//!
//! The helpers panic with a clear message when the environment is broken (Mosquitto not
//! installed, no loopback): that is a failed test, not a condition to handle.

mod mosquitto;

pub use mosquitto::Mosquitto;

use crate::{Mode, Server, ServerConfig};

/// Embedded server on 127.0.0.1:0 with default settings.
///
/// # Panics
/// If the server cannot start.
pub async fn embedded() -> Server {
    match Server::start(ServerConfig::default()).await {
        Ok(server) => server,
        Err(error) => panic!("cannot start the embedded state store: {error}"),
    }
}

/// Mosquitto plus a server attached to it in external mode.
///
/// # Panics
/// If Mosquitto or the server cannot start.
pub async fn on_mosquitto() -> (Mosquitto, Server) {
    let broker = match Mosquitto::start() {
        Ok(broker) => broker,
        Err(error) => panic!("cannot start mosquitto (run scripts/setup.sh): {error}"),
    };
    let config = ServerConfig {
        mode: Mode::External {
            host: broker.addr().ip().to_string(),
            port: broker.port(),
        },
        ..ServerConfig::default()
    };
    match Server::start(config).await {
        Ok(server) => (broker, server),
        Err(error) => panic!("cannot attach the state store to mosquitto: {error}"),
    }
}
