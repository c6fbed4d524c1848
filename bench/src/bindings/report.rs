//! What a bindings run produces: one [`BindingResult`] per item, compared with the Rust
//! clients and the by-hand baselines of the same cell, written as `bindings.json` and
//! `bindings.svg` (the targets are [`super::targets`]'s, the Markdown tables
//! [`super::markdown`]'s).

use std::path::Path;

use serde::Serialize;

use super::runner::{DriverOutput, Probe};
use super::{Flavour, Item, Test};
use crate::drivers::memory::MemoryTrace;
use crate::figures::{Figures, Outcome};
use crate::report::json::{self, Run};
use crate::report::reference::References;
use crate::report::targets::TargetCheck;
use crate::report::Written;
use crate::scenario::{Broker, Op};

/// The figures of one item, as written to `bindings.json`: the fields of `latest.json`'s
/// scenarios, plus the flavour, the boundary and memory figures and the ratios.
#[derive(Debug, Clone, Serialize)]
pub struct BindingResult {
    /// `flavour/op/size/in_flight/broker`, `flavour/boundary`, `flavour/memory`.
    pub name: String,
    /// Who.
    pub flavour: Flavour,
    /// `throughput`, `boundary` or `memory`.
    pub kind: &'static str,
    /// SET or GET (throughput tests).
    pub op: Option<Op>,
    /// Value size in bytes.
    pub value_size: Option<usize>,
    /// Requests in flight.
    pub in_flight: Option<usize>,
    /// The broker.
    pub broker: Option<Broker>,
    /// Counts and failure (`ops` counts the calls of the boundary test).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Why the flavour could not run this item (not a failure of the run).
    pub unavailable: Option<String>,
    /// Time, throughput, latency, CPU and memory (of the driver process and the service).
    #[serde(flatten)]
    pub figures: Figures,
    /// Boundary test: nanoseconds per call that fails validation before any I/O.
    pub ns_per_call: Option<f64>,
    /// Memory test: resident memory over the operations.
    pub memory: Option<MemoryTrace>,
    /// Throughput divided by the Rust async client's in the same cell.
    pub ratio_to_rust_async: Option<f64>,
    /// Throughput divided by the Rust client of the same kind (async or blocking).
    pub ratio_to_rust: Option<f64>,
    /// Median latency minus that Rust client's, µs.
    pub p50_delta_rust_us: Option<f64>,
    /// Throughput divided by the by-hand baseline of the same language.
    pub ratio_to_baseline: Option<f64>,
    /// Median latency minus the baseline's, µs.
    pub p50_delta_baseline_us: Option<f64>,
    #[serde(skip)]
    item: Item,
}

impl BindingResult {
    fn empty(item: Item) -> Self {
        let (kind, op, value_size, in_flight, broker) = match item.test {
            Test::Throughput {
                op,
                value_size,
                in_flight,
                broker,
            } => (
                "throughput",
                Some(op),
                Some(value_size),
                Some(in_flight),
                Some(broker),
            ),
            Test::Boundary => ("boundary", None, None, None, Some(Broker::Embedded)),
            Test::Memory => (
                "memory",
                None,
                None,
                Some(item.flavour.memory_in_flight()),
                Some(Broker::Embedded),
            ),
        };
        Self {
            name: item.name(),
            flavour: item.flavour,
            kind,
            op,
            value_size,
            in_flight,
            broker,
            outcome: Outcome::default(),
            unavailable: None,
            figures: Figures::default(),
            ns_per_call: None,
            memory: None,
            ratio_to_rust_async: None,
            ratio_to_rust: None,
            p50_delta_rust_us: None,
            ratio_to_baseline: None,
            p50_delta_baseline_us: None,
            item,
        }
    }

    /// An item the flavour cannot run here.
    pub fn unavailable(item: Item, reason: String) -> Self {
        let mut r = Self::empty(item);
        r.unavailable = Some(reason);
        r
    }

    /// An item that failed to run.
    pub fn failed(item: Item, error: String) -> Self {
        let mut r = Self::empty(item);
        r.outcome.error = Some(error);
        r
    }

