use crate::broker::auth::AuthProvider;
use crate::broker::client_handler::{ClientHandler, ExternalInput};
use crate::broker::config::BrokerConfig;
use crate::broker::quic_flows::{FlowAnswer, FlowInput, FlowOpening};
use crate::broker::resource_monitor::ResourceMonitor;
use crate::broker::router::MessageRouter;
use crate::broker::storage::DynamicStorage;
use crate::broker::sys_topics::BrokerStats;
use crate::broker::transport::BrokerTransport;
use crate::error::{MqttError, Result};
use crate::packet::{FixedHeader, Packet};
use crate::transport::flow::{
    FlowFlags, FlowHeader, FlowId, FLOW_TYPE_CLIENT_DATA, FLOW_TYPE_CONTROL, FLOW_TYPE_SERVER_DATA,
    FLOW_TYPE_USER_DEFINED,
};
use crate::transport::packet_io::{read_packet_within_budget, ChunkReader, ReadBudget};
use bytes::{Buf, Bytes, BytesMut};
use mqtt5_protocol::QuicStreamCode;
use quinn::{Connection, Endpoint, RecvStream, SendStream, ServerConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tracing::{debug, error, instrument, trace, warn};

use super::tls_acceptor::TlsAcceptorConfig;

pub struct QuicAcceptorConfig {
    pub cert_chain: Vec<CertificateDer<'static>>,
    pub private_key: PrivateKeyDer<'static>,
    pub client_ca_certs: Option<Vec<CertificateDer<'static>>>,
    pub require_client_cert: bool,
    pub alpn_protocols: Vec<Vec<u8>>,
    pub enable_early_data: bool,
    pub max_concurrent_streams: Option<u32>,
    pub stream_receive_window: Option<u32>,
    pub disable_segmentation_offload: bool,
}

impl QuicAcceptorConfig {
    #[must_use]
    pub fn new(
        cert_chain: Vec<CertificateDer<'static>>,
        private_key: PrivateKeyDer<'static>,
    ) -> Self {
        Self {
            cert_chain,
            private_key,
            client_ca_certs: None,
            require_client_cert: false,
            alpn_protocols: vec![b"MQTT-next".to_vec(), b"mqtt".to_vec()],
            enable_early_data: false,
            max_concurrent_streams: None,
            stream_receive_window: None,
            disable_segmentation_offload: false,
        }
    }

    /// Loads a certificate chain from a PEM file.
    ///
    /// # Errors
    /// Returns an error if the file cannot be read or parsed as PEM certificates.
    pub async fn load_cert_chain_from_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<Vec<CertificateDer<'static>>> {
        TlsAcceptorConfig::load_cert_chain_from_file(path).await
    }

    /// Loads a private key from a PEM file.
    ///
    /// # Errors
    /// Returns an error if the file cannot be read or parsed as a PEM private key.
    pub async fn load_private_key_from_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<PrivateKeyDer<'static>> {
        TlsAcceptorConfig::load_private_key_from_file(path).await
    }

    #[must_use]
    pub fn with_client_ca_certs(mut self, certs: Vec<CertificateDer<'static>>) -> Self {
        self.client_ca_certs = Some(certs);
        self
    }

    #[must_use]
    pub fn with_require_client_cert(mut self, require: bool) -> Self {
        self.require_client_cert = require;
        self
    }

    #[must_use]
    pub fn with_alpn_protocols(mut self, protocols: Vec<Vec<u8>>) -> Self {
        self.alpn_protocols = protocols;
        self
    }

    #[must_use]
    pub fn with_early_data(mut self, enable: bool) -> Self {
        self.enable_early_data = enable;
        self
    }

    #[must_use]
    pub fn with_max_concurrent_streams(mut self, max: u32) -> Self {
        self.max_concurrent_streams = Some(max);
        self
    }

    #[must_use]
    pub fn with_stream_receive_window(mut self, bytes: u32) -> Self {
        self.stream_receive_window = Some(bytes);
        self
    }

    #[must_use]
    pub fn with_disable_segmentation_offload(mut self, disable: bool) -> Self {
        self.disable_segmentation_offload = disable;
        self
    }

    /// Builds a rustls `ServerConfig` from this QUIC acceptor configuration.
    ///
    /// # Errors
    /// Returns an error if certificate loading fails or TLS configuration is invalid.
    pub fn build_server_config(&self) -> Result<ServerConfig> {
        let crypto_provider = Arc::new(rustls::crypto::ring::default_provider());

        let mut tls_config = if let Some(ref client_ca_certs) = self.client_ca_certs {
            let mut root_store = RootCertStore::empty();
            for cert in client_ca_certs {
                root_store.add(cert.clone()).map_err(|e| {
                    MqttError::Configuration(format!("Failed to add client CA cert: {e}"))
                })?;
            }

            let verifier_builder = WebPkiClientVerifier::builder(Arc::new(root_store));

            let client_verifier = if self.require_client_cert {
                verifier_builder.build()
            } else {
                verifier_builder.allow_unauthenticated().build()
            }
            .map_err(|e| {
                MqttError::Configuration(format!("Failed to build client verifier: {e}"))
            })?;

            rustls::ServerConfig::builder_with_provider(crypto_provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| {
                    MqttError::Configuration(format!("Failed to set protocol versions: {e}"))
                })?
                .with_client_cert_verifier(client_verifier)
                .with_single_cert(self.cert_chain.clone(), self.private_key.clone_key())
                .map_err(|e| {
                    MqttError::Configuration(format!("Failed to configure server cert: {e}"))
                })?
        } else {
            rustls::ServerConfig::builder_with_provider(crypto_provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| {
                    MqttError::Configuration(format!("Failed to set protocol versions: {e}"))
                })?
                .with_no_client_auth()
                .with_single_cert(self.cert_chain.clone(), self.private_key.clone_key())
                .map_err(|e| {
                    MqttError::Configuration(format!("Failed to configure server cert: {e}"))
                })?
        };

        tls_config.alpn_protocols.clone_from(&self.alpn_protocols);

        if self.enable_early_data {
            tls_config.max_early_data_size = u32::MAX;
            tls_config.send_half_rtt_data = true;
        }

        let quic_config =
            quinn::crypto::rustls::QuicServerConfig::try_from(tls_config).map_err(|e| {
                MqttError::Configuration(format!("Failed to create QUIC server config: {e}"))
            })?;

        let mut server_config = ServerConfig::with_crypto(Arc::new(quic_config));

        let mut transport_config = quinn::TransportConfig::default();
        transport_config.max_idle_timeout(Some(quinn::IdleTimeout::from(quinn::VarInt::from_u32(
            60_000,
        ))));
        transport_config.datagram_receive_buffer_size(Some(65536));
        transport_config.datagram_send_buffer_size(65536);

        transport_config
            .stream_receive_window(self.stream_receive_window.unwrap_or(262_144).into());
        transport_config.receive_window(1_048_576u32.into());
        transport_config.send_window(1_048_576);

        if let Some(max) = self.max_concurrent_streams {
            transport_config.max_concurrent_uni_streams(max.into());
            transport_config.max_concurrent_bidi_streams(max.into());
        }

        if self.disable_segmentation_offload {
            transport_config.enable_segmentation_offload(false);
        }

        server_config.transport_config(Arc::new(transport_config));

        Ok(server_config)
    }

    /// Builds a QUIC endpoint bound to the specified address.
    ///
    /// # Errors
    /// Returns an error if the server config is invalid or the address cannot be bound.
    pub fn build_endpoint(&self, bind_addr: SocketAddr) -> Result<Endpoint> {
        let server_config = self.build_server_config()?;
        Endpoint::server(server_config, bind_addr)
            .map_err(|e| MqttError::ConnectionError(format!("Failed to bind QUIC endpoint: {e}")))
    }
}

