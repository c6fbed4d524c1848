//! `statestore-bench bindings`: every flavour of the client (Rust async and blocking, C async
//! and blocking, Python async and sync, Node Promise and Sync) and the by-hand baselines
//! (the protocol spoken over paho-mqtt and mqtt.js) on the same servers, in one run.
//!
//! Each measurement runs in fresh processes, as the main harness does: Mosquitto when the
//! cell needs it, the service side ([`crate::service`]) and a *driver*: a small program in the
//! flavour's own language (`bench/drivers/py_driver.py`, `node_driver.mjs`, `c_driver.c`; the
//! Rust flavours use this binary's hidden `rust-driver` command) that prints one line
//! `RESULT <json>`. A flavour whose package is not installed is reported as unavailable, with
//! the reason, instead of failing the run.

pub mod chart;
pub mod markdown;
pub mod report;
pub mod result;
pub mod runner;
pub mod rust_driver;
pub mod targets;

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::scenario::{size_label, Broker, Op};

/// One way of using the state store from one language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flavour {
    /// `statestore::Client`, N tasks.
    RustAsync,
    /// `statestore::blocking::Client`, N threads.
    RustBlocking,
    /// `statestore_set_async`/`statestore_get_async`, N calls in flight.
    CAsync,
    /// `statestore_set`/`statestore_get`, N threads.
    CBlocking,
    /// `statestore_set_async`/`statestore_get_async` on a client whose completions run from the
    /// driver's own poll loop (`STATESTORE_CALLBACKS_LOOP`, `statestore_dispatch`), N in flight.
    CDispatch,
    /// `statestore.AsyncClient`, N asyncio tasks.
    PythonAsync,
    /// `statestore.Client`, N threads.
    PythonSync,
    /// Node `Client` Promises, N in flight.
    NodePromise,
    /// Node `...Sync` twins: one JS thread per request in flight (worker_threads, each with
    /// its own client: a client cannot be shared between JS environments).
    NodeSync,
    /// By hand over paho-mqtt (the Python baseline).
    PythonPaho,
    /// By hand over mqtt.js (the Node baseline).
    NodeMqttjs,
}

/// The language of a flavour, which decides its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// This binary's `rust-driver` command.
    Rust,
    /// `bench/drivers/c_driver.c`, compiled against the installed library.
    C,
    /// `bench/drivers/py_driver.py`.
    Python,
    /// `bench/drivers/node_driver.mjs`.
    Node,
}

impl Flavour {
    /// Every flavour, in table order.
    pub const ALL: [Flavour; 11] = [
        Flavour::RustAsync,
        Flavour::RustBlocking,
        Flavour::CAsync,
        Flavour::CDispatch,
        Flavour::CBlocking,
        Flavour::PythonAsync,
        Flavour::PythonSync,
        Flavour::PythonPaho,
        Flavour::NodePromise,
        Flavour::NodeSync,
        Flavour::NodeMqttjs,
    ];

