//! `statestore-server`: a local state store that behaves like the one inside the Azure IoT
//! Operations MQTT broker.
//!
//! - [`engine`]: the state machine, with no I/O.
//! - [`Server`]: the engine served over MQTT, either with an embedded MQTT 5 broker
//!   ([`Mode::Embedded`], the default) or attached to an existing broker ([`Mode::External`]).
//! - [`cli`]: the `statestore-server` command line, reusable by other binaries.
//!
//! ```no_run
//! # async fn demo() -> Result<(), statestore_server::ServerError> {
//! use statestore_server::{Server, ServerConfig};
//!
//! let server = Server::start(ServerConfig::default()).await?; // embedded, 127.0.0.1:0
//! println!("connect MQTT 5 clients to {}", server.local_addr());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

#[cfg(feature = "service")]
pub mod cli;
#[cfg(feature = "service")]
mod config;
#[cfg(feature = "service")]
mod embedded;
pub mod engine;
#[cfg(feature = "service")]
mod error;
#[cfg(feature = "service")]
mod external;
#[cfg(feature = "service")]
mod persist;
#[cfg(feature = "service")]
mod server;
#[cfg(feature = "service")]
mod service;

#[cfg(feature = "service")]
pub use config::{
    Credentials, FsyncPolicy, Mode, PersistenceConfig, ServerConfig, TlsFiles,
    DEFAULT_MAX_PACKET_SIZE,
};
pub use engine::EngineConfig;
#[cfg(feature = "service")]
pub use error::ServerError;
#[cfg(feature = "service")]
pub use server::Server;

/// The Rust example of this crate's guide (`docs/server.md`), compiled and run as a doctest, so
/// that it stays a complete program that works as written.
#[cfg(all(doctest, feature = "service"))]
#[doc = include_str!("../../docs/server.md")]
pub struct GuideExamples;
