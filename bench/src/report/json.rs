//! `latest.json`: the run's settings, every scenario and the target checks.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::targets::TargetCheck;
use super::ScenarioResult;

/// What the figures include, written into latest.json.
pub const NOTES: [&str; 8] = [
    "ops_per_sec: measured operations / time from the end of the warm-up to the last measured answer",
    "p50_us, p99_us: per-operation latency from sending the request to checking the answer (hdrhistogram)",
    "cpu_us_per_op: user+system CPU of the measuring process (requester or client only: the broker, echo responder and server run in a child process) / operations",
    "service_cpu_us_per_op: CPU of that child process (embedded broker + echo responder or server; on Mosquitto, without Mosquitto's own CPU) / operations, clock-tick resolution",
    "peak_rss_mb: VmHWM of the measuring process, reset before each scenario; service_peak_rss_mb: VmHWM of the child",
    "floor: the same requester with the client's properties and a SET payload of the value size, echoed back (the value travels both ways)",
    "on the embedded broker the server is attached in process while the echo responder is a TCP client: there the floor is slower than the server; ratio_to_raw / p50_delta_raw_us compare clients with the raw requester on the same server instead",
    "each scenario runs in fresh processes (service side, measuring side, Mosquitto)",
];

/// What both result files (`latest.json`, `bindings.json`) start with: the run's profile,
/// when it ended, on what and what the figures include.
#[derive(Debug, Serialize)]
pub struct Run<'a> {
    /// `full`, `quick` or `smoke`.
    pub profile: &'a str,
    /// When the run ended, seconds since the Unix epoch.
    pub finished_unix_s: u64,
    /// Conditions of the run (machine, load).
    pub machine: Machine,
    /// What the figures include.
    pub notes: &'a [&'a str],
}

impl<'a> Run<'a> {
    /// A run of `profile` that ends now, on this machine.
    pub fn ending_now(
        profile: &'a str,
        notes: &'a [&'a str],
        load_at_start: Option<String>,
    ) -> Self {
        Self {
            profile,
            finished_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            machine: Machine {
                cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
                load_at_start,
                load_at_end: load_average(),
            },
            notes,
        }
    }

    /// `quick profile, 2 CPUs, load 1.00 0.50 0.20`: what a chart's title says of the run.
    pub fn conditions(&self) -> String {
        format!(
            "{} profile, {} CPUs, load {}",
            self.profile,
            self.machine.cpus,
            self.machine.load_at_start.as_deref().unwrap_or("?")
        )
    }
}

/// The whole `latest.json`.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// The run.
    #[serde(flatten)]
    pub run: Run<'a>,
    /// One object per scenario.
    pub scenarios: &'a [ScenarioResult],
    /// The performance targets, each checked against this run.
    pub targets: &'a [TargetCheck],
}

/// The machine the figures were taken on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs.
    pub cpus: usize,
    /// `/proc/loadavg` at the start of the run.
    pub load_at_start: Option<String>,
    /// `/proc/loadavg` at the end of the run.
    pub load_at_end: Option<String>,
}

/// The current 1/5/15 minute load averages.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Writes `document` to `path` (pretty-printed).
pub fn write(path: &Path, document: &impl Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(document)
        .map_err(|e| format!("cannot encode the results: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}
