//! What a [`Server`](crate::Server) runs: where, with which engine settings and broker options.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::engine::EngineConfig;

/// The default maximum MQTT packet size, both directions: room for the 65 KB values and
/// 6.5 KB keys the real service is known to handle, with a wide margin.
pub const DEFAULT_MAX_PACKET_SIZE: u32 = 4 * 1024 * 1024;

/// How the state store reaches its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// In-process MQTT 5 broker with the state store attached.
    Embedded {
        /// Where the broker listens (port 0 picks a free port; see [`Server::local_addr`](crate::Server::local_addr)).
        listen: SocketAddr,
    },
    /// Attach to an existing MQTT 5 broker as a client.
    External {
        /// Broker host name or address.
        host: String,
        /// Broker port.
        port: u16,
    },
}

impl Default for Mode {
    /// Embedded on `127.0.0.1:0`.
    fn default() -> Self {
        Self::Embedded {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        }
    }
}

/// PEM files of the embedded broker's TLS listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM, PKCS#8, RSA or EC).
    pub key: PathBuf,
}

/// A user name and password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    // The password must not end up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

/// Everything a [`Server`](crate::Server) needs. `Default` is an embedded broker on
/// `127.0.0.1:0` with the real service's engine settings and no quota.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Embedded broker or external broker.
    pub mode: Mode,
    /// Node id, quota and clock skew of the engine.
    pub engine: EngineConfig,
    /// Embedded mode: serve MQTT over TLS with these files instead of plain TCP.
    /// External mode: not supported (start fails with [`ServerError::Config`](crate::ServerError::Config)).
    pub tls: Option<TlsFiles>,
    /// Embedded mode: the one account clients must log in with (anonymous clients are then
    /// refused). External mode: the account the server logs in to the broker with.
    pub credentials: Option<Credentials>,
    /// Maximum MQTT packet size the server accepts and sends.
    pub max_packet_size: u32,
    /// Keep keys written with `aio-persistence: true` on disk; `None` (the default) keeps
    /// nothing and ignores the option.
    pub persistence: Option<PersistenceConfig>,
}

/// Where and how persisted keys are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistenceConfig {
    /// The data directory (created if missing; one server at a time).
    pub data_dir: PathBuf,
    /// When writes are synced to disk.
    pub fsync: FsyncPolicy,
    /// How often [`FsyncPolicy::Interval`] syncs.
    pub fsync_interval: Duration,
}

impl PersistenceConfig {
    /// Keys kept in `data_dir`, every acknowledged write synced first.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            fsync: FsyncPolicy::Always,
            fsync_interval: Duration::from_secs(1),
        }
    }
}

/// When persisted writes reach the disk. Every policy survives a crash of the server process
/// (written data is in the operating system's cache); they differ on a crash of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FsyncPolicy {
    /// Before the response is sent: an acknowledged write survives a power loss.
    #[default]
    Always,
    /// Every fsync interval (`PersistenceConfig::fsync_interval`): a power loss may lose the
    /// writes of the last interval.
    Interval,
    /// Left to the operating system (and done at a clean shutdown).
    Never,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            mode: Mode::default(),
            engine: EngineConfig::default(),
            tls: None,
            credentials: None,
            max_packet_size: DEFAULT_MAX_PACKET_SIZE,
            persistence: None,
        }
    }
}