pub struct QuicStreamWrapper {
    send: SendStream,
    recv: RecvStream,
    peer_addr: SocketAddr,
}

impl QuicStreamWrapper {
    #[must_use]
    pub fn new(send: SendStream, recv: RecvStream, peer_addr: SocketAddr) -> Self {
        Self {
            send,
            recv,
            peer_addr,
        }
    }

    #[must_use]
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer_addr
    }

    #[must_use]
    pub fn split(self) -> (SendStream, RecvStream) {
        (self.send, self.recv)
    }
}

impl AsyncRead for QuicStreamWrapper {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.recv).poll_read(cx, buf)
    }
}

impl AsyncWrite for QuicStreamWrapper {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.send).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => Poll::Ready(Ok(n)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(std::io::Error::other(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.send).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.send).poll_shutdown(cx)
    }
}

/// Accepts an incoming QUIC connection from the endpoint.
///
/// # Errors
/// Returns an error if the endpoint is closed or the handshake fails.
#[instrument(skip(endpoint))]
pub async fn accept_quic_connection(
    endpoint: &Endpoint,
) -> Result<(quinn::Connection, SocketAddr)> {
    let incoming = endpoint.accept().await.ok_or(MqttError::ConnectionError(
        "QUIC endpoint closed".to_string(),
    ))?;

    let peer_addr = incoming.remote_address();
    debug!("Incoming QUIC connection from {peer_addr}");

    let connection = incoming.await.map_err(|e| {
        error!("QUIC connection failed from {peer_addr}: {e}");
        MqttError::ConnectionError(format!("QUIC handshake failed: {e}"))
    })?;

    debug!(
        "QUIC connection established with {} (RTT: {:?})",
        peer_addr,
        connection.rtt()
    );

    Ok((connection, peer_addr))
}

