//! `statestore-bench`: measures the state store client and server against the raw MQTT 5
//! request/response floor, the same way every time.
//!
//! - [`matrix`] lists the scenarios of a [`profile`] ([`scenario`] names them);
//! - [`runner`] runs each one in fresh processes: the service side ([`service`]: broker,
//!   [`echo`] responder or state store server) in one, the load ([`drivers`]) in another
//!   ([`measurer`]), phases by the [`gate`] and [`window`], figures by [`measure`] and
//!   [`resources`] into a [`figures::Measurement`];
//! - [`report`] writes the table, `latest.json`, `latest.svg` and the target checks;
//!   [`bindings`] runs every binding flavour and reports through the same pieces.
//!
//! [`allocator`] gives the service side mimalloc and the rest the system's allocator.
//!
//! [`wire`] and [`mqtt`] hold what the raw requester and the echo responder put on the wire.
#![warn(missing_docs)]

pub mod allocator;
pub mod bindings;
pub mod drivers;
pub mod echo;
pub mod figures;
pub mod gate;
pub mod matrix;
pub mod measure;
pub mod measurer;
pub mod mqtt;
pub mod profile;
pub mod report;
pub mod resources;
pub mod runner;
pub mod scenario;
pub mod service;
pub mod window;
pub mod wire;
