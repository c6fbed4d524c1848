//! The raw MQTT 5 requester: one rumqttc connection keeping N requests in flight, with the
//! client's properties and payloads, answered by the echo responder (the floor) or by the
//! server. It does what the client does on the wire and nothing else.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{Packet, Publish};
use rumqttc::v5::{AsyncClient, Event, EventLoop};
use statestore::protocol::{topics, HybridClock, Response, MAX_CLOCK_SKEW};

use crate::gate::{Gate, Phase};
use crate::measure::Recorder;
use crate::mqtt;
use crate::scenario::Op;
use crate::wire;

/// A request slot: one request in flight at a time.
struct Slot {
    payload: Bytes,
    seq: u64,
    sent: Instant,
    phase: Phase,
    busy: bool,
}

/// What the requester sends and what it expects back.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Echo, SET or GET.
    pub op: Op,
    /// Value size.
    pub value_size: usize,
    /// Requests in flight.
    pub in_flight: usize,
}

/// Connects to `addr`, primes the keys (GET), then keeps `workload.in_flight` requests in
/// flight on `topic` while the gate lets it.
pub async fn run(
    addr: SocketAddr,
    topic: &'static str,
    workload: Workload,
    gate: Arc<Gate>,
) -> Result<Recorder, String> {
    static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
    let client_id = format!(
        "bench-raw-{}-{}",
        std::process::id(),
        CONNECTIONS.fetch_add(1, Ordering::Relaxed)
    );
    let response_topic = topics::response_topic(&client_id);
    let (client, eventloop) = mqtt::connect(&client_id, addr, &response_topic).await?;
    let mut requester = Requester {
        clock: HybridClock::new(client_id.clone(), MAX_CLOCK_SKEW),
        client_id,
        response_topic,
        topic,
        client,
        eventloop,
        slots: Vec::new(),
        busy: 0,
        recorder: Recorder::default(),
        workload,
    };
    let value = wire::value(workload.value_size);
    if workload.op == Op::Get {
        let sets = (0..workload.in_flight)
            .map(|slot| wire::set_payload(&wire::key(slot), &value))
            .collect();
        requester.prime(sets).await?;
    }
    let payloads = (0..workload.in_flight)
        .map(|slot| match workload.op {
            Op::Echo | Op::Set => wire::set_payload(&wire::key(slot), &value),
            Op::Get => wire::get_payload(&wire::key(slot)),
        })
        .collect();
    gate.set_ready();
    requester.run(payloads, &gate).await;
    mqtt::disconnect(&requester.client, &mut requester.eventloop).await;
    Ok(requester.recorder)
}

struct Requester {
    client_id: String,
    response_topic: String,
    topic: &'static str,
    client: AsyncClient,
    eventloop: EventLoop,
    clock: HybridClock,
    slots: Vec<Slot>,
    busy: usize,
    recorder: Recorder,
    workload: Workload,
}

impl Requester {
    /// Sends one SET per slot and waits for every answer: the keys GET will read.
    async fn prime(&mut self, sets: Vec<Bytes>) -> Result<(), String> {
        let gate = Gate::new(None);
        gate.stop();
        let op = std::mem::replace(&mut self.workload.op, Op::Set);
        self.install(sets);
        for slot in 0..self.slots.len() {
            self.send(slot, Phase::Warmup)?;
        }
        self.drain(&gate).await;
        self.workload.op = op;
        match self.recorder.first_error.take() {
            None => Ok(()),
            Some(error) => Err(format!("priming the keys failed: {error}")),
        }
    }

    /// Keeps every slot busy until the gate says stop, then waits for the last answers.
    async fn run(&mut self, payloads: Vec<Bytes>, gate: &Gate) {
        self.install(payloads);
        for slot in 0..self.slots.len() {
            let Some(phase) = gate.next() else { break };
            if let Err(error) = self.send(slot, phase) {
                self.give_up(gate, error);
                return;
            }
        }
        self.drain(gate).await;
    }