    /// `python-async`, ...
    pub fn label(self) -> &'static str {
        match self {
            Flavour::RustAsync => "rust-async",
            Flavour::RustBlocking => "rust-blocking",
            Flavour::CAsync => "c-async",
            Flavour::CBlocking => "c-blocking",
            Flavour::CDispatch => "c-dispatch",
            Flavour::PythonAsync => "python-async",
            Flavour::PythonSync => "python-sync",
            Flavour::NodePromise => "node-promise",
            Flavour::NodeSync => "node-sync",
            Flavour::PythonPaho => "python-paho",
            Flavour::NodeMqttjs => "node-mqttjs",
        }
    }

    /// Parses [`Flavour::label`].
    pub fn from_label(label: &str) -> Option<Flavour> {
        Flavour::ALL.into_iter().find(|f| f.label() == label)
    }

    /// Which driver runs it.
    pub fn language(self) -> Language {
        match self {
            Flavour::RustAsync | Flavour::RustBlocking => Language::Rust,
            Flavour::CAsync | Flavour::CBlocking | Flavour::CDispatch => Language::C,
            Flavour::PythonAsync | Flavour::PythonSync | Flavour::PythonPaho => Language::Python,
            Flavour::NodePromise | Flavour::NodeSync | Flavour::NodeMqttjs => Language::Node,
        }
    }

    /// The driver's `--flavour` argument.
    pub fn driver_name(self) -> &'static str {
        match self {
            Flavour::RustAsync | Flavour::CAsync | Flavour::PythonAsync => "async",
            Flavour::RustBlocking => "blocking",
            Flavour::CBlocking | Flavour::PythonSync | Flavour::NodeSync => "sync",
            Flavour::NodePromise => "promise",
            Flavour::CDispatch => "dispatch",
            Flavour::PythonPaho => "paho",
            Flavour::NodeMqttjs => "mqttjs",
        }
    }

    /// Whether it is a by-hand baseline rather than one of ours.
    pub fn is_baseline(self) -> bool {
        matches!(self, Flavour::PythonPaho | Flavour::NodeMqttjs)
    }

    /// Whether calls block their thread (threads make the requests in flight).
    pub fn is_blocking(self) -> bool {
        matches!(
            self,
            Flavour::RustBlocking | Flavour::CBlocking | Flavour::PythonSync | Flavour::NodeSync
        )
    }

    /// The by-hand baseline of the same language.
    pub fn baseline(self) -> Option<Flavour> {
        match self {
            Flavour::PythonAsync | Flavour::PythonSync => Some(Flavour::PythonPaho),
            Flavour::NodePromise | Flavour::NodeSync => Some(Flavour::NodeMqttjs),
            _ => None,
        }
    }

    /// The Rust client of the same kind (blocking or async) this flavour is compared with.
    pub fn rust_peer(self) -> Option<Flavour> {
        match self {
            Flavour::RustAsync | Flavour::RustBlocking => None,
            f if f.is_baseline() => Some(Flavour::RustAsync),
            f if f.is_blocking() => Some(Flavour::RustBlocking),
            _ => Some(Flavour::RustAsync),
        }
    }

    /// Why this flavour cannot run `test` at all (the cell is reported, not run).
    pub fn unsupported(self, test: &Test) -> Option<&'static str> {
        match (self, test) {
            (f, Test::Boundary | Test::Memory | Test::Batch { .. } | Test::Idle)
                if f.is_baseline() =>
            {
                Some("not applicable to a by-hand baseline")
            }
            _ => None,
        }
    }

    /// Requests in flight of this flavour's memory run.
    pub fn memory_in_flight(self) -> usize {
        match self {
            Flavour::NodeSync => 1,
            f if f.is_blocking() => 16,
            _ => 64,
        }
    }
}

impl fmt::Display for Flavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What one measurement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Test {
    /// SET or GET at a size and depth, on a broker.
    Throughput {
        /// SET or GET.
        op: Op,
        /// Value size, bytes.
        value_size: usize,
        /// Requests in flight.
        in_flight: usize,
        /// The broker.
        broker: Broker,
    },
    /// Calls that fail validation before any I/O (an empty key), ns per call.
    Boundary,
    /// Many operations (SET and GET alternating; SET only for Rust) while resident memory is
    /// sampled.
    Memory,
    /// The same keys written or read twice in one driver: a loop of awaited single calls, then
    /// one batch call (`get_many`, `set_many`); the figure is the ratio of the two times.
    Batch {
        /// SET (`set_many`) or GET (`get_many`).
        op: Op,
        /// Added to each direction of every byte between client and broker by a delaying
        /// proxy, milliseconds (0: plain loopback).
        delay_ms: u64,
    },
    /// A connected client with an open observation, idle for the profile's idle window: the
    /// CPU and context switches of the driver process over it.
    Idle,
}

