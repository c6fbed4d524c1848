//! The transport-independent service: one task owns the [`Engine`](crate::engine::Engine)
//! and turns requests into responses and notifications. Transport adapters (the embedded
//! broker's router, or an MQTT client of an external broker) feed it [`Input`]s and publish
//! its [`Outbound`]s.

mod actor;
mod envelope;
mod identity;
mod inbound;
mod outbound;

pub(crate) use actor::run;
pub(crate) use identity::{claimed_by_client, stamped_by_broker};
pub(crate) use inbound::{Inbound, Input, UserProperties};
pub(crate) use outbound::{OutMessage, Outbound};