    /// An item from what its driver printed.
    pub fn from_output(item: Item, out: DriverOutput) -> Self {
        let mut r = Self::empty(item);
        r.unavailable = out.unavailable;
        r.outcome = Outcome {
            ops: out.ops.unwrap_or(0),
            errors: out.errors.unwrap_or(0),
            error: out.error,
        };
        r.figures = Figures {
            elapsed_s: out.elapsed_s.unwrap_or(0.0),
            ops_per_sec: out.ops_per_sec.unwrap_or(0.0),
            p50_us: out.p50_us.unwrap_or(0.0),
            p99_us: out.p99_us.unwrap_or(0.0),
            max_us: out.max_us.unwrap_or(0.0),
            cpu_us_per_op: out.cpu_us_per_op.unwrap_or(0.0),
            service_cpu_us_per_op: out.service_cpu_us_per_op,
            peak_rss_mb: out.peak_rss_mb,
            service_peak_rss_mb: None,
        };
        r.ns_per_call = out.ns_per_call;
        r.memory = out.memory;
        let error = &mut r.outcome.error;
        if r.unavailable.is_none() && error.is_none() && r.outcome.ops == 0 {
            *error = Some("the driver measured no operation".to_owned());
        }
        if r.unavailable.is_none()
            && error.is_none()
            && item.test == Test::Memory
            && r.memory.is_none()
        {
            *error = Some("the memory run has no samples".to_owned());
        }
        r
    }

    /// What was measured.
    pub fn item(&self) -> Item {
        self.item
    }

    /// Whether it ran without any failure.
    pub fn ok(&self) -> bool {
        self.unavailable.is_none() && self.outcome.ok()
    }

    /// Whether it is a throughput test (SET or GET at a size and depth).
    pub fn is_throughput(&self) -> bool {
        self.kind == "throughput"
    }

    /// Whether it failed (as opposed to ran, or was unavailable).
    pub fn failed_run(&self) -> bool {
        self.unavailable.is_none() && !self.ok()
    }
}

/// Fills the ratios of every throughput result against the Rust clients and the baselines of
/// its cell.
pub fn compare(results: &mut [BindingResult]) {
    let references = References::new(
        results
            .iter()
            .filter(|r| r.ok() && matches!(r.item.test, Test::Throughput { .. }))
            .map(|r| (r.item, &r.figures)),
    );
    let cell = |flavour: Option<Flavour>, test: Test| flavour.map(|flavour| Item { flavour, test });
    for r in results.iter_mut().filter(|r| r.ok()) {
        let test = r.item.test;
        if !matches!(test, Test::Throughput { .. }) {
            continue;
        }
        if r.item.flavour != Flavour::RustAsync {
            if let Some(c) = references.compare(cell(Some(Flavour::RustAsync), test), &r.figures) {
                r.ratio_to_rust_async = Some(c.ratio);
            }
        }
        if let Some(c) = references.compare(cell(r.item.flavour.rust_peer(), test), &r.figures) {
            r.ratio_to_rust = Some(c.ratio);
            r.p50_delta_rust_us = Some(c.p50_delta_us);
        }
        if let Some(c) = references.compare(cell(r.item.flavour.baseline(), test), &r.figures) {
            r.ratio_to_baseline = Some(c.ratio);
            r.p50_delta_baseline_us = Some(c.p50_delta_us);
        }
    }
}

/// What the figures include, written into bindings.json.
pub const NOTES: [&str; 9] = [
    "every item runs in fresh processes: Mosquitto (when the cell uses it), the service side (statestore-bench serve: statestore-server with its embedded broker, or attached to Mosquitto) and the flavour's driver",
    "drivers: rust-* = statestore-bench rust-driver (the main harness's client drivers); c-* = bench/drivers/c_driver.c linked against the installed libstatestore; python-* = bench/drivers/py_driver.py; node-* = bench/drivers/node_driver.mjs",
    "in flight: tasks/Promises/async calls for the async flavours, threads sharing one client for the blocking ones; node-sync: Sync calls block their JS thread, so N in flight are N worker_threads, each with its own client and connection",
    "by-hand baselines: the state store protocol over paho-mqtt (python-paho) and mqtt.js (node-mqttjs), MQTT 5, TCP_NODELAY, the client's envelope (QoS 1, response topic, 16-byte correlation data, __srcId, __ts HLC, __protVer, expiry, content type); each answer issues the slot's next request from the library's message callback, the fastest way to drive those libraries",
    "ops_per_sec: measured operations / time from the end of the warm-up to the last measured answer; p50/p99: per-operation latency, call to checked answer, in the driver's language and clock",
    "cpu_us_per_op: CPU of the driver process / operations; service_cpu_us_per_op: CPU of the service process (clock ticks), Mosquitto's own CPU excluded",
    "ratio_to_rust_async / ratio_to_rust / p50_delta_rust_us: against the Rust async client / the Rust client of the same kind (async or blocking) in the same cell of the same run; ratio_to_baseline / p50_delta_baseline_us: against the by-hand baseline of the same language",
    "boundary: a SET with an empty key, which every binding rejects before any I/O, in a loop: ns per call including raising/catching the error (awaiting the rejected call for async flavours)",
    "memory: operations alternating SET and GET of 16 B (Rust: SET) at 64 in flight (blocking flavours 16 threads, node-sync 1), resident memory sampled 100 times (Rust: every 100 ms); C also allocates and frees an options handle per operation",
];