/// Accepts a bidirectional QUIC stream from an established connection.
///
/// # Errors
/// Returns an error if stream acceptance fails or the connection is closed.
#[instrument(skip(connection), fields(peer_addr = %peer_addr))]
pub async fn accept_quic_stream(
    connection: &quinn::Connection,
    peer_addr: SocketAddr,
) -> Result<QuicStreamWrapper> {
    let (send, recv) = connection.accept_bi().await.map_err(|e| {
        let reason = crate::transport::quic_error::parse_connection_error(&e);
        error!("Failed to accept bidirectional stream from {peer_addr}: {reason}");
        MqttError::ConnectionError(format!("Failed to accept QUIC stream: {reason}"))
    })?;

    debug!("QUIC bidirectional stream accepted from {peer_addr}");

    Ok(QuicStreamWrapper::new(send, recv, peer_addr))
}

fn is_flow_header_byte(b: u8) -> bool {
    matches!(
        b,
        FLOW_TYPE_CONTROL | FLOW_TYPE_CLIENT_DATA | FLOW_TYPE_SERVER_DATA | FLOW_TYPE_USER_DEFINED
    )
}

enum StreamOpening {
    Flow(FlowHeaderResult),
    Refused(QuicStreamCode),
}

struct FlowHeaderResult {
    flow_id: Option<FlowId>,
    flags: Option<FlowFlags>,
    expire: Duration,
    leftover: BytesMut,
}

#[instrument(skip(recv), level = "debug")]
async fn try_read_flow_header(recv: &mut RecvStream) -> Result<StreamOpening> {
    let chunk = recv
        .read_chunk(1, true)
        .await
        .map_err(|e| MqttError::ConnectionError(format!("Failed to read stream: {e}")))?;

    let Some(chunk) = chunk else {
        return Ok(StreamOpening::Flow(FlowHeaderResult {
            flow_id: None,
            flags: None,
            expire: Duration::ZERO,
            leftover: BytesMut::new(),
        }));
    };

    if chunk.bytes.is_empty() {
        return Ok(StreamOpening::Flow(FlowHeaderResult {
            flow_id: None,
            flags: None,
            expire: Duration::ZERO,
            leftover: BytesMut::new(),
        }));
    }

    let first_byte = chunk.bytes[0];

    if !is_flow_header_byte(first_byte) {
        let mut leftover = BytesMut::with_capacity(chunk.bytes.len());
        leftover.extend_from_slice(&chunk.bytes);
        return Ok(StreamOpening::Flow(FlowHeaderResult {
            flow_id: None,
            flags: None,
            expire: Duration::ZERO,
            leftover,
        }));
    }

    let mut header_buf = Vec::with_capacity(32);
    header_buf.extend_from_slice(&chunk.bytes);

    let (flow_header, leftover) = loop {
        let mut bytes = Bytes::copy_from_slice(&header_buf);
        match FlowHeader::decode(&mut bytes) {
            Ok(header) => {
                let consumed = header_buf.len() - bytes.remaining();
                let mut lo = BytesMut::with_capacity(bytes.remaining());
                if consumed < header_buf.len() {
                    lo.extend_from_slice(&header_buf[consumed..]);
                }
                break (header, lo);
            }
            Err(_) if header_buf.len() >= 32 => {
                return Err(MqttError::ProtocolError("flow header too large".into()));
            }
            Err(_) => match recv.read_chunk(32 - header_buf.len(), true).await {
                Ok(Some(c)) if !c.bytes.is_empty() => {
                    header_buf.extend_from_slice(&c.bytes);
                }
                Ok(_) => {
                    return Err(MqttError::ProtocolError("incomplete flow header".into()));
                }
                Err(e) => {
                    return Err(MqttError::ConnectionError(format!(
                        "Failed to read flow header: {e}"
                    )));
                }
            },
        }
    };

    Ok(build_flow_header_result(flow_header, leftover))
}

