//! What one scenario measures: which path, which operation, how big, how many in flight, on
//! which broker. A scenario's name is its identity in the table, the JSON and `--filter`.

use std::fmt;

use serde::Serialize;

/// The path a scenario measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The server's engine alone on one thread: decode, apply, encode. No MQTT.
    Engine,
    /// Raw MQTT 5 request/response answered by the echo responder: the transport floor.
    Floor,
    /// The same raw requester answered by `statestore-server`.
    Server,
    /// The async Rust client.
    Async,
    /// The blocking Rust client, one thread per request in flight.
    Blocking,
    /// The async client over a long run, sampling the process's resident memory.
    Memory,
}

impl Kind {
    /// The name used in scenario names.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Engine => "engine",
            Kind::Floor => "floor",
            Kind::Server => "server",
            Kind::Async => "async",
            Kind::Blocking => "blocking",
            Kind::Memory => "memory",
        }
    }

    /// Whether the scenario is a client measured against the floor.
    pub fn is_client(self) -> bool {
        matches!(self, Kind::Async | Kind::Blocking)
    }
}

/// The request a scenario sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// A SET-sized payload echoed back by the echo responder (the floor).
    Echo,
    /// `SET key value`.
    Set,
    /// `GET key` of a key holding a value of the scenario's size.
    Get,
}

impl Op {
    /// The name used in scenario names.
    pub fn label(self) -> &'static str {
        match self {
            Op::Echo => "echo",
            Op::Set => "set",
            Op::Get => "get",
        }
    }
}

/// The MQTT broker requests go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Broker {
    /// The MQTT 5 broker embedded in `statestore-server`.
    Embedded,
    /// A Mosquitto process, with `statestore-server` attached to it as a client.
    Mosquitto,
}

impl Broker {
    /// The name used in scenario names.
    pub fn label(self) -> &'static str {
        match self {
            Broker::Embedded => "embedded",
            Broker::Mosquitto => "mosquitto",
        }
    }
}

/// One cell of the benchmark matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scenario {
    /// What is measured.
    pub kind: Kind,
    /// Which request.
    pub op: Op,
    /// Value size in bytes.
    pub value_size: usize,
    /// Requests in flight (1 for the engine).
    pub in_flight: usize,
    /// The broker; `None` for the engine, which has no MQTT.
    pub broker: Option<Broker>,
}

impl Scenario {
    /// The name: `kind/op/size[/in_flight/broker]`, e.g. `async/get/1KiB/64/embedded`.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// The floor scenario this one is compared with (same size, in flight and broker).
    pub fn floor(&self) -> Option<Scenario> {
        let broker = self.broker?;
        (self.kind != Kind::Floor).then_some(Scenario {
            kind: Kind::Floor,
            op: Op::Echo,
            value_size: self.value_size,
            in_flight: self.in_flight,
            broker: Some(broker),
        })
    }
}

impl Scenario {
    /// The raw-requester-against-the-server scenario a client is compared with (same op,
    /// size, in flight and broker): what the client adds to the same exchange.
    pub fn raw(&self) -> Option<Scenario> {
        (self.kind.is_client() && self.broker.is_some()).then_some(Scenario {
            kind: Kind::Server,
            ..*self
        })
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Memory => "memory/async",
            other => other.label(),
        };
        write!(
            f,
            "{kind}/{}/{}",
            self.op.label(),
            size_label(self.value_size)
        )?;
        if let Some(broker) = self.broker {
            write!(f, "/{}/{}", self.in_flight, broker.label())?;
        }
        Ok(())
    }
}

/// `16B`, `1KiB`, `64KiB`: sizes as the tables and names show them.
pub fn size_label(bytes: usize) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}KiB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_identify_every_dimension() {
        let s = Scenario {
            kind: Kind::Async,
            op: Op::Get,
            value_size: 1024,
            in_flight: 64,
            broker: Some(Broker::Embedded),
        };
        assert_eq!(s.name(), "async/get/1KiB/64/embedded");
        assert_eq!(
            s.floor().map(|f| f.name()).as_deref(),
            Some("floor/echo/1KiB/64/embedded")
        );
        let engine = Scenario {
            kind: Kind::Engine,
            op: Op::Set,
            value_size: 16,
            in_flight: 1,
            broker: None,
        };
        assert_eq!(engine.name(), "engine/set/16B");
        assert_eq!(engine.floor(), None);
        assert_eq!(
            s.raw().map(|r| r.name()).as_deref(),
            Some("server/get/1KiB/64/embedded")
        );
        assert_eq!(engine.raw(), None);
        assert_eq!(size_label(65536), "64KiB");
        assert_eq!(size_label(100), "100B");
    }
}