impl Test {
    /// The test's part of a result's name.
    pub fn label(&self) -> String {
        match self {
            Test::Throughput {
                op,
                value_size,
                in_flight,
                broker,
            } => format!(
                "{}/{}/{in_flight}/{}",
                op.label(),
                size_label(*value_size),
                broker.label()
            ),
            Test::Boundary => "boundary".to_owned(),
            Test::Memory => "memory".to_owned(),
            Test::Batch { op, delay_ms } => format!("batch/{}/{delay_ms}ms", op.label()),
            Test::Idle => "idle".to_owned(),
        }
    }
}

/// One flavour doing one test: one driver process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Item {
    /// Who.
    pub flavour: Flavour,
    /// What.
    pub test: Test,
}

impl Item {
    /// `python-async/set/16B/64/embedded`, `c-async/boundary`, `node-promise/memory`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.flavour.label(), self.test.label())
    }
}

/// How long and how wide a bindings run is.
#[derive(Debug, Clone)]
pub struct BindingsProfile {
    /// `full`, `quick` or `smoke`.
    pub name: &'static str,
    /// Warm-up of a throughput test.
    pub warmup: Duration,
    /// Measuring window of a throughput test.
    pub measure: Duration,
    /// Counted operations instead of a window (smoke).
    pub op_cap: Option<u64>,
    /// Value sizes.
    pub value_sizes: Vec<usize>,
    /// Requests in flight.
    pub in_flight: Vec<usize>,
    /// Brokers.
    pub brokers: Vec<Broker>,
    /// Calls of the boundary test.
    pub boundary_calls: u64,
    /// Operations of the memory test.
    pub memory_ops: u64,
    /// Keys of the batch test.
    pub batch_keys: u64,
    /// The batch tests: op and one-way delay in milliseconds (0: plain loopback).
    pub batches: Vec<(Op, u64)>,
    /// Driver runs per batch test (each one its own process: a warm-up pass when the profile
    /// has a warm-up, then one measured loop and batch); the result is their median.
    pub batch_runs: usize,
    /// How long the idle test's client does nothing, measured.
    pub idle: Duration,
    /// How long it idles first, measured apart: the language runtime's own work after
    /// start-up (V8's memory reducer runs a few seconds after a program stops allocating)
    /// settles there.
    pub idle_settle: Duration,
}

impl BindingsProfile {
    /// Every cell of the issue: 16 B and 1 KiB, 1/16/64 in flight, both brokers, 1 M-op
    /// memory runs.
    pub fn full() -> Self {
        Self {
            name: "full",
            warmup: Duration::from_millis(500),
            measure: Duration::from_secs(2),
            op_cap: None,
            value_sizes: vec![16, 1024],
            in_flight: vec![1, 16, 64],
            brokers: vec![Broker::Embedded, Broker::Mosquitto],
            boundary_calls: 200_000,
            memory_ops: 1_000_000,
            batch_keys: 1000,
            batches: vec![(Op::Get, 0), (Op::Set, 0), (Op::Get, 1), (Op::Set, 1)],
            // One 1 000-key batch lasts 12-25 ms on loopback: a single one swung a cell's
            // ratio by a third between runs.
            batch_runs: 5,
            idle: Duration::from_secs(20),
            idle_settle: Duration::from_secs(10),
        }
    }

    /// The depths the targets use (1 and 64), 0.2 s windows, 20 000-op memory runs, 5 s
    /// idle runs (after 2 s settling).
    pub fn quick() -> Self {
        Self {
            name: "quick",
            warmup: Duration::from_millis(100),
            measure: Duration::from_millis(200),
            in_flight: vec![1, 64],
            boundary_calls: 20_000,
            memory_ops: 20_000,
            batch_runs: 3,
            idle: Duration::from_secs(5),
            idle_settle: Duration::from_secs(2),
            ..Self::full()
        }
    }