fn build_flow_header_result(flow_header: FlowHeader, leftover: BytesMut) -> StreamOpening {
    match flow_header {
        FlowHeader::ClientData(h) if h.flow_id.is_client_initiated() => {
            let expire = Duration::from_secs(h.expire_interval);
            trace!(flow_id = ?h.flow_id, expire = ?expire, "Parsed data flow header");
            StreamOpening::Flow(FlowHeaderResult {
                flow_id: Some(h.flow_id),
                flags: Some(h.flags),
                expire,
                leftover,
            })
        }
        FlowHeader::ClientData(_) | FlowHeader::ServerData(_) => {
            StreamOpening::Refused(QuicStreamCode::BadFlowId)
        }
        FlowHeader::Control(_) => StreamOpening::Refused(QuicStreamCode::StreamType),
        FlowHeader::UserDefined(_) => StreamOpening::Refused(QuicStreamCode::FlowRefused),
    }
}

impl ChunkReader for RecvStream {
    async fn read_chunk(&mut self, chunk: &mut [u8]) -> Result<usize> {
        Ok(self
            .read(chunk)
            .await
            .map_err(|e| MqttError::ConnectionError(format!("QUIC read error: {e}")))?
            .unwrap_or(0))
    }
}

pub struct QuicHandlerContext {
    pub config: Arc<BrokerConfig>,
    pub router: Arc<MessageRouter>,
    pub auth_provider: Arc<dyn AuthProvider>,
    pub storage: Option<Arc<DynamicStorage>>,
    pub stats: Arc<BrokerStats>,
    pub resource_monitor: Arc<ResourceMonitor>,
    pub shutdown_rx: broadcast::Receiver<()>,
    pub connection_alive: mpsc::Sender<()>,
}

#[instrument(skip(connection, context), fields(peer_addr = %peer_addr))]
pub async fn run_quic_connection_handler(
    connection: Arc<Connection>,
    peer_addr: SocketAddr,
    context: QuicHandlerContext,
) {
    run_quic_handler_inner(connection, peer_addr, context, false, "QUIC").await;
}

pub async fn run_quic_cluster_connection_handler(
    connection: Arc<Connection>,
    peer_addr: SocketAddr,
    context: QuicHandlerContext,
) {
    run_quic_handler_inner(connection, peer_addr, context, true, "Cluster QUIC").await;
}

async fn run_quic_handler_inner(
    connection: Arc<Connection>,
    peer_addr: SocketAddr,
    context: QuicHandlerContext,
    skip_bridge_forwarding: bool,
    label: &'static str,
) {
    let (packet_tx, packet_rx) = mpsc::channel::<ExternalInput>(100);
    let (protocol_version_tx, protocol_version_rx) = watch::channel(None);

    let (send, recv) = match connection.accept_bi().await {
        Ok(streams) => streams,
        Err(e) => {
            let reason = crate::transport::quic_error::parse_connection_error(&e);
            error!("Failed to accept control stream from {peer_addr}: {reason}");
            return;
        }
    };

    debug!("{label} control stream accepted from {peer_addr}, starting handler");

    let stream = QuicStreamWrapper::new(send, recv, peer_addr);
    let transport = BrokerTransport::quic(stream);

    let delivery_strategy = context.config.server_delivery_strategy;
    let max_packet_size = context.config.max_packet_size;
    let read_budget = ReadBudget::new(max_packet_size);
    let connection_alive = context.connection_alive;
    let handler = ClientHandler::new_with_external_packets(
        transport,
        peer_addr,
        context.config,
        context.router,
        context.auth_provider,
        context.storage,
        context.stats,
        context.resource_monitor,
        context.shutdown_rx,
        Some(packet_rx),
    )
    .with_quic_connection(connection.clone())
    .with_server_delivery_strategy(delivery_strategy)
    .with_quic_packet_tx(packet_tx.clone())
    .with_read_budget(&read_budget)
    .with_quic_protocol_version_tx(protocol_version_tx)
    .with_skip_bridge_forwarding(skip_bridge_forwarding);

    let handler_label = label;
    let handler_connection = connection.clone();
    let handler_budget = read_budget.clone();
    tokio::spawn(async move {
        let outcome = handler.run().await;
        handler_budget.close();
        drop(connection_alive);
        if let Err(e) = &outcome {
            if e.is_normal_disconnect() {
                debug!("{handler_label} client handler finished");
            } else {
                warn!("{handler_label} client handler error: {e}");
            }
        }
        close_after_control_flow(&handler_connection, peer_addr, &outcome).await;
    });

    spawn_datagram_reader(
        connection.clone(),
        packet_tx.clone(),
        protocol_version_rx.clone(),
        peer_addr,
        max_packet_size,
        label,
    );
    spawn_bi_accept_loop(connection.clone(), packet_tx.clone(), peer_addr, label);
    spawn_quic_stats_sampler(connection.clone(), peer_addr);
    spawn_uni_accept_loop(
        DataStreamContext {
            connection,
            packet_tx,
            protocol_version_rx,
            peer_addr,
            max_packet_size,
            read_budget,
        },
        label,
    );
}

