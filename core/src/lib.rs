//! `statestore`: a client library for the MQTT broker **state store**, the key-value store
//! inside the Azure IoT Operations MQTT broker.
//!
//! The crate is layered:
//! - [`protocol`]: the wire format (RESP-like payloads, hybrid logical clocks, topics and
//!   MQTT user properties). It has no I/O and is shared with `statestore-server`.
//! - [`Error`]: the one error type of the library, with a stable numeric [`ErrorCode`] per variant.
#![warn(missing_docs)]

pub mod error;
pub mod protocol;

pub use error::{Error, ErrorCode};
pub use protocol::{Hlc, ServiceError};

/// Convenience alias for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
