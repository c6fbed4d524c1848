//! The long run: the async client through many operations while the process's resident
//! memory is sampled, to show whether it stays flat.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::drivers::client::{self, Workload};
use crate::figures::Measurement;
use crate::gate::Gate;
use crate::measure::Recorder;
use crate::window::{self, Plan};

/// How often resident memory is sampled.
const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// Resident memory over the measured operations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryTrace {
    /// (operations done, resident MiB) pairs, in order.
    pub samples: Vec<(u64, f64)>,
    /// Resident MiB at the first sample (after the warm-up).
    pub start_mb: f64,
    /// Resident MiB at the last sample.
    pub end_mb: f64,
    /// Growth from the first to the last sample, MiB.
    pub growth_mb: f64,
    /// Growth over the second half of the operations, MiB: the steady-state trend.
    pub second_half_growth_mb: f64,
    /// The language runtime's own heap over the same second half, where the driver can read
    /// it (Node: V8's heap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_heap: Option<RuntimeHeap>,
}

/// A garbage-collected runtime's heap over the second half of a memory run, MiB: what tells
/// the runtime resizing its heap (reserved grows once, used does not) from a leak (used
/// grows).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuntimeHeap {
    /// Growth of the heap the runtime has reserved (Node: `heapTotal`).
    pub reserved_growth_mb: f64,
    /// Growth of what live objects take (Node: `heapUsed`).
    pub used_growth_mb: f64,
    /// What live objects take at the end.
    pub used_end_mb: f64,
}

impl MemoryTrace {
    fn new(samples: Vec<(u64, f64)>) -> Option<Self> {
        let &(_, start_mb) = samples.first()?;
        let &(last_ops, end_mb) = samples.last()?;
        let &(_, middle_mb) = samples.iter().find(|(ops, _)| *ops >= last_ops / 2)?;
        Some(Self {
            start_mb,
            end_mb,
            growth_mb: end_mb - start_mb,
            second_half_growth_mb: end_mb - middle_mb,
            runtime_heap: None,
            samples,
        })
    }
}

/// Runs `workload` for `plan.op_cap` operations with the async client, sampling memory.
pub async fn run(
    addr: SocketAddr,
    workload: Workload,
    plan: Plan,
    service_pid: Option<u32>,
) -> Result<(Measurement, Option<MemoryTrace>), String> {
    run_with(addr, workload, plan, service_pid, false).await
}

/// [`run`] with the async client, or with the blocking client (one thread per request in
/// flight) when `blocking`.
pub async fn run_with(
    addr: SocketAddr,
    workload: Workload,
    plan: Plan,
    service_pid: Option<u32>,
    blocking: bool,
) -> Result<(Measurement, Option<MemoryTrace>), String> {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sink = samples.clone();
    let measurement = window::measure(plan, service_pid, move |gate: Arc<Gate>| async move {
        let sampler = sample(gate.clone(), sink);
        let load = async move {
            if blocking {
                client::run_blocking(addr, workload, gate).await
            } else {
                client::run_async(addr, workload, gate).await
            }
        };
        let (recorder, ()) = tokio::join!(load, sampler);
        recorder.map(|r: Recorder| r)
    })
    .await?;
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((measurement, MemoryTrace::new(samples)))
}

async fn sample(gate: Arc<Gate>, sink: Arc<Mutex<Vec<(u64, f64)>>>) {
    let mut ticks = tokio::time::interval(SAMPLE_INTERVAL);
    loop {
        ticks.tick().await;
        // Once stopped, the workers close the client and free its buffers: a sample then is
        // not the steady state (taken only when a very short run has no sample at all).
        let stopped = gate.is_stopped();
        if stopped && !sink.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            break;
        }
        let ops = gate.measured();
        if ops == 0 {
            if stopped {
                break;
            }
            continue;
        }
        if let Some(rss) = crate::resources::current_rss() {
            let mb = rss as f64 / (1024.0 * 1024.0);
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((ops, mb));
        }
        if stopped {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_measured_from_the_first_sample_and_over_the_second_half() {
        let trace = MemoryTrace::new(vec![(10, 20.0), (50, 21.0), (100, 21.5)]).expect("trace");
        assert_eq!(trace.growth_mb, 1.5);
        assert_eq!(trace.second_half_growth_mb, 0.5);
        assert!(MemoryTrace::new(Vec::new()).is_none());
    }
}