const QUIC_STATS_DIR_ENV: &str = "MQTT5_QUIC_STATS_DIR";
const QUIC_STATS_HEADER: &str = "timestamp_ns,rtt_us,cwnd,lost_packets,congestion_events,sent_packets,stream_data_blocked,data_blocked,streams_blocked_uni\n";
const QUIC_STATS_INTERVAL: Duration = Duration::from_millis(100);

fn spawn_quic_stats_sampler(connection: Arc<Connection>, peer_addr: SocketAddr) {
    let Some(dir) = std::env::var_os(QUIC_STATS_DIR_ENV).filter(|dir| !dir.is_empty()) else {
        return;
    };
    tokio::spawn(async move {
        match sample_quic_stats(&connection, std::path::Path::new(&dir), peer_addr).await {
            Ok(rows) => debug!(%peer_addr, rows, "QUIC stats sampling finished"),
            Err(e) => warn!(%peer_addr, error = %e, "QUIC stats sampling stopped"),
        }
    });
}

async fn sample_quic_stats(
    connection: &Connection,
    dir: &std::path::Path,
    peer_addr: SocketAddr,
) -> std::io::Result<u64> {
    use tokio::io::AsyncWriteExt;

    tokio::fs::create_dir_all(dir).await?;
    let name = peer_addr.to_string().replace([':', '.', '[', ']'], "-");
    let mut out = tokio::fs::File::create(dir.join(format!("broker_quic_{name}.csv"))).await?;
    out.write_all(QUIC_STATS_HEADER.as_bytes()).await?;

    let mut rows = 0u64;
    let mut ticker = tokio::time::interval(QUIC_STATS_INTERVAL);
    loop {
        let closed = tokio::select! {
            _ = connection.closed() => true,
            _ = ticker.tick() => false,
        };
        out.write_all(quic_stats_row(connection).as_bytes()).await?;
        rows += 1;
        if closed {
            return Ok(rows);
        }
    }
}

fn quic_stats_row(connection: &Connection) -> String {
    let stats = connection.stats();
    let timestamp_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
        });
    let rtt_us = u64::try_from(stats.path.rtt.as_micros()).unwrap_or(u64::MAX);
    format!(
        "{timestamp_ns},{rtt_us},{},{},{},{},{},{},{}\n",
        stats.path.cwnd,
        stats.path.lost_packets,
        stats.path.congestion_events,
        stats.path.sent_packets,
        stats.frame_rx.stream_data_blocked,
        stats.frame_rx.data_blocked,
        stats.frame_rx.streams_blocked_uni,
    )
}

async fn negotiated_protocol_version(mut rx: watch::Receiver<Option<u8>>) -> Option<u8> {
    rx.wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|version| *version)
}

fn spawn_datagram_reader(
    connection: Arc<Connection>,
    packet_tx: mpsc::Sender<ExternalInput>,
    protocol_version_rx: watch::Receiver<Option<u8>>,
    peer_addr: SocketAddr,
    max_packet_size: usize,
    label: &'static str,
) {
    tokio::spawn(async move {
        let Some(protocol_version) = negotiated_protocol_version(protocol_version_rx).await else {
            debug!("{label} client handler ended before CONNECT from {peer_addr}");
            return;
        };
        loop {
            match connection.read_datagram().await {
                Ok(datagram) => {
                    trace!(
                        len = datagram.len(),
                        "Received {label} datagram from {peer_addr}"
                    );
                    let packet = match decode_datagram_packet(
                        &datagram,
                        protocol_version,
                        max_packet_size,
                    ) {
                        Some(Ok(packet)) => packet,
                        Some(Err(e)) => {
                            close_on_protocol_error(&connection, peer_addr, "datagram", &e);
                            break;
                        }
                        None => continue,
                    };
                    if packet_tx
                        .send(ExternalInput::Packet(packet, None, None))
                        .await
                        .is_err()
                    {
                        debug!("Datagram packet channel closed for {peer_addr}");
                        break;
                    }
                }
                Err(e) => {
                    debug!("Datagram read ended for {peer_addr}: {e}");
                    break;
                }
            }
        }
    });
}

