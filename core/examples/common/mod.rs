//! Where the examples connect: `host:port` from the first argument, else the `AIO_*`
//! environment (`ConnectOptions::from_env`), else a state store started in-process.
#![allow(dead_code)]

use statestore::ConnectOptions;
use statestore_server::{Server, ServerConfig};

/// Connection options, and the in-process server when one was started (keep it alive).
pub struct Target {
    pub options: ConnectOptions,
    pub server: Option<Server>,
}

/// Picks the broker: argument, environment, or an embedded state store.
pub async fn target() -> Result<Target, Box<dyn std::error::Error>> {
    if let Some(address) = std::env::args().nth(1) {
        let (host, port) = address
            .rsplit_once(':')
            .ok_or("expected the broker as host:port")?;
        return Ok(Target {
            options: ConnectOptions::new(host, port.parse()?),
            server: None,
        });
    }
    if std::env::var_os("AIO_BROKER_HOSTNAME").is_some() {
        return Ok(Target {
            options: ConnectOptions::from_env()?,
            server: None,
        });
    }
    let server = Server::start(ServerConfig::default()).await?;
    let address = server.local_addr();
    println!("(no broker given: using an in-process state store on {address})");
    Ok(Target {
        options: ConnectOptions::new(address.ip().to_string(), address.port()),
        server: Some(server),
    })
}