    /// A few operations of everything: checks that every driver runs and counts.
    pub fn smoke() -> Self {
        Self {
            name: "smoke",
            warmup: Duration::ZERO,
            measure: Duration::from_secs(120),
            op_cap: Some(20),
            value_sizes: vec![16],
            in_flight: vec![1, 4],
            brokers: vec![Broker::Embedded, Broker::Mosquitto],
            boundary_calls: 1000,
            memory_ops: 400,
            // Each op once and each delay once: every flavour's batch calls run, in seconds.
            batch_keys: 20,
            batches: vec![(Op::Get, 0), (Op::Set, 1)],
            batch_runs: 1,
            idle: Duration::from_millis(500),
            idle_settle: Duration::ZERO,
        }
    }

    /// The profile called `name`.
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "full" => Some(Self::full()),
            "quick" => Some(Self::quick()),
            "smoke" => Some(Self::smoke()),
            _ => None,
        }
    }

    /// Every item of the run, grouped by cell so that the flavours of one cell are measured
    /// back to back; boundary, memory, batch and idle tests last.
    pub fn items(&self, flavours: &[Flavour]) -> Vec<Item> {
        let mut items = Vec::new();
        for &broker in &self.brokers {
            for &value_size in &self.value_sizes {
                for &in_flight in &self.in_flight {
                    for op in [Op::Set, Op::Get] {
                        for &flavour in flavours {
                            items.push(Item {
                                flavour,
                                test: Test::Throughput {
                                    op,
                                    value_size,
                                    in_flight,
                                    broker,
                                },
                            });
                        }
                    }
                }
            }
        }
        let batches = self
            .batches
            .iter()
            .map(|&(op, delay_ms)| Test::Batch { op, delay_ms });
        let tests = [Test::Boundary, Test::Memory].into_iter().chain(batches);
        for test in tests.chain([Test::Idle]) {
            for &flavour in flavours {
                items.push(Item { flavour, test });
            }
        }
        items
    }

    /// The longest one driver may take, start-up included.
    pub fn deadline(&self, test: &Test) -> Duration {
        let grace = Duration::from_secs(40);
        match test {
            // Even a slow flavour on a busy machine does 2000 operations per second.
            Test::Memory => Duration::from_millis(self.memory_ops / 2) + grace,
            Test::Boundary => Duration::from_millis(self.boundary_calls / 10) + grace,
            // The loop pays a round trip per key; at 2000 round trips per second plus the
            // delay both ways, a warm-up and a measured pass.
            Test::Batch { delay_ms, .. } => {
                Duration::from_millis(2 * self.batch_keys * (1 + 2 * delay_ms)) + grace
            }
            Test::Throughput { .. } => {
                self.warmup + self.measure.min(Duration::from_secs(60)) + grace
            }
            Test::Idle => self.idle_settle + self.idle + grace,
        }
    }
}

/// The arguments every driver takes.
#[derive(Debug, Clone)]
pub struct DriverArgs {
    /// `probe`, `throughput`, `boundary`, `memory`, `batch` or `idle`.
    pub test: &'static str,
    /// `set`, `get` or `mix`.
    pub op: &'static str,
    /// Value size.
    pub size: usize,
    /// Requests in flight.
    pub inflight: usize,
    /// Warm-up, seconds.
    pub warmup: f64,
    /// Measuring window, seconds.
    pub seconds: f64,
    /// Operation cap (calls of the boundary test, keys of the batch test).
    pub ops: Option<u64>,
    /// The broker.
    pub host: String,
    /// The broker's port.
    pub port: u16,
    /// The service-side process, whose CPU the driver reads.
    pub service_pid: Option<u32>,
}

