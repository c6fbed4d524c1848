//! What a bindings run produces: one [`BindingResult`] per item, compared with the Rust
//! clients and the by-hand baselines of the same cell, written as `bindings.json` and
//! `bindings.svg` (the targets are [`super::targets`]'s, the Markdown tables
//! [`super::markdown`]'s).

use std::path::Path;

use serde::Serialize;

use super::result::{BindingResult, Probe};
use super::{Flavour, Item, Test};
use crate::report::json::{self, Run};
use crate::report::reference::References;
use crate::report::targets::TargetCheck;
use crate::report::Written;

/// Fills the ratios of every throughput result against the Rust clients and the baselines of
/// its cell.
pub fn compare(results: &mut [BindingResult]) {
    let references = References::new(
        results
            .iter()
            .filter(|r| r.ok() && matches!(r.item().test, Test::Throughput { .. }))
            .map(|r| (r.item(), &r.figures)),
    );
    let cell = |flavour: Option<Flavour>, test: Test| flavour.map(|flavour| Item { flavour, test });
    for r in results.iter_mut().filter(|r| r.ok()) {
        let item = r.item();
        let test = item.test;
        if !matches!(test, Test::Throughput { .. }) {
            continue;
        }
        if item.flavour != Flavour::RustAsync {
            if let Some(c) = references.compare(cell(Some(Flavour::RustAsync), test), &r.figures) {
                r.ratio_to_rust_async = Some(c.ratio);
            }
        }
        if let Some(c) = references.compare(cell(item.flavour.rust_peer(), test), &r.figures) {
            r.ratio_to_rust = Some(c.ratio);
            r.p50_delta_rust_us = Some(c.p50_delta_us);
        }
        if let Some(c) = references.compare(cell(item.flavour.baseline(), test), &r.figures) {
            r.ratio_to_baseline = Some(c.ratio);
            r.p50_delta_baseline_us = Some(c.p50_delta_us);
        }
    }
}

/// What the figures include, written into bindings.json.
pub const NOTES: [&str; 11] = [
    "every item runs in fresh processes: Mosquitto (when the cell uses it), the service side (statestore-bench serve: statestore-server with its embedded broker, or attached to Mosquitto; allocating with mimalloc, as the server's binaries do) and the flavour's driver (the Rust drivers on the system's allocator, as a program gets by default)",
    "drivers: rust-* = statestore-bench rust-driver (the main harness's client drivers); c-* = bench/drivers/c_driver.c linked against the installed libstatestore; python-* = bench/drivers/py_driver.py; node-* = bench/drivers/node_driver.mjs",
    "in flight: tasks/Promises/async calls for the async flavours, threads sharing one client for the blocking ones; node-sync: Sync calls block their JS thread, so N in flight are N worker_threads, each with its own client and connection",
    "by-hand baselines: the state store protocol over paho-mqtt (python-paho) and mqtt.js (node-mqttjs), MQTT 5, TCP_NODELAY, the client's envelope (QoS 1, response topic, 16-byte correlation data, __srcId, __ts HLC, __protVer, expiry, content type); each answer issues the slot's next request from the library's message callback, the fastest way to drive those libraries",
    "ops_per_sec: measured operations / time from the end of the warm-up to the last measured answer; p50/p99: per-operation latency, call to checked answer, in the driver's language and clock",
    "cpu_us_per_op: CPU of the driver process / operations; service_cpu_us_per_op: CPU of the service process (clock ticks), Mosquitto's own CPU excluded",
    "ctx_switches_per_op: context switches (voluntary + involuntary, every thread) of the driver process / operations, over the measuring window",
    "ratio_to_rust_async / ratio_to_rust / p50_delta_rust_us: against the Rust async client / the Rust client of the same kind (async or blocking) in the same cell of the same run; ratio_to_baseline / p50_delta_baseline_us: against the by-hand baseline of the same language",
    "batch: the keys as a loop of awaited single calls, then as one batch call, in one driver process (after a warm-up pass when the profile has a warm-up); the driver runs the profile's batch_runs times against the same server (full 5, quick 3, smoke 1): loop_s and batch_s are the runs' medians, batch_speedup the median of the runs' loop_s / batch_s, batch_runs every run's pair",
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
    use crate::bindings::result::DriverOutput;
    use crate::scenario::{Broker, Op};

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
}