fn spawn_bi_accept_loop(
    connection: Arc<Connection>,
    packet_tx: mpsc::Sender<ExternalInput>,
    peer_addr: SocketAddr,
    label: &'static str,
) {
    tokio::spawn(async move {
        loop {
            match connection.accept_bi().await {
                Ok((send, recv)) => {
                    debug!("{label} bidirectional stream accepted from {peer_addr}");
                    spawn_bi_stream_handler(send, recv, peer_addr, packet_tx.clone());
                }
                Err(e) => {
                    let reason = crate::transport::quic_error::parse_connection_error(&e);
                    debug!("{label} bi stream accept loop ended for {peer_addr}: {reason}");
                    break;
                }
            }
        }
    });
}

#[derive(Clone)]
struct DataStreamContext {
    connection: Arc<Connection>,
    packet_tx: mpsc::Sender<ExternalInput>,
    protocol_version_rx: watch::Receiver<Option<u8>>,
    peer_addr: SocketAddr,
    max_packet_size: usize,
    read_budget: ReadBudget,
}

fn spawn_uni_accept_loop(context: DataStreamContext, label: &'static str) {
    tokio::spawn(async move {
        let peer_addr = context.peer_addr;
        loop {
            match context.connection.accept_uni().await {
                Ok(recv) => {
                    debug!("Additional {label} data stream accepted from {peer_addr}");
                    spawn_data_stream_reader(context.clone(), recv);
                }
                Err(e) => {
                    let reason = crate::transport::quic_error::parse_connection_error(&e);
                    debug!("{label} uni stream accept loop ended for {peer_addr}: {reason}");
                    break;
                }
            }
        }
    });
}

fn decode_datagram_packet(
    data: &Bytes,
    protocol_version: u8,
    max_packet_size: usize,
) -> Option<Result<Packet>> {
    if data.is_empty() || data[0] == 0x00 {
        return None;
    }
    if data.len() > max_packet_size {
        return Some(Err(MqttError::PacketTooLarge {
            size: data.len(),
            max: max_packet_size,
        }));
    }

    let mut buf = BytesMut::from(data.as_ref());
    let fixed_header = match FixedHeader::decode(&mut buf) {
        Ok(h) => h,
        Err(e) => return Some(Err(e)),
    };
    Some(Packet::decode_from_body_with_version(
        fixed_header.packet_type,
        &fixed_header,
        &mut buf,
        protocol_version,
    ))
}

fn refuse_stream(
    send: &mut SendStream,
    recv: &mut RecvStream,
    peer_addr: SocketAddr,
    code: QuicStreamCode,
) {
    debug!(%code, "refusing bidirectional stream from {peer_addr}");
    if let Err(e) = recv.stop(quinn::VarInt::from_u32(code.code())) {
        debug!("stream from {peer_addr} already closed before stop: {e}");
    }
    if let Err(e) = send.reset(quinn::VarInt::from_u32(code.code())) {
        debug!("stream from {peer_addr} already closed before reset: {e}");
    }
}

async fn ends_after_header(recv: &mut RecvStream) -> bool {
    matches!(recv.read_chunk(1, true).await, Ok(None))
}

fn spawn_bi_stream_handler(
    mut send: SendStream,
    mut recv: RecvStream,
    peer_addr: SocketAddr,
    packet_tx: mpsc::Sender<ExternalInput>,
) {
    tokio::spawn(async move {
        let result = match try_read_flow_header(&mut recv).await {
            Ok(StreamOpening::Flow(result)) => result,
            Ok(StreamOpening::Refused(code)) => {
                refuse_stream(&mut send, &mut recv, peer_addr, code);
                return;
            }
            Err(e) => {
                warn!("failed to read flow header on bi stream from {peer_addr}: {e}");
                return;
            }
        };

        let (Some(flow_id), Some(flags)) = (result.flow_id, result.flags) else {
            refuse_stream(&mut send, &mut recv, peer_addr, QuicStreamCode::StreamType);
            return;
        };

        if !flags.is_discard_signal()
            || !result.leftover.is_empty()
            || !ends_after_header(&mut recv).await
        {
            refuse_stream(&mut send, &mut recv, peer_addr, QuicStreamCode::FlowRefused);
            return;
        }

        let (done, discarded) = oneshot::channel();
        let discard = FlowInput::Discard {
            flow_id: flow_id.raw(),
            done,
        };
        if packet_tx.send(ExternalInput::Flow(discard)).await.is_err() || discarded.await.is_err() {
            debug!(flow_id = ?flow_id, "client handler ended before the flow was discarded");
        }

        if let Err(e) = send.finish() {
            debug!(flow_id = ?flow_id, "discard stream from {peer_addr} already closed: {e}");
        }

        debug!(flow_id = ?flow_id, "completed discard handshake for {peer_addr}");
    });
}

