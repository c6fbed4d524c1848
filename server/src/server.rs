//! [`Server`]: the engine, its service task and a transport, started and stopped together.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{Mode, ServerConfig};
use crate::embedded::{self, Embedded};
use crate::engine::Engine;
use crate::external::{self, External};
use crate::persist::Durable;
use crate::{service, ServerError};

/// Requests waiting for the service.
const INPUT_CAPACITY: usize = 4096;
/// Responses and notifications waiting for the transport.
const OUTPUT_CAPACITY: usize = 4096;

/// A running state store. Stop it with [`Server::shutdown`]; dropping it stops it too,
/// without waiting.
pub struct Server {
    transport: Option<Transport>,
    /// The connection URL clients use (see [`Server::url`]).
    url: String,
    service: Option<JoinHandle<()>>,
    cancel: CancellationToken,
}

enum Transport {
    Embedded(Embedded),
    External(External),
}

impl Transport {
    fn local_addr(&self) -> SocketAddr {
        match self {
            Transport::Embedded(embedded) => embedded.local_addr(),
            Transport::External(external) => external.local_addr(),
        }
    }
}

/// What a URL's user name and password may hold unencoded: RFC 3986's unreserved characters.
const USERINFO: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`Server::url`] of a server started with `config` and reached at `addr`.
fn client_url(config: &ServerConfig, mut addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    let embedded = matches!(config.mode, Mode::Embedded { .. });
    let scheme = if embedded && config.tls.is_some() {
        "mqtts"
    } else {
        "mqtt"
    };
    let account = match &config.credentials {
        Some(account) if embedded => format!(
            "{}:{}@",
            utf8_percent_encode(&account.username, USERINFO),
            utf8_percent_encode(&account.password, USERINFO)
        ),
        _ => String::new(),
    };
    format!("{scheme}://{account}{addr}")
}

impl Server {
    /// Starts the state store and returns once it serves requests: in embedded mode when the
    /// broker listens, in external mode when the broker granted the subscription to the
    /// invoke topic.
    pub async fn start(config: ServerConfig) -> Result<Server, ServerError> {
        // Persisted keys are loaded before the transport starts, so that no request can see
        // the store without them.
        let mut engine_config = config.engine.clone();
        engine_config.persistence = config.persistence.is_some();
        // A SCAN page must fit the packets this server may send, with room for the envelope.
        engine_config.scan_page_bytes = engine_config
            .scan_page_bytes
            .min(config.max_packet_size as usize / 4);
        let mut engine = Engine::new(engine_config);
        let durable = match &config.persistence {
            Some(persistence) => {
                let (durable, keys) = Durable::open(persistence, &config.engine.node_id)
                    .await
                    .map_err(|error| ServerError::Storage {
                        dir: persistence.data_dir.display().to_string(),
                        reason: error.to_string(),
                    })?;
                for key in keys {
                    engine.restore(key);
                }
                Some(durable)
            }
            None => None,
        };
        let (input_tx, input_rx) = mpsc::channel(INPUT_CAPACITY);
        let (output_tx, output_rx) = mpsc::channel(OUTPUT_CAPACITY);
        let cancel = CancellationToken::new();
        let transport = match &config.mode {
            Mode::Embedded { listen } => Transport::Embedded(
                embedded::start(&config, *listen, input_tx, output_rx, cancel.clone()).await?,
            ),
            Mode::External { host, port } => Transport::External(
                external::start(&config, host, *port, input_tx, output_rx, cancel.clone()).await?,
            ),
        };
        let service = tokio::spawn(service::run(engine, durable, input_rx, output_tx));
        let url = client_url(&config, transport.local_addr());
        Ok(Server {
            transport: Some(transport),
            url,
            service: Some(service),
            cancel,
        })
    }

    /// Where clients connect: the embedded broker's bound address (the real port when the
    /// configuration said port 0), or the external broker's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.transport
            .as_ref()
            .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), Transport::local_addr)
    }

    /// The connection URL a client uses to reach this state store
    /// (`statestore::ConnectOptions::from_url`, and every language's `from_url`):
    /// `mqtt://127.0.0.1:PORT`, `mqtts://` when the embedded broker serves TLS, with the account
    /// clients must log in with (`mqtt://user:password@...`, percent-encoded) when it has one.
    /// A wildcard listen address is given as the loopback address of its family. In external
    /// mode, the broker's address, without the server's own account.
    ///
    /// The URL holds the password: it is for the tests and tools that start the server, not
    /// for logs.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops taking requests, answers the ones already received, then closes the broker
    /// (embedded) or the connection (external).
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        match self.transport.take() {
            Some(Transport::Embedded(embedded)) => embedded.shutdown().await,
            Some(Transport::External(external)) => external.shutdown().await,
            None => {}
        }
        if let Some(service) = self.service.take() {
            let _ = service.await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(Transport::Embedded(embedded)) = &self.transport {
            embedded.signal_shutdown();
        }
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr())
            .finish_non_exhaustive()
    }
}