/// The whole `bindings.json`.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// The run.
    #[serde(flatten)]
    pub run: Run<'a>,
    /// Each flavour's package version, or why it was unavailable.
    pub flavours: &'a [Probe],
    /// One object per item.
    pub scenarios: &'a [BindingResult],
    /// The targets of the issue.
    pub targets: &'a [TargetCheck],
}

/// Writes `bindings.json` and `bindings.svg` into `dir`.
pub fn write_files(
    dir: &Path,
    profile: &str,
    probes: &[Probe],
    results: &[BindingResult],
    checks: &[TargetCheck],
    load_at_start: Option<String>,
) -> Result<Written, String> {
    let written = Written::in_dir(dir, "bindings")?;
    let run = Run::ending_now(profile, &NOTES, load_at_start);
    let title = format!(
        "statestore bindings: SET throughput and median latency ({})",
        run.conditions()
    );
    let document = Document {
        run,
        flavours: probes,
        scenarios: results,
        targets: checks,
    };
    json::write(&written.json, &document)?;
    super::chart::write(&written.svg, results, &title)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(flavour: Flavour, in_flight: usize, ops_per_sec: f64, p50_us: f64) -> BindingResult {
        let item = Item {
            flavour,
            test: Test::Throughput {
                op: Op::Set,
                value_size: 16,
                in_flight,
                broker: Broker::Embedded,
            },
        };
        BindingResult::from_output(
            item,
            DriverOutput {
                ops: Some(100),
                errors: Some(0),
                ops_per_sec: Some(ops_per_sec),
                p50_us: Some(p50_us),
                ..DriverOutput::default()
            },
        )
    }

    #[test]
    fn flavours_are_compared_with_rust_and_their_baseline_in_the_same_cell() {
        let mut results = vec![
            result(Flavour::RustAsync, 64, 1000.0, 100.0),
            result(Flavour::RustBlocking, 64, 800.0, 120.0),
            result(Flavour::PythonPaho, 64, 100.0, 900.0),
            result(Flavour::PythonAsync, 64, 900.0, 110.0),
            result(Flavour::PythonSync, 64, 400.0, 200.0),
            result(Flavour::PythonAsync, 1, 10.0, 90.0),
        ];
        compare(&mut results);
        assert_eq!(results[0].ratio_to_rust_async, None);
        assert_eq!(results[3].ratio_to_rust_async, Some(0.9));
        assert_eq!(results[3].ratio_to_baseline, Some(9.0));
        assert_eq!(results[3].p50_delta_baseline_us, Some(-790.0));
        assert_eq!(results[4].ratio_to_rust, Some(0.5));
        assert_eq!(results[4].p50_delta_rust_us, Some(80.0));
        assert_eq!(
            results[5].ratio_to_rust_async, None,
            "no Rust figure at 1 in flight"
        );
        let checks = crate::bindings::targets::evaluate(&results);
        assert_eq!(checks[0].met, Some(true));
        assert_eq!(checks[4].met, Some(true));
        assert_eq!(checks[1].met, None, "no C figures");
        let table = crate::bindings::markdown::render(&[], &results);
        assert!(
            table.contains("| embedded | SET | 16B | 64 | 1000 (100) |"),
            "{table}"
        );
    }

    #[test]
    fn unavailable_is_not_a_failure() {
        let item = Item {
            flavour: Flavour::NodeSync,
            test: Test::Boundary,
        };
        let r = BindingResult::unavailable(item, "no package".into());
        assert!(!r.ok() && !r.failed_run());
        let empty = BindingResult::from_output(item, DriverOutput::default());
        assert!(empty.failed_run());
    }
}
