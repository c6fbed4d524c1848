//! `statestore-server`: a local state store that behaves like the one inside the Azure IoT
//! Operations MQTT broker.
//!
//! - [`engine`]: the state machine, with no I/O.
#![warn(missing_docs)]

pub mod engine;
