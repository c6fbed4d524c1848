//! The server's engine alone, on the calling thread: decode the request payload, apply it,
//! encode the response payload and its `__ts`, as the service does for every request.
//!
//! Two passes over the same workload: the first counts operations per second without any
//! clock reading per operation, the second times every operation for the latency figures.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use statestore::protocol::hlc::unix_ms_now;
use statestore::protocol::{Hlc, Response};
use statestore_server::engine::{Engine, EngineConfig, RequestContext};

use crate::figures::{Figures, Measurement, Outcome};
use crate::measure::new_histogram;
use crate::scenario::Op;
use crate::wire;

/// Keys the workload cycles through.
const KEYS: usize = 256;
/// Operations between two looks at the clock in the throughput pass.
const BATCH: u64 = 1024;

/// How long (or how many operations) each pass runs.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Duration of each pass.
    pub duration: Duration,
    /// Operations of each pass, when counting instead of timing.
    pub op_cap: Option<u64>,
}

impl Budget {
    fn done(&self, ops: u64, started: Instant) -> bool {
        match self.op_cap {
            Some(cap) => ops >= cap,
            None => started.elapsed() >= self.duration,
        }
    }
}

struct Bench {
    engine: Engine,
    payloads: Vec<Bytes>,
    op: Op,
    value_size: usize,
    timestamp: String,
}

impl Bench {
    fn new(op: Op, value_size: usize) -> Result<Self, String> {
        let value = wire::value(value_size);
        let keys: Vec<Bytes> = (0..KEYS).map(wire::key).collect();
        let mut bench = Self {
            engine: Engine::new(EngineConfig::default()),
            payloads: keys.iter().map(|k| wire::set_payload(k, &value)).collect(),
            op: Op::Set,
            value_size,
            timestamp: Hlc::new(unix_ms_now(), "bench-engine").to_string(),
        };
        // Every key exists before measuring: GET finds its value, SET replaces one.
        for i in 0..KEYS {
            bench.once(i)?;
        }
        if op == Op::Get {
            bench.payloads = keys.iter().map(wire::get_payload).collect();
        }
        bench.op = op;
        Ok(bench)
    }

    /// One request: decode, apply, encode. Fails if the answer is not the expected one.
    fn once(&mut self, i: usize) -> Result<(), String> {
        let payload = &self.payloads[i % KEYS];
        let ctx = RequestContext {
            client_id: "bench-engine",
            timestamp: Some(&self.timestamp),
            fencing_token: None,
            persist: false,
            now_ms: unix_ms_now(),
        };
        let outcome = self.engine.apply_payload(payload, &ctx);
        let expected = match (&outcome.response, self.op) {
            (Response::Ok, Op::Set) => true,
            (Response::Value(v), Op::Get) => v.len() == self.value_size,
            _ => false,
        };
        if !expected {
            return Err(format!("unexpected engine response {:?}", outcome.response));
        }
        black_box(outcome.response.encode());
        black_box(outcome.version.map(|v| v.to_string()));
        Ok(())
    }
}

/// Measures `op` on values of `value_size` bytes.
pub fn run(op: Op, value_size: usize, budget: Budget) -> Result<Measurement, String> {
    let mut bench = Bench::new(op, value_size)?;
    // Warm-up: caches, allocator, branch predictors.
    for i in 0..(4 * KEYS) {
        bench.once(i)?;
    }

    let cpu_before = crate::resources::process_cpu();
    let started = Instant::now();
    let mut ops = 0u64;
    while !budget.done(ops, started) {
        for _ in 0..BATCH.min(budget.op_cap.unwrap_or(u64::MAX) - ops) {
            bench.once(ops as usize)?;
            ops += 1;
        }
    }
    let elapsed = started.elapsed();
    let cpu = crate::resources::process_cpu().saturating_sub(cpu_before);

    let mut latency = new_histogram();
    let started = Instant::now();
    let mut timed = 0u64;
    while !budget.done(timed, started) {
        let sent = Instant::now();
        bench.once(timed as usize)?;
        let ns = u64::try_from(sent.elapsed().as_nanos()).unwrap_or(u64::MAX);
        latency.saturating_record(ns.max(1));
        timed += 1;
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Ok(Measurement {
        outcome: Outcome {
            ops,
            ..Outcome::default()
        },
        figures: Figures {
            elapsed_s: elapsed.as_secs_f64(),
            ops_per_sec: ops as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE),
            p50_us: us(latency.value_at_quantile(0.5)),
            p99_us: us(latency.value_at_quantile(0.99)),
            max_us: us(latency.max()),
            cpu_us_per_op: cpu.as_secs_f64() * 1e6 / ops.max(1) as f64,
            ..Figures::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_passes_run_exactly_the_budget() {
        let budget = Budget {
            duration: Duration::from_secs(600),
            op_cap: Some(500),
        };
        for op in [Op::Set, Op::Get] {
            let m = run(op, 100, budget).expect("engine runs");
            assert_eq!(m.outcome.ops, 500);
            assert!(m.figures.p99_us >= m.figures.p50_us);
        }
    }
}
