//! `statestore`: a client library for the MQTT broker **state store**, the key-value store
//! inside the Azure IoT Operations MQTT broker.
//!
//! # Guide
//!
//! Connect with [`Client::connect`] (async, on tokio) or [`blocking::Client::connect`] (plain
//! threads), then call the operations of [`Client`] (the blocking client has the same ones,
//! with the same documentation). Keys and values are arbitrary bytes (anything that converts into
//! [`Bytes`](bytes::Bytes)); keys may not be empty.
//!
//! ```no_run
//! use std::time::Duration;
//! use statestore::{Client, ConnectOptions, DeleteOptions, KeyEvent, SetCondition, SetOptions};
//!
//! # async fn demo() -> statestore::Result<()> {
//! let client = Client::connect(ConnectOptions::new("localhost", 1883)).await?;
//!
//! // Plain SET and GET: every value carries its version (a hybrid logical clock).
//! client.set("color", "blue", SetOptions::default()).await?;
//! let color = client.get("color").await?.expect("just set");
//! assert_eq!(color.value, "blue");
//!
//! // A lock: SET only if absent (or already ours), with an expiry. Its version is the
//! // fencing token that protects what the lock guards.
//! let lock = client
//!     .set("lock", "me", SetOptions::default()
//!         .condition(SetCondition::OnlyIfAbsentOrEqual)
//!         .expiry(Duration::from_secs(10)))
//!     .await?;
//! if lock.applied {
//!     let token = lock.version.expect("the service versions every SET");
//!     client.set("guarded", "data", SetOptions::default().fencing_token(token)).await?;
//!     client.vdel("lock", "me", DeleteOptions::default()).await?;
//! }
//!
//! // Notifications; a reconnect shows up as `Resynced` with the current value.
//! let mut changes = client.observe("color").await?;
//! client.set("color", "red", SetOptions::default()).await?;
//! if let Some(KeyEvent::Set { value, .. }) = changes.next().await {
//!     assert_eq!(value, "red");
//! }
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! Settings for a pod of Azure IoT Operations come from its environment with
//! [`ConnectOptions::from_env`] (TLS, service-account token authentication and so on).
//!
//! # Errors and faults
//!
//! Every failure is an [`Error`] with a stable numeric [`ErrorCode`]; service refusals
//! (`-ERR …`) are [`Error::Service`] with one [`ServiceError`] variant per known text.
//! Arguments are checked before anything is sent ([`Error::InvalidArgument`]). No call
//! outlives its timeout ([`Error::Timeout`]). The client reconnects on its own with
//! exponential backoff; a request lost with the connection fails with
//! [`Error::ConnectionLost`] (reads are retried within their timeout), and observations are
//! re-registered and report [`KeyEvent::Resynced`].
//!
//! # Layers
//!
//! - [`Client`] and [`blocking::Client`]: the API above.
//! - [`protocol`]: the wire format (RESP-like payloads, hybrid logical clocks, topics and
//!   MQTT user properties). It has no I/O and is shared with `statestore-server`.
//! - [`runtime`]: the internal tokio runtime of the blocking API and the bindings.
//! - `bindings` (feature `bindings`): what the C, Python and Node bindings share.
#![warn(missing_docs)]

#[cfg(feature = "bindings")]
pub mod bindings;
#[cfg(feature = "client")]
pub mod blocking;
#[cfg(feature = "client")]
pub mod client;
pub mod error;
#[cfg(feature = "client")]
pub mod lease;
// The table of connection settings by name is what `ConnectOptions::from_url` reads as well as
// what the bindings expose, so it builds with the client; the bindings re-export it.
#[cfg(feature = "client")]
#[path = "bindings/options.rs"]
mod options_by_name;
pub mod protocol;
#[cfg(feature = "client")]
pub mod runtime;

// The operations' options and results (`client::types`) all reach the crate root, so that a
// new one needs no line here.
#[cfg(feature = "client")]
pub use client::types::*;
#[cfg(feature = "client")]
pub use client::{
    Authentication, Client, ConnectOptions, Keys, Observation, ReconnectPolicy, TlsOptions,
    DEFAULT_MAX_IN_FLIGHT, OBSERVATION_QUEUE_LIMIT,
};
#[cfg(feature = "client")]
pub use client::{ConnectionEvent, ConnectionEvents, ConnectionState};
pub use error::{Error, ErrorCategory, ErrorCode, ErrorInfo};
#[cfg(feature = "client")]
pub use lease::{Election, Lease, Lock, LockGuard};
// What `ConnectOptions::set_option` takes, for programs without the `bindings` feature.
#[cfg(feature = "client")]
pub use options_by_name::{OptionKind, OptionSpec, OptionValue, CONNECT_OPTIONS};
pub use protocol::{Hlc, ServiceError, SetCondition};

/// Convenience alias for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The Rust examples of the repository's README, compiled and run as doctests, so that they
/// stay complete programs that work as written.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// The Rust examples of the Rust guide (`docs/rust.md`), compiled and run as doctests, so that
/// they stay complete programs that work as written.
#[cfg(doctest)]
#[doc = include_str!("../../docs/rust.md")]
pub struct RustGuideExamples;
