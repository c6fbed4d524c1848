//! Why a server could not start.

use thiserror::Error;

/// Why [`Server::start`](crate::Server::start) failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The configuration cannot work (for example TLS in external mode).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The embedded broker could not be set up (bind, TLS files, credentials).
    #[error("embedded broker: {0}")]
    Broker(String),
    /// The external broker could not be reached or refused the connection.
    #[error("cannot attach to the broker at {address}: {reason}")]
    Connect {
        /// `host:port` of the broker.
        address: String,
        /// What went wrong.
        reason: String,
    },
    /// The broker refused the subscription to the invoke topic.
    #[error("the broker refused the subscription to the invoke topic: {0}")]
    Subscribe(String),
    /// The data directory could not be opened or read (`--data-dir`).
    #[error("data directory {dir}: {reason}")]
    Storage {
        /// The directory.
        dir: String,
        /// What went wrong.
        reason: String,
    },
    /// An I/O error (binding, resolving, signals).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