const CONTROL_FLOW_CLOSE_GRACE: Duration = Duration::from_secs(1);

fn close_code(outcome: &Result<()>) -> mqtt5_protocol::QuicConnectionCode {
    match outcome {
        Ok(()) => mqtt5_protocol::QuicConnectionCode::NoError,
        Err(e) if e.is_normal_disconnect() => mqtt5_protocol::QuicConnectionCode::NoError,
        Err(
            MqttError::MalformedPacket(_)
            | MqttError::ProtocolError(_)
            | MqttError::InvalidQoS(_)
            | MqttError::InvalidPacketType(_)
            | MqttError::InvalidPropertyId(_)
            | MqttError::DuplicatePropertyId(_)
            | MqttError::InvalidReasonCode(_)
            | MqttError::StringTooLong(_)
            | MqttError::InvalidTopicName(_)
            | MqttError::PacketTooLarge { .. },
        ) => mqtt5_protocol::QuicConnectionCode::ProtocolLevel0,
        Err(_) => mqtt5_protocol::QuicConnectionCode::Unspecified,
    }
}

async fn close_after_control_flow(
    connection: &Connection,
    peer_addr: SocketAddr,
    outcome: &Result<()>,
) {
    if tokio::time::timeout(CONTROL_FLOW_CLOSE_GRACE, connection.closed())
        .await
        .is_ok()
    {
        return;
    }
    let code = close_code(outcome);
    debug!(%code, "closing QUIC connection from {peer_addr} after its control flow ended");
    close_connection(connection, code);
}

pub(super) fn close_on_protocol_error(
    connection: &Connection,
    peer_addr: SocketAddr,
    source: &str,
    error: &MqttError,
) {
    warn!("protocol error on {source} from {peer_addr}, closing connection: {error}");
    close_connection(
        connection,
        mqtt5_protocol::QuicConnectionCode::ProtocolLevel0,
    );
}

fn close_connection(connection: &Connection, code: mqtt5_protocol::QuicConnectionCode) {
    connection.close(
        quinn::VarInt::from_u32(code.code()),
        code.to_string().as_bytes(),
    );
}

fn stop_data_stream(recv: &mut RecvStream, peer_addr: SocketAddr, code: QuicStreamCode) {
    debug!(%code, "refusing data stream from {peer_addr}");
    if let Err(e) = recv.stop(quinn::VarInt::from_u32(code.code())) {
        debug!("data stream from {peer_addr} already closed before stop: {e}");
    }
}

async fn open_flow(
    packet_tx: &mpsc::Sender<ExternalInput>,
    flow_id: FlowId,
    stream_id: u64,
    flags: FlowFlags,
    expire: Duration,
) -> Option<FlowAnswer> {
    let (answer, answered) = oneshot::channel();
    let opening = FlowOpening {
        flow_id: flow_id.raw(),
        stream_id,
        flags,
        expire,
        answer,
    };
    packet_tx
        .send(ExternalInput::Flow(FlowInput::Opened(opening)))
        .await
        .ok()?;
    answered.await.ok()
}

