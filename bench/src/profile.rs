//! How long and how wide a run is: the full profile, `--quick`, and the smoke profile of the
//! test suite.

use std::time::Duration;

use crate::scenario::{Broker, Kind, Scenario};

/// Value sizes of the MQTT scenarios.
pub const VALUE_SIZES: [usize; 3] = [16, 1024, 64 * 1024];
/// Value sizes of the engine scenarios (the engine is cheap enough for one more).
pub const ENGINE_VALUE_SIZES: [usize; 4] = [16, 64, 1024, 64 * 1024];
/// Requests in flight of the MQTT scenarios.
pub const IN_FLIGHT: [usize; 4] = [1, 16, 64, 256];

/// The long-run memory scenario: the async client doing SETs of this size at this depth.
pub const MEMORY_VALUE_SIZE: usize = 1024;
/// See [`MEMORY_VALUE_SIZE`].
pub const MEMORY_IN_FLIGHT: usize = 64;

/// How long each phase of a scenario lasts and which cells of the matrix run.
#[derive(Debug, Clone)]
pub struct Profile {
    /// `full`, `quick` or `smoke`.
    pub name: &'static str,
    /// Warm-up before measuring (not counted).
    pub warmup: Duration,
    /// Measuring time of an MQTT scenario.
    pub measure: Duration,
    /// Stop measuring after this many operations (the smoke profile counts, not times).
    pub op_cap: Option<u64>,
    /// Measuring time of an engine scenario (per pass).
    pub engine_measure: Duration,
    /// Engine operations per pass when counting instead of timing.
    pub engine_op_cap: Option<u64>,
    /// Value sizes of the MQTT scenarios.
    pub value_sizes: Vec<usize>,
    /// Value sizes of the engine scenarios.
    pub engine_value_sizes: Vec<usize>,
    /// Requests in flight.
    pub in_flight: Vec<usize>,
    /// Brokers.
    pub brokers: Vec<Broker>,
    /// Skip the 64 KiB x 256 in flight cells (16 MiB in flight per scenario).
    pub skip_largest: bool,
    /// Operations of the memory scenario; `None` skips it.
    pub memory_ops: Option<u64>,
    /// Longest a scenario may take beyond its planned time before it is failed.
    pub grace: Duration,
}

impl Profile {
    /// Stable figures: every cell, a 1 million operation memory run.
    pub fn full() -> Self {
        Self {
            name: "full",
            warmup: Duration::from_secs(1),
            measure: Duration::from_secs(3),
            op_cap: None,
            engine_measure: Duration::from_secs(2),
            engine_op_cap: None,
            value_sizes: VALUE_SIZES.to_vec(),
            engine_value_sizes: ENGINE_VALUE_SIZES.to_vec(),
            in_flight: IN_FLIGHT.to_vec(),
            brokers: vec![Broker::Embedded, Broker::Mosquitto],
            skip_largest: false,
            memory_ops: Some(1_000_000),
            grace: Duration::from_secs(60),
        }
    }

    /// The whole matrix in under two minutes: short phases, no 64 KiB x 256, no memory run.
    pub fn quick() -> Self {
        Self {
            name: "quick",
            warmup: Duration::from_millis(100),
            measure: Duration::from_millis(300),
            engine_measure: Duration::from_millis(300),
            skip_largest: true,
            memory_ops: None,
            grace: Duration::from_secs(30),
            ..Self::full()
        }
    }

    /// A handful of operations of every kind of scenario, for the test suite: checks that
    /// everything runs and counts, never how fast.
    pub fn smoke() -> Self {
        Self {
            name: "smoke",
            warmup: Duration::ZERO,
            // Counting, not timing: the cap ends each scenario long before this.
            measure: Duration::from_secs(600),
            op_cap: Some(24),
            engine_measure: Duration::from_secs(600),
            engine_op_cap: Some(200),
            value_sizes: vec![16, 64 * 1024],
            engine_value_sizes: vec![16, 64 * 1024],
            in_flight: vec![3],
            brokers: vec![Broker::Embedded, Broker::Mosquitto],
            skip_largest: false,
            memory_ops: Some(300),
            grace: Duration::from_secs(60),
        }
    }

    /// The profile called `name` (`full`, `quick` or `smoke`).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "full" => Some(Self::full()),
            "quick" => Some(Self::quick()),
            "smoke" => Some(Self::smoke()),
            _ => None,
        }
    }

    /// The longest `scenario` may take, start-up and grace included.
    pub fn deadline(&self, scenario: &Scenario) -> Duration {
        let planned = match (scenario.kind, self.memory_ops) {
            // Even a slow machine does 2000 operations per second.
            (Kind::Memory, Some(ops)) => Duration::from_millis(ops / 2),
            (Kind::Engine, _) => 2 * self.engine_measure.min(Duration::from_secs(60)),
            _ => self.measure.min(Duration::from_secs(60)),
        };
        self.warmup + planned + self.grace
    }

    /// Whether this profile runs `scenario` (before any `--filter`).
    pub fn includes(&self, scenario: &Scenario) -> bool {
        !(self.skip_largest
            && scenario.value_size == 64 * 1024
            && scenario.in_flight == 256
            && scenario.broker.is_some())
    }
}
