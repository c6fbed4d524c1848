//! What one item of a bindings run produced: the driver's printed figures
//! ([`DriverOutput`]), turned into a [`BindingResult`]; and what probing a flavour found
//! ([`Probe`]).

use serde::{Deserialize, Serialize};

use super::{Flavour, Item, Test};
use crate::drivers::memory::MemoryTrace;
use crate::figures::{Figures, Outcome};
use crate::scenario::{Broker, Op};

/// The figures of one item, as written to `bindings.json`: the fields of `latest.json`'s
/// scenarios, plus the flavour, the boundary, memory, batch and idle figures and the ratios.
#[derive(Debug, Clone, Serialize)]
pub struct BindingResult {
    /// `flavour/op/size/in_flight/broker`, `flavour/boundary`, `flavour/memory`,
    /// `flavour/batch/op/delay`, `flavour/idle`.
    pub name: String,
    /// Who.
    pub flavour: Flavour,
    /// `throughput`, `boundary`, `memory`, `batch` or `idle`.
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
    /// Batch test: the delay added each way between client and broker, milliseconds.
    pub batch_delay_ms: Option<u64>,
    /// Batch test: seconds for the keys as a loop of awaited single calls.
    pub loop_s: Option<f64>,
    /// Batch test: seconds for the same keys as one batch call.
    pub batch_s: Option<f64>,
    /// Batch test: how many times faster the batch is than the loop, the median of the runs'
    /// `loop_s / batch_s` (with one run, exactly that).
    pub batch_speedup: Option<f64>,
    /// Batch test: `[loop_s, batch_s]` of each driver run; `loop_s` and `batch_s` above are
    /// their medians.
    pub batch_runs: Option<Vec<[f64; 2]>>,
    /// Idle test: CPU of the driver process over its idle window (`elapsed_s`), ms.
    pub idle_cpu_ms: Option<f64>,
    /// Idle test: context switches of the driver process over its idle window.
    pub idle_ctx_switches: Option<u64>,
    /// Idle test: CPU of the driver process while it settled before the window, ms.
    pub idle_settle_cpu_ms: Option<f64>,
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
            Test::Batch { op, .. } => ("batch", Some(op), None, None, Some(Broker::Embedded)),
            Test::Idle => ("idle", None, None, None, Some(Broker::Embedded)),
        };
        let batch_delay_ms = match item.test {
            Test::Batch { delay_ms, .. } => Some(delay_ms),
            _ => None,
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
            batch_delay_ms,
            loop_s: None,
            batch_s: None,
            batch_speedup: None,
            batch_runs: None,
            idle_cpu_ms: None,
            idle_ctx_switches: None,
            idle_settle_cpu_ms: None,
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
            ctx_switches_per_op: out.ctx_switches_per_op,
            service_cpu_us_per_op: out.service_cpu_us_per_op,
            peak_rss_mb: out.peak_rss_mb,
            service_peak_rss_mb: None,
        };
        r.ns_per_call = out.ns_per_call;
        r.memory = out.memory;
        r.loop_s = out.loop_s;
        r.batch_s = out.batch_s;
        r.batch_speedup = match (out.loop_s, out.batch_s) {
            (Some(looped), Some(batch)) if batch > 0.0 => Some(looped / batch),
            _ => None,
        };
        if let (Some(looped), Some(batch)) = (out.loop_s, out.batch_s) {
            r.batch_runs = Some(vec![[looped, batch]]);
        }
        r.idle_cpu_ms = out.idle_cpu_ms;
        r.idle_ctx_switches = out.idle_ctx_switches;
        r.idle_settle_cpu_ms = out.settle_cpu_ms;
        let error = &mut r.outcome.error;
        if r.unavailable.is_none() && error.is_none() && item.test == Test::Idle {
            if r.idle_cpu_ms.is_none() || r.figures.elapsed_s <= 0.0 {
                *error = Some("the idle run has no CPU time or window".to_owned());
            }
            // Its one operation is the observation it opened.
            r.outcome.ops = r.outcome.ops.max(1);
            return r;
        }
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
        if r.unavailable.is_none()
            && error.is_none()
            && matches!(item.test, Test::Batch { .. })
            && r.batch_speedup.is_none()
        {
            *error = Some("the batch run has no loop and batch times".to_owned());
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

    /// Idle test: CPU per 20 s idle, ms (the target's unit, whatever the profile's window).
    pub fn idle_cpu_ms_per_20s(&self) -> Option<f64> {
        let window = self.figures.elapsed_s;
        self.idle_cpu_ms
            .filter(|_| window > 0.0)
            .map(|ms| ms * 20.0 / window)
    }
}