async fn read_data_stream_packets(
    recv: &mut RecvStream,
    mut buffer: BytesMut,
    flow_id: Option<FlowId>,
    protocol_version: u8,
    context: &DataStreamContext,
) -> bool {
    let peer_addr = context.peer_addr;
    let mut share = context.read_budget.share();
    loop {
        match read_packet_within_budget(
            recv,
            protocol_version,
            &mut buffer,
            context.max_packet_size,
            Some(&mut share),
        )
        .await
        {
            Ok((packet, permit)) => {
                let raw_flow_id = flow_id.map(|f| f.raw());
                debug!(flow_id = ?flow_id, packet_type = %packet.packet_type_name(), "Read packet from QUIC data stream");
                if context
                    .packet_tx
                    .send(ExternalInput::Packet(packet, raw_flow_id, permit))
                    .await
                    .is_err()
                {
                    debug!("Packet channel closed, stopping data stream reader");
                    return false;
                }
            }
            Err(MqttError::ClientClosed) if buffer.is_empty() => {
                debug!(flow_id = ?flow_id, "QUIC data stream closed from {peer_addr}");
                return true;
            }
            Err(MqttError::ClientClosed) => {
                warn!(flow_id = ?flow_id, "QUIC data stream from {peer_addr} ended inside a packet");
                return false;
            }
            Err(MqttError::ConnectionError(reason)) => {
                debug!(flow_id = ?flow_id, "QUIC data stream from {peer_addr} ended: {reason}");
                return false;
            }
            Err(e) => {
                close_on_protocol_error(&context.connection, peer_addr, "data stream", &e);
                return false;
            }
        }
    }
}

fn spawn_data_stream_reader(context: DataStreamContext, mut recv: RecvStream) {
    tokio::spawn(async move {
        let peer_addr = context.peer_addr;
        let Some(protocol_version) =
            negotiated_protocol_version(context.protocol_version_rx.clone()).await
        else {
            debug!("client handler ended before CONNECT from {peer_addr}");
            return;
        };
        let stream_id = u64::from(recv.id());
        let (flow_id, buffer) = match try_read_flow_header(&mut recv).await {
            Ok(StreamOpening::Refused(code)) => {
                stop_data_stream(&mut recv, peer_addr, code);
                return;
            }
            Ok(StreamOpening::Flow(FlowHeaderResult {
                flow_id: Some(id),
                flags: Some(flags),
                expire,
                leftover,
            })) => match open_flow(&context.packet_tx, id, stream_id, flags, expire).await {
                Some(FlowAnswer::Served) => {
                    debug!(flow_id = ?id, "Serving flow from {peer_addr}");
                    (Some(id), leftover)
                }
                Some(FlowAnswer::Refused(code)) => {
                    stop_data_stream(&mut recv, peer_addr, code);
                    return;
                }
                Some(FlowAnswer::Close(code)) => {
                    warn!(flow_id = ?id, %code, "closing QUIC connection from {peer_addr}");
                    close_connection(&context.connection, code);
                    return;
                }
                None => {
                    debug!(flow_id = ?id, "client handler ended before answering the flow from {peer_addr}");
                    return;
                }
            },
            Ok(StreamOpening::Flow(result)) => {
                trace!("No flow header on data stream from {peer_addr}");
                (None, result.leftover)
            }
            Err(e) => {
                warn!("Error parsing flow header from {peer_addr}: {e}");
                return;
            }
        };

        let graceful =
            read_data_stream_packets(&mut recv, buffer, flow_id, protocol_version, &context).await;

        if let Some(id) = flow_id {
            let ended = FlowInput::Ended {
                flow_id: id.raw(),
                stream_id,
                graceful,
            };
            if context
                .packet_tx
                .send(ExternalInput::Flow(ended))
                .await
                .is_err()
            {
                debug!(flow_id = ?id, "client handler ended before the flow did");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_quic_acceptor_config() {
        let cert = CertificateDer::from(vec![0x30, 0x82, 0x01, 0x00]);
        let key = PrivateKeyDer::from(rustls::pki_types::PrivatePkcs8KeyDer::from(vec![
            0x30, 0x48, 0x02, 0x01,
        ]));

        let config = QuicAcceptorConfig::new(vec![cert.clone()], key.clone_key())
            .with_require_client_cert(true);

        assert!(config.require_client_cert);
        assert_eq!(config.alpn_protocols.len(), 2);
        assert_eq!(config.alpn_protocols[0], b"MQTT-next");
        assert_eq!(config.alpn_protocols[1], b"mqtt");
        assert_eq!(config.cert_chain.len(), 1);
    }

    #[test]
    fn test_quic_acceptor_custom_alpn() {
        let cert = CertificateDer::from(vec![0x30, 0x82, 0x01, 0x00]);
        let key = PrivateKeyDer::from(rustls::pki_types::PrivatePkcs8KeyDer::from(vec![
            0x30, 0x48, 0x02, 0x01,
        ]));

        let config = QuicAcceptorConfig::new(vec![cert.clone()], key.clone_key())
            .with_alpn_protocols(vec![b"mqtt".to_vec()]);

        assert_eq!(config.alpn_protocols.len(), 1);
        assert_eq!(config.alpn_protocols[0], b"mqtt");
    }
}
