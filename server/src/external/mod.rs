//! External mode: the state store attaches to any MQTT 5 broker as an ordinary client
//! (rumqttc). What it cannot know there: the real client id of a requester (it believes
//! `__srcId`, cross-checked with a `clients/{id}/...` response topic) and when a client
//! disconnects (KEYNOTIFY registrations live until `KEYNOTIFY key STOP`); and it cannot
//! disconnect a client that names a forbidden response topic (such requests are dropped
//! and logged).

mod event_loop;
mod publisher;

use std::net::SocketAddr;
use std::time::Duration;

use rumqttc::v5::{AsyncClient, MqttOptions};
use rumqttc::NetworkOptions;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::service::{Input, Outbound};
use crate::ServerError;

/// How long to wait for a connection and the SUBACK of the invoke topic at start.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an orderly shutdown may take before the connection is simply dropped.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// Keep alive of the server's connection.
const KEEP_ALIVE: Duration = Duration::from_secs(30);
/// The broker keeps the server's session (and queues requests) this long across a
/// reconnect.
const SESSION_EXPIRY_SECS: u32 = 60;
/// rumqttc request channel: outgoing publishes waiting for the event loop.
const REQUEST_CHANNEL: usize = 1024;

/// The state store attached to an external broker.
pub(crate) struct External {
    local_addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
    event_loop: JoinHandle<()>,
}

/// Connects to `host:port`, subscribes to the invoke topic and returns once the broker has
/// granted the subscription.
pub(crate) async fn start(
    config: &ServerConfig,
    host: &str,
    port: u16,
    input: mpsc::Sender<Input>,
    output: mpsc::Receiver<Outbound>,
    cancel: CancellationToken,
) -> Result<External, ServerError> {
    if config.tls.is_some() {
        return Err(ServerError::Config(
            "TLS files are for the embedded broker's listener; external mode connects with plain TCP".to_owned(),
        ));
    }
    let address = format!("{host}:{port}");
    let local_addr = tokio::net::lookup_host(&address)
        .await?
        .next()
        .ok_or_else(|| ServerError::Connect {
            address: address.clone(),
            reason: "the host name resolves to no address".to_owned(),
        })?;
    let (client, event_loop) = AsyncClient::new(options(config, host, port), REQUEST_CHANNEL);
    // The event loop must never wait on the service (the service may be waiting on the
    // event loop to send its responses): requests cross an unbounded hop.
    let (requests_tx, mut requests_rx) = mpsc::unbounded_channel();
    let forwarder = tokio::spawn(async move {
        while let Some(request) = requests_rx.recv().await {
            if input.send(request).await.is_err() {
                break;
            }
        }
    });
    let (ready_tx, ready_rx) = oneshot::channel();
    let event_loop = tokio::spawn(event_loop::run(
        event_loop,
        client.clone(),
        requests_tx,
        ready_tx,
        cancel.clone(),
    ));
    let publisher = tokio::spawn(publisher::run(client, output));
    let connect_error = |reason: String| ServerError::Connect {
        address: address.clone(),
        reason,
    };
    let outcome = match tokio::time::timeout(START_TIMEOUT, ready_rx).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(error))) => Err(error),
        Ok(Err(_)) => Err(connect_error("the connection task ended".to_owned())),
        Err(_) => Err(connect_error(format!(
            "no connection and subscription within {START_TIMEOUT:?}"
        ))),
    };
    let external = External {
        local_addr,
        tasks: vec![forwarder, publisher],
        event_loop,
    };
    match outcome {
        Ok(()) => Ok(external),
        Err(error) => {
            cancel.cancel();
            external.event_loop.abort();
            Err(match error {
                ServerError::Connect { reason, .. } => connect_error(reason),
                other => other,
            })
        }
    }
}

fn options(config: &ServerConfig, host: &str, port: u16) -> MqttOptions {
    let client_id = format!("statestore-server-{:016x}", fastrand::u64(..));
    let mut options = MqttOptions::new(client_id, host, port);
    options
        .set_keep_alive(KEEP_ALIVE)
        .set_clean_start(false)
        .set_session_expiry_interval(Some(SESSION_EXPIRY_SECS))
        .set_max_packet_size(Some(config.max_packet_size));
    if let Some(credentials) = &config.credentials {
        options.set_credentials(credentials.username.clone(), credentials.password.clone());
    }
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    network.set_connection_timeout(5);
    options.set_network_options(network);
    options
}

impl External {
    /// The broker's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Waits until pending responses are handed to the broker and the connection is closed
    /// (bounded). The caller has cancelled the adapter first.
    pub async fn shutdown(self) {
        let orderly = async {
            for task in self.tasks {
                let _ = task.await;
            }
        };
        let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, orderly).await;
        let abort = self.event_loop.abort_handle();
        if tokio::time::timeout(SHUTDOWN_TIMEOUT, self.event_loop)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
}