/// What a driver prints after `RESULT `.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DriverOutput {
    /// Probe: the flavour can run.
    pub ok: Option<bool>,
    /// Probe: the package's version.
    pub version: Option<String>,
    /// Why the flavour cannot run here.
    pub unavailable: Option<String>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Measured operations (calls of the boundary test).
    pub ops: Option<u64>,
    /// Failed operations.
    pub errors: Option<u64>,
    /// Measuring time.
    pub elapsed_s: Option<f64>,
    /// Throughput.
    pub ops_per_sec: Option<f64>,
    /// Median latency, µs.
    pub p50_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
    /// Largest latency, µs.
    pub max_us: Option<f64>,
    /// CPU of the driver process per operation, µs.
    pub cpu_us_per_op: Option<f64>,
    /// CPU of the service process per operation, µs.
    pub service_cpu_us_per_op: Option<f64>,
    /// Context switches of the driver process per operation.
    pub ctx_switches_per_op: Option<f64>,
    /// Peak resident memory of the driver, MiB.
    pub peak_rss_mb: Option<f64>,
    /// Boundary test: ns per failing call.
    pub ns_per_call: Option<f64>,
    /// Memory test: the trace.
    pub memory: Option<MemoryTrace>,
    /// Batch test: seconds of the loop of single calls.
    pub loop_s: Option<f64>,
    /// Batch test: seconds of the batch call.
    pub batch_s: Option<f64>,
    /// Idle test: CPU over the idle window, ms.
    pub idle_cpu_ms: Option<f64>,
    /// Idle test: context switches over the idle window.
    pub idle_ctx_switches: Option<u64>,
    /// Idle test: CPU while settling before the window, ms.
    pub settle_cpu_ms: Option<f64>,
}

impl BindingResult {
    /// Folds the batch runs `runs` (`[loop_s, batch_s]` each, this result's among them) into
    /// this result: `loop_s` and `batch_s` become their medians, `batch_speedup` the median
    /// of their ratios (each run's loop and batch ran back to back, under the same load).
    pub fn batch_medians(&mut self, runs: Vec<[f64; 2]>) {
        if runs.is_empty() {
            return;
        }
        let column = |i: usize| median(runs.iter().map(|run| run[i]).collect());
        self.loop_s = Some(column(0));
        self.batch_s = Some(column(1));
        self.batch_speedup = Some(median(
            runs.iter()
                .filter(|run| run[1] > 0.0)
                .map(|run| run[0] / run[1])
                .collect(),
        ));
        self.batch_runs = Some(runs);
    }
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The outcome of probing one flavour.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// The flavour.
    pub flavour: Flavour,
    /// The package's version when available.
    pub version: Option<String>,
    /// Why it is unavailable.
    pub unavailable: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_batch_result_needs_both_times_and_reports_their_ratio() {
        let item = Item {
            flavour: Flavour::PythonAsync,
            test: Test::Batch {
                op: Op::Get,
                delay_ms: 1,
            },
        };
        let counted = DriverOutput {
            ops: Some(1000),
            errors: Some(0),
            ..DriverOutput::default()
        };
        assert!(BindingResult::from_output(item, counted.clone()).failed_run());
        let timed = DriverOutput {
            loop_s: Some(2.0),
            batch_s: Some(0.1),
            ..counted
        };
        let r = BindingResult::from_output(item, timed);
        assert!(r.ok(), "{:?}", r.outcome.error);
        assert_eq!(r.kind, "batch");
        assert_eq!(r.batch_delay_ms, Some(1));
        assert!((r.batch_speedup.unwrap_or(0.0) - 20.0).abs() < 1e-9);
        assert_eq!(r.batch_runs, Some(vec![[2.0, 0.1]]));
    }

    #[test]
    fn batch_runs_fold_into_medians_and_the_median_ratio() {
        let item = Item {
            flavour: Flavour::CAsync,
            test: Test::Batch {
                op: Op::Set,
                delay_ms: 0,
            },
        };
        let mut r = BindingResult::unavailable(item, String::new());
        // One slow batch (the outlier a single run can be) does not set the figure.
        let runs = vec![
            [0.20, 0.016],
            [0.18, 0.015],
            [0.19, 0.030],
            [0.21, 0.017],
            [0.17, 0.014],
        ];
        r.batch_medians(runs.clone());
        assert_eq!(r.loop_s, Some(0.19));
        assert_eq!(r.batch_s, Some(0.016));
        let speedup = r.batch_speedup.unwrap_or(0.0);
        // Ratios 12.5, 12.0, 6.3, 12.4, 12.1: the median is the last run's.
        assert!((speedup - 0.17 / 0.014).abs() < 1e-9, "{speedup}");
        assert_eq!(r.batch_runs, Some(runs));
        assert_eq!(super::median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(super::median(Vec::new()), 0.0);
    }

    #[test]
    fn an_idle_result_needs_its_cpu_and_window_and_is_scaled_to_20_seconds() {
        let item = Item {
            flavour: Flavour::NodePromise,
            test: Test::Idle,
        };
        assert!(BindingResult::from_output(item, DriverOutput::default()).failed_run());
        let measured = DriverOutput {
            elapsed_s: Some(5.0),
            idle_cpu_ms: Some(3.0),
            idle_ctx_switches: Some(40),
            ..DriverOutput::default()
        };
        let r = BindingResult::from_output(item, measured);
        assert!(r.ok(), "{:?}", r.outcome.error);
        assert_eq!(r.kind, "idle");
        assert!((r.idle_cpu_ms_per_20s().unwrap_or(0.0) - 12.0).abs() < 1e-9);
    }
}
