//! The figures of one measurement: what the measuring process reports (a scenario's
//! `measure` process, the Rust flavours' driver) and what `latest.json` and `bindings.json`
//! write for it. The result objects of both files flatten [`Outcome`] and [`Figures`] into
//! themselves, so each figure has one meaning and one spelling everywhere; they are two
//! structs, not one, because `bindings.json` writes its `unavailable` between them.

use serde::{Deserialize, Serialize};

/// One measurement as the measuring process reports it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measurement {
    /// Counts and failure.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// What it found (the peak memory figures are filled in by the parent, which sees the
    /// processes end).
    #[serde(flatten)]
    pub figures: Figures,
}

/// How a measurement went: its counts and why it failed, if it did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    /// Measured operations that succeeded (calls of the bindings' boundary test).
    pub ops: u64,
    /// Failed operations.
    pub errors: u64,
    /// Why the measurement failed, if it did.
    pub error: Option<String>,
}

impl Outcome {
    /// Whether it ran without any failure: a run that measured nothing did not run.
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.errors == 0 && self.ops > 0
    }
}

/// What a measurement found: time, throughput, latency, CPU and memory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Figures {
    /// Measuring time, seconds.
    pub elapsed_s: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// Largest latency, microseconds.
    pub max_us: f64,
    /// CPU time of the measuring process (requester, client or driver only) per operation, µs.
    pub cpu_us_per_op: f64,
    /// Context switches of the measuring process per operation (every thread's, voluntary
    /// and involuntary): the thread wake-ups one operation costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx_switches_per_op: Option<f64>,
    /// CPU time of the service-side process (embedded broker, echo responder or server) per
    /// operation, µs; Mosquitto's own CPU is not included.
    pub service_cpu_us_per_op: Option<f64>,
    /// Peak resident memory of the measuring process, MiB.
    pub peak_rss_mb: Option<f64>,
    /// Peak resident memory of the service-side process, MiB.
    pub service_peak_rss_mb: Option<f64>,
}

/// Bytes to MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