impl DriverArgs {
    /// The arguments of `item` under `profile` against the broker at `host:port`.
    pub fn new(profile: &BindingsProfile, item: &Item, host: String, port: u16) -> Self {
        let mut args = DriverArgs {
            test: "throughput",
            op: "set",
            size: 16,
            inflight: 1,
            warmup: profile.warmup.as_secs_f64(),
            seconds: profile.measure.as_secs_f64(),
            ops: profile.op_cap,
            host,
            port,
            service_pid: None,
        };
        match item.test {
            Test::Throughput {
                op,
                value_size,
                in_flight,
                ..
            } => {
                args.op = op.label();
                args.size = value_size;
                args.inflight = in_flight;
            }
            Test::Boundary => {
                args.test = "boundary";
                args.ops = Some(profile.boundary_calls);
            }
            Test::Memory => {
                args.test = "memory";
                args.op = "mix";
                args.inflight = item.flavour.memory_in_flight();
                args.ops = Some(profile.memory_ops);
                args.seconds = 24.0 * 3600.0;
            }
            Test::Batch { op, .. } => {
                args.test = "batch";
                args.op = op.label();
                args.ops = Some(profile.batch_keys);
            }
            Test::Idle => {
                args.test = "idle";
                args.warmup = profile.idle_settle.as_secs_f64();
                args.seconds = profile.idle.as_secs_f64();
            }
        }
        args
    }

    /// As command-line arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = vec![
            "--test".to_owned(),
            self.test.to_owned(),
            "--host".to_owned(),
            self.host.clone(),
            "--port".to_owned(),
            self.port.to_string(),
            "--op".to_owned(),
            self.op.to_owned(),
            "--size".to_owned(),
            self.size.to_string(),
            "--inflight".to_owned(),
            self.inflight.to_string(),
            "--warmup".to_owned(),
            self.warmup.to_string(),
            "--seconds".to_owned(),
            self.seconds.to_string(),
        ];
        if let Some(ops) = self.ops {
            out.extend(["--ops".to_owned(), ops.to_string()]);
        }
        if let Some(pid) = self.service_pid {
            out.extend(["--service-pid".to_owned(), pid.to_string()]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flavour_has_a_unique_label_and_a_comparison() {
        for f in Flavour::ALL {
            assert_eq!(Flavour::from_label(f.label()), Some(f));
            assert_eq!(f.rust_peer().is_none(), f.language() == Language::Rust);
        }
        assert_eq!(Flavour::PythonAsync.baseline(), Some(Flavour::PythonPaho));
        assert_eq!(Flavour::NodeSync.rust_peer(), Some(Flavour::RustBlocking));
    }

    #[test]
    fn quick_covers_the_target_cells_of_every_flavour() {
        let items = BindingsProfile::quick().items(&Flavour::ALL);
        // 2 brokers x 2 sizes x 2 depths x 2 ops x 11 flavours + boundary + memory + batch
        // (2 ops x 2 delays) + idle.
        assert_eq!(items.len(), 2 * 2 * 2 * 2 * 11 + 2 * 11 + 4 * 11 + 11);
        let names: std::collections::BTreeSet<String> = items.iter().map(Item::name).collect();
        assert_eq!(names.len(), items.len());
        assert!(names.contains("python-async/set/16B/64/embedded"));
        assert!(names.contains("c-blocking/get/1KiB/1/mosquitto"));
        assert!(names.contains("node-promise/memory"));
        assert!(names.contains("c-dispatch/idle"));
        assert!(names.contains("c-dispatch/set/16B/1/embedded"));
    }

    #[test]
    fn every_profile_measures_both_batch_ops_with_and_without_delay_in_every_flavour() {
        for profile in [
            BindingsProfile::full(),
            BindingsProfile::quick(),
            BindingsProfile::smoke(),
        ] {
            let items = profile.items(&Flavour::ALL);
            for flavour in Flavour::ALL.into_iter().filter(|f| !f.is_baseline()) {
                let batches: Vec<(Op, u64)> = items
                    .iter()
                    .filter(|i| i.flavour == flavour)
                    .filter_map(|i| match i.test {
                        Test::Batch { op, delay_ms } => Some((op, delay_ms)),
                        _ => None,
                    })
                    .collect();
                for op in [Op::Get, Op::Set] {
                    assert!(
                        batches.iter().any(|b| b.0 == op),
                        "{}: {flavour} no {op:?}",
                        profile.name
                    );
                }
                for delay in [0, 1] {
                    assert!(
                        batches.iter().any(|b| b.1 == delay),
                        "{}: {flavour} no {delay} ms",
                        profile.name
                    );
                }
            }
        }
    }
}
