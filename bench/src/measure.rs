//! Recording what workers observe (latency, counts, errors) and turning it, with the
//! coordinator's window, into a scenario's figures.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::figures::{Figures, Measurement, Outcome};
use crate::gate::Phase;

/// Highest latency the histograms hold: 60 s in nanoseconds (larger values are clamped).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// What one worker observed. Workers record into their own and the results are merged.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latency of measured operations, in nanoseconds.
    pub latency: Histogram<u64>,
    /// Measured operations that succeeded.
    pub ops: u64,
    /// Measured and warm-up operations that failed.
    pub errors: u64,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    /// When the last measured operation completed.
    pub last_completion: Option<Instant>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            ops: 0,
            errors: 0,
            first_error: None,
            last_completion: None,
        }
    }
}

/// An empty latency histogram (1 ns .. 60 s, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3) {
        Ok(histogram) => histogram,
        // The bounds are constants that hdrhistogram accepts.
        Err(error) => unreachable!("histogram bounds: {error}"),
    }
}

impl Recorder {
    /// Records an operation of `phase` sent at `sent` that succeeded now.
    pub fn success(&mut self, phase: Phase, sent: Instant) {
        if phase == Phase::Measure {
            let now = Instant::now();
            let ns = now.saturating_duration_since(sent).as_nanos();
            self.latency
                .saturating_record(u64::try_from(ns).unwrap_or(u64::MAX).max(1));
            self.ops += 1;
            self.last_completion = Some(now);
        }
    }

    /// Records a failed operation.
    pub fn failure(&mut self, error: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(error.to_string());
        }
    }

    /// Adds another worker's observations.
    pub fn merge(&mut self, other: Recorder) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        self.ops += other.ops;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.last_completion = self.last_completion.max(other.last_completion);
    }
}

/// One recorder shared by many workers (tasks or threads): a single histogram instead of one
/// per request in flight keeps the harness's own memory out of the client's figures. The
/// lock is held for a few tens of nanoseconds per operation.
#[derive(Debug, Default)]
pub struct SharedRecorder(Mutex<Recorder>);

impl SharedRecorder {
    fn lock(&self) -> std::sync::MutexGuard<'_, Recorder> {
        // A recorder is updated by single method calls: a panic elsewhere leaves it whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Recorder::success`].
    pub fn success(&self, phase: Phase, sent: Instant) {
        self.lock().success(phase, sent);
    }

    /// See [`Recorder::failure`].
    pub fn failure(&self, error: impl std::fmt::Display) {
        self.lock().failure(error);
    }

    /// What was recorded.
    pub fn take(&self) -> Recorder {
        std::mem::take(&mut *self.lock())
    }
}

/// Resource readings at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    /// When.
    pub at: Instant,
    /// CPU time of the measuring process.
    pub cpu: Duration,
    /// Context switches of the measuring process.
    pub ctx_switches: u64,
    /// CPU time of the service-side process, when there is one and it is readable.
    pub service_cpu: Option<Duration>,
}

impl Reading {
    /// Reads now; `service_pid` is the service-side child process, if any.
    pub fn now(service_pid: Option<u32>) -> Self {
        Self {
            at: Instant::now(),
            cpu: crate::resources::process_cpu(),
            ctx_switches: crate::resources::process_ctx_switches(),
            service_cpu: service_pid.and_then(crate::resources::child_cpu),
        }
    }
}

impl Measurement {
    /// The measurement of `recorder` over the window that started at `start` and whose
    /// readings ended at `end`.
    pub fn new(recorder: Recorder, start: Reading, end: Reading) -> Self {
        let elapsed = recorder
            .last_completion
            .unwrap_or(end.at)
            .saturating_duration_since(start.at);
        let ops = recorder.ops;
        let per_op = |d: Duration| {
            if ops == 0 {
                0.0
            } else {
                d.as_secs_f64() * 1e6 / ops as f64
            }
        };
        let quantile_us = |q: f64| recorder.latency.value_at_quantile(q) as f64 / 1000.0;
        Self {
            outcome: Outcome {
                ops,
                errors: recorder.errors,
                error: recorder.first_error.clone(),
            },
            figures: Figures {
                elapsed_s: elapsed.as_secs_f64(),
                ops_per_sec: if elapsed.is_zero() {
                    0.0
                } else {
                    ops as f64 / elapsed.as_secs_f64()
                },
                p50_us: quantile_us(0.5),
                p99_us: quantile_us(0.99),
                max_us: recorder.latency.max() as f64 / 1000.0,
                cpu_us_per_op: per_op(end.cpu.saturating_sub(start.cpu)),
                ctx_switches_per_op: (ops > 0).then(|| {
                    end.ctx_switches.saturating_sub(start.ctx_switches) as f64 / ops as f64
                }),
                service_cpu_us_per_op: match (start.service_cpu, end.service_cpu) {
                    (Some(a), Some(b)) => Some(per_op(b.saturating_sub(a))),
                    _ => None,
                },
                ..Figures::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_measured_operations_count() {
        let start = Reading::now(None);
        let mut a = Recorder::default();
        a.success(Phase::Warmup, Instant::now());
        a.success(Phase::Measure, Instant::now());
        let mut b = Recorder::default();
        b.success(Phase::Measure, Instant::now());
        b.failure("boom");
        b.failure("second");
        a.merge(b);
        let m = Measurement::new(a, start, Reading::now(None));
        assert_eq!(m.outcome.ops, 2);
        assert_eq!(m.outcome.errors, 2);
        assert_eq!(m.outcome.error.as_deref(), Some("boom"));
        assert!(m.figures.ops_per_sec > 0.0);
        assert!(m.figures.p99_us >= m.figures.p50_us);
    }
}
