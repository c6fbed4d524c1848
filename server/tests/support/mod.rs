//! Shared helpers of the black-box tests: a server in either mode and a plain MQTT 5 client
//! (rumqttc, no state store library) that speaks the protocol with hand-written payloads.
#![allow(dead_code)] // each test binary uses a different subset

pub mod probe;
pub mod wire;

use statestore_server::{EngineConfig, Server};
use statestore_testkit::Mosquitto;

pub use probe::Probe;

/// The two ways the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// In-process broker.
    Embedded,
    /// Attached to Mosquitto.
    External,
}

/// A running server (and its Mosquitto in external mode).
pub struct Env {
    pub kind: Kind,
    pub server: Server,
    _broker: Option<Mosquitto>,
}

impl Env {
    pub async fn start(kind: Kind) -> Env {
        Env::with_engine(kind, EngineConfig::default()).await
    }

    /// A server with these engine settings.
    pub async fn with_engine(kind: Kind, engine: EngineConfig) -> Env {
        let (broker, server) = match kind {
            Kind::Embedded => (None, statestore_testkit::embedded_with_engine(engine).await),
            Kind::External => {
                let (broker, server) = statestore_testkit::on_mosquitto_with_engine(engine).await;
                (Some(broker), server)
            }
        };
        Env {
            kind,
            server,
            _broker: broker,
        }
    }

    /// A connected client with a unique id built from `name`.
    pub async fn client(&self, name: &str) -> Probe {
        Probe::connect(self.server.local_addr(), &unique(name)).await
    }

    /// A connected client with exactly this id.
    pub async fn client_with_id(&self, id: &str) -> Probe {
        Probe::connect(self.server.local_addr(), id).await
    }
}

/// `name` plus a random suffix, so tests never share client ids or keys.
pub fn unique(name: &str) -> String {
    format!("{name}-{:08x}", fastrand::u32(..))
}