    fn install(&mut self, payloads: Vec<Bytes>) {
        self.slots = payloads
            .into_iter()
            .map(|payload| Slot {
                payload,
                seq: 0,
                sent: Instant::now(),
                phase: Phase::Warmup,
                busy: false,
            })
            .collect();
        self.busy = 0;
    }

    fn send(&mut self, index: usize, phase: Phase) -> Result<(), String> {
        let timestamp = self
            .clock
            .next()
            .map_err(|e| format!("requester clock: {e}"))?
            .to_string();
        let Some(slot) = self.slots.get_mut(index) else {
            return Err(format!("no request slot {index}"));
        };
        slot.seq += 1;
        slot.phase = phase;
        slot.busy = true;
        let properties = wire::request_properties(
            &self.client_id,
            &self.response_topic,
            timestamp,
            wire::correlation(index as u32, slot.seq),
        );
        slot.sent = Instant::now();
        self.busy += 1;
        mqtt::publish_now(
            &self.client,
            self.topic.to_owned(),
            slot.payload.clone(),
            properties,
        )
    }

    /// Handles responses until no request is in flight; each answer frees its slot for the
    /// next request the gate allows.
    async fn drain(&mut self, gate: &Gate) {
        while self.busy > 0 {
            let response = match self.eventloop.poll().await {
                Ok(Event::Incoming(Packet::Publish(response))) => response,
                Ok(Event::Incoming(Packet::Disconnect(d))) => {
                    return self.give_up(gate, format!("disconnected by the broker: {d:?}"));
                }
                Ok(_) => continue,
                Err(error) => return self.give_up(gate, format!("connection failed: {error}")),
            };
            let index = match self.complete(&response) {
                Ok(index) => index,
                Err(error) => {
                    // The scenario is over; keep draining what is still in flight.
                    self.recorder.failure(error);
                    gate.stop();
                    continue;
                }
            };
            if let Some(phase) = gate.next() {
                if let Err(error) = self.send(index, phase) {
                    return self.give_up(gate, error);
                }
            }
        }
    }

    /// Matches a response to its slot, checks it and records it; returns the freed slot.
    fn complete(&mut self, response: &Publish) -> Result<usize, String> {
        let properties = response.properties.as_ref();
        let (index, seq) = properties
            .and_then(|p| p.correlation_data.as_deref())
            .and_then(wire::parse_correlation)
            .ok_or("a response without our correlation data")?;
        let index = index as usize;
        let slot = self
            .slots
            .get_mut(index)
            .filter(|slot| slot.busy && slot.seq == seq)
            .ok_or("a response to no request in flight")?;
        slot.busy = false;
        self.busy -= 1;
        let (phase, sent, sent_len) = (slot.phase, slot.sent, slot.payload.len());
        if !wire::status_ok(properties) {
            return Err(format!("a response without __stat 200: {properties:?}"));
        }
        check_payload(self.workload, sent_len, &response.payload)?;
        self.recorder.success(phase, sent);
        Ok(index)
    }

    fn give_up(&mut self, gate: &Gate, error: String) {
        self.recorder.failure(error);
        gate.stop();
    }
}

/// Whether a response payload is what the responder must answer.
fn check_payload(workload: Workload, sent_len: usize, payload: &Bytes) -> Result<(), String> {
    let ok = match workload.op {
        Op::Echo => payload.len() == sent_len,
        Op::Set => matches!(Response::decode(payload), Ok(Response::Ok)),
        Op::Get => {
            matches!(Response::decode(payload), Ok(Response::Value(v)) if v.len() == workload.value_size)
        }
    };
    if ok {
        Ok(())
    } else {
        let shown = &payload[..payload.len().min(64)];
        Err(format!(
            "unexpected {} response ({} bytes): {:?}",
            workload.op.label(),
            payload.len(),
            String::from_utf8_lossy(shown)
        ))
    }
}
