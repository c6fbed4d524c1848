//! Embedded mode: an mqtt5 broker in this process, with the state store attached to its
//! router (see [`router_adapter`]). The broker keeps sessions in memory only and has
//! `$SYS` topics off.

mod hooks;
mod router_adapter;

use std::net::SocketAddr;
use std::sync::{Arc, Once};

use mqtt5::broker::config::{StorageBackend, StorageConfig, TlsConfig};
use mqtt5::broker::{BrokerConfig, BrokerShutdownHandle, MqttBroker, PasswordAuthProvider};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::config::{Credentials, ServerConfig, TlsFiles};
use crate::service::{Input, Outbound};
use crate::ServerError;

use hooks::DisconnectHook;

/// A running embedded broker with the state store attached.
pub(crate) struct Embedded {
    local_addr: SocketAddr,
    shutdown: BrokerShutdownHandle,
    broker: JoinHandle<()>,
    tasks: Vec<JoinHandle<()>>,
}

/// Starts the broker on `listen` and attaches the state store: requests go to `input`,
/// the service's actions come from `output`.
pub(crate) async fn start(
    config: &ServerConfig,
    listen: SocketAddr,
    input: mpsc::Sender<Input>,
    output: mpsc::Receiver<Outbound>,
    cancel: CancellationToken,
) -> Result<Embedded, ServerError> {
    let (hook, gone) = DisconnectHook::new();
    let mut broker_config = BrokerConfig::default()
        .with_max_packet_size(config.max_packet_size as usize)
        .with_storage(StorageConfig::default().with_backend(StorageBackend::Memory))
        .with_sys_topics_enabled(false)
        .with_event_handler(Arc::new(hook));
    broker_config = match &config.tls {
        None => broker_config.with_bind_address(listen),
        Some(files) => with_tls(broker_config, files, listen),
    };
    let broker_error = |e: mqtt5::MqttError| ServerError::Broker(e.to_string());
    let mut broker = MqttBroker::with_config(broker_config)
        .await
        .map_err(broker_error)?;
    if let Some(credentials) = &config.credentials {
        broker = broker.with_auth_provider(Arc::new(password_provider(credentials)?));
    }
    let local_addr = match config.tls {
        None => broker.local_addr(),
        Some(_) => broker.tls_local_addr(),
    }
    .ok_or_else(|| ServerError::Broker("the broker has no listener".to_owned()))?;
    let shutdown = broker.shutdown_handle();
    let attachment = router_adapter::attach(broker.router()).await?;
    let mut ready = broker.ready_receiver();
    let broker = tokio::spawn(async move {
        if let Err(error) = broker.run().await {
            warn!(%error, "embedded broker stopped with an error");
        }
    });
    if ready.wait_for(|ready| *ready).await.is_err() {
        shutdown.shutdown();
        return Err(ServerError::Broker(
            "the broker stopped while starting".to_owned(),
        ));
    }
    let publisher = attachment.publisher();
    let tasks = vec![
        tokio::spawn(router_adapter::receive(attachment, input, gone, cancel)),
        tokio::spawn(publisher.run(output)),
    ];
    Ok(Embedded {
        local_addr,
        shutdown,
        broker,
        tasks,
    })
}

impl Embedded {
    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Asks the broker to stop (clients get DISCONNECT "server shutting down"); usable from
    /// `Drop`.
    pub fn signal_shutdown(&self) {
        self.shutdown.shutdown();
    }

    /// Waits for the adapter tasks (so that pending responses are routed), then stops the
    /// broker. The caller has cancelled the adapter first.
    pub async fn shutdown(self) {
        for task in self.tasks {
            let _ = task.await;
        }
        self.shutdown.shutdown();
        let _ = self.broker.await;
    }
}

fn with_tls(config: BrokerConfig, files: &TlsFiles, listen: SocketAddr) -> BrokerConfig {
    install_crypto_provider();
    // TLS only: no plain TCP listener next to it.
    config
        .with_bind_addresses(Vec::new())
        .with_tls(TlsConfig::new(files.cert.clone(), files.key.clone()).with_bind_address(listen))
}

fn password_provider(credentials: &Credentials) -> Result<PasswordAuthProvider, ServerError> {
    let provider = PasswordAuthProvider::new();
    provider
        .add_user(credentials.username.clone(), &credentials.password)
        .map_err(|e| ServerError::Broker(format!("cannot register the user: {e}")))?;
    Ok(provider)
}

/// rustls needs one process-wide crypto provider; install ring (the only one compiled in)
/// before any TLS configuration is built, or a second provider pulled in by some other
/// dependency would make rustls panic at the first TLS setup.
pub(crate) fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another provider is already installed: that one is used then.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
