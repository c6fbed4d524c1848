//! The async and blocking state store clients: one connection, N requests in flight (tasks
//! for the async client, threads for the blocking one), SET or GET of one key per slot.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use statestore::{ConnectOptions, SetOptions};

use crate::gate::Gate;
use crate::measure::{Recorder, SharedRecorder};
use crate::scenario::Op;
use crate::wire;

/// What the clients do.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// SET or GET.
    pub op: Op,
    /// Value size.
    pub value_size: usize,
    /// Requests in flight.
    pub in_flight: usize,
}

fn connect_options(addr: SocketAddr, flavour: &str) -> ConnectOptions {
    static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
    ConnectOptions::new(addr.ip().to_string(), addr.port()).client_id(format!(
        "bench-{flavour}-{}-{}",
        std::process::id(),
        CONNECTIONS.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Whether a SET's result is the expected one.
fn check_set(result: statestore::Result<statestore::SetResult>) -> Result<(), String> {
    match result {
        Ok(r) if r.applied => Ok(()),
        Ok(r) => Err(format!("SET not applied: {r:?}")),
        Err(e) => Err(format!("SET failed: {e}")),
    }
}

/// Whether a GET's result is the value of the workload's size.
fn check_get(
    result: statestore::Result<Option<statestore::Value>>,
    size: usize,
) -> Result<(), String> {
    match result {
        Ok(Some(v)) if v.value.len() == size => Ok(()),
        Ok(other) => Err(format!(
            "GET returned {:?} bytes, expected {size}",
            other.map(|v| v.value.len())
        )),
        Err(e) => Err(format!("GET failed: {e}")),
    }
}

/// Records one call's outcome; a failure ends the scenario (figures with failed calls in them
/// would not mean anything).
fn record(
    recorder: &SharedRecorder,
    gate: &Gate,
    phase: crate::gate::Phase,
    sent: Instant,
    outcome: Result<(), String>,
) {
    match outcome {
        Ok(()) => recorder.success(phase, sent),
        Err(error) => {
            recorder.failure(error);
            gate.stop();
        }
    }
}

/// The async client, `workload.in_flight` tasks.
pub async fn run_async(
    addr: SocketAddr,
    workload: Workload,
    gate: Arc<Gate>,
) -> Result<Recorder, String> {
    let client = statestore::Client::connect(connect_options(addr, "async"))
        .await
        .map_err(|e| format!("async client cannot connect: {e}"))?;
    let value = wire::value(workload.value_size);
    if workload.op == Op::Get {
        for slot in 0..workload.in_flight {
            check_set(
                client
                    .set(wire::key(slot), value.clone(), SetOptions::default())
                    .await,
            )
            .map_err(|e| format!("priming the keys: {e}"))?;
        }
    }
    let recorder = Arc::new(SharedRecorder::default());
    gate.set_ready();
    let tasks: Vec<_> = (0..workload.in_flight)
        .map(|slot| {
            let (client, gate, value) = (client.clone(), gate.clone(), value.clone());
            let recorder = recorder.clone();
            tokio::spawn(async move {
                let key = wire::key(slot);
                while let Some(phase) = gate.next() {
                    let sent = Instant::now();
                    let outcome = match workload.op {
                        Op::Get => check_get(client.get(key.clone()).await, workload.value_size),
                        Op::Set | Op::Echo => check_set(
                            client
                                .set(key.clone(), value.clone(), SetOptions::default())
                                .await,
                        ),
                    };
                    record(&recorder, &gate, phase, sent, outcome);
                }
            })
        })
        .collect();
    for task in tasks {
        if let Err(e) = task.await {
            recorder.failure(format!("client task failed: {e}"));
        }
    }
    let _ = client.close().await;
    Ok(recorder.take())
}

/// The blocking client, `workload.in_flight` threads sharing one client.
pub async fn run_blocking(
    addr: SocketAddr,
    workload: Workload,
    gate: Arc<Gate>,
) -> Result<Recorder, String> {
    let (done, result) = tokio::sync::oneshot::channel();
    // The blocking client refuses to run on a thread of an async runtime.
    std::thread::Builder::new()
        .name("bench-blocking".into())
        .spawn(move || {
            let _ = done.send(blocking_threads(addr, workload, &gate));
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    result
        .await
        .map_err(|_| "the blocking client's thread panicked".to_owned())?
}

fn blocking_threads(addr: SocketAddr, workload: Workload, gate: &Gate) -> Result<Recorder, String> {
    let client = statestore::blocking::Client::connect(connect_options(addr, "blocking"))
        .map_err(|e| format!("blocking client cannot connect: {e}"))?;
    let value = wire::value(workload.value_size);
    if workload.op == Op::Get {
        for slot in 0..workload.in_flight {
            check_set(client.set(wire::key(slot), value.clone(), SetOptions::default()))
                .map_err(|e| format!("priming the keys: {e}"))?;
        }
    }
    let recorder = SharedRecorder::default();
    gate.set_ready();
    let worker = |slot: usize| {
        let key: Bytes = wire::key(slot);
        while let Some(phase) = gate.next() {
            let sent = Instant::now();
            let outcome = match workload.op {
                Op::Get => check_get(client.get(key.clone()), workload.value_size),
                Op::Set | Op::Echo => {
                    check_set(client.set(key.clone(), value.clone(), SetOptions::default()))
                }
            };
            record(&recorder, gate, phase, sent, outcome);
        }
    };
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workload.in_flight)
            .map(|slot| scope.spawn(move || worker(slot)))
            .collect();
        for thread in threads {
            if thread.join().is_err() {
                recorder.failure("a blocking client thread panicked");
            }
        }
    });
    let _ = client.close();
    Ok(recorder.take())
}
