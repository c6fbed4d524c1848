//! The echo responder of the floor: a rumqttc client that answers every request on
//! [`ECHO_TOPIC`] with its payload, to its response topic, with its correlation data and the
//! user properties a state store response carries. Nothing is decoded.

use std::net::SocketAddr;

use rumqttc::v5::mqttbytes::v5::{Packet, Publish};
use rumqttc::v5::{AsyncClient, Event, EventLoop};
use statestore::protocol::{HybridClock, MAX_CLOCK_SKEW};

use crate::mqtt;
use crate::wire::{response_properties, ECHO_TOPIC};

/// A connected, subscribed echo responder; [`Echo::run`] serves.
pub struct Echo {
    client: AsyncClient,
    eventloop: EventLoop,
    clock: HybridClock,
}

impl Echo {
    /// Connects to the broker at `addr` and subscribes to the echo topic.
    pub async fn start(addr: SocketAddr) -> Result<Echo, String> {
        let client_id = format!("bench-echo-{}", std::process::id());
        let (client, eventloop) = mqtt::connect(&client_id, addr, ECHO_TOPIC).await?;
        Ok(Echo {
            client,
            eventloop,
            clock: HybridClock::new(client_id, MAX_CLOCK_SKEW),
        })
    }

    /// Answers requests until the connection fails; returns why.
    pub async fn run(mut self) -> String {
        loop {
            match self.eventloop.poll().await {
                Ok(Event::Incoming(Packet::Publish(request))) => self.answer(request),
                Ok(Event::Incoming(Packet::Disconnect(d))) => {
                    return format!("the broker disconnected the echo responder: {d:?}")
                }
                Ok(_) => {}
                Err(error) => return format!("echo responder connection failed: {error}"),
            }
        }
    }

    fn answer(&self, request: Publish) {
        let Some(properties) = request.properties else {
            return;
        };
        let (Some(topic), Some(correlation)) =
            (properties.response_topic, properties.correlation_data)
        else {
            return;
        };
        // The server's `__ts` is a fresh HLC too: keep the reply the same size and cost.
        let version = self.clock.next().unwrap_or_else(|_| self.clock.current());
        let reply = response_properties(correlation, version.to_string());
        // The responder lives as long as its connection: a dead event loop ends `run`.
        let _ = mqtt::publish_now(&self.client, topic, request.payload, reply);
    }
}
