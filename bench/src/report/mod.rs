//! What a run produces: one [`ScenarioResult`] per scenario, compared with the floor, written
//! as a table, JSON and a chart, and checked against the targets.

pub mod chart;
pub mod json;
pub mod plot;
pub mod reference;
pub mod table;
pub mod targets;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::drivers::memory::MemoryTrace;
use crate::figures::{Figures, Measurement, Outcome};
use crate::measurer::Measured;
use crate::scenario::{Broker, Kind, Op, Scenario};
use reference::References;

/// The figures of one scenario, as written to `latest.json`.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    /// `kind/op/size[/in_flight/broker]`.
    pub name: String,
    /// What was measured.
    pub kind: Kind,
    /// Which request.
    pub op: Op,
    /// Value size in bytes.
    pub value_size: usize,
    /// Requests in flight.
    pub in_flight: usize,
    /// The broker (none for the engine).
    pub broker: Option<Broker>,
    /// Counts and failure.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Time, throughput, latency, CPU and memory.
    #[serde(flatten)]
    pub figures: Figures,
    /// Throughput divided by the floor's at the same size, in flight and broker.
    pub ratio_to_floor: Option<f64>,
    /// Median latency minus the floor's, microseconds.
    pub p50_delta_us: Option<f64>,
    /// Clients: throughput divided by the raw requester's against the same server (same op,
    /// size, in flight and broker): what the client library costs on top of the exchange.
    pub ratio_to_raw: Option<f64>,
    /// Clients: median latency minus the raw requester's against the same server, µs.
    pub p50_delta_raw_us: Option<f64>,
    /// The memory trace of the long-run scenario.
    pub memory: Option<MemoryTrace>,
    #[serde(skip)]
    scenario: Scenario,
}

impl ScenarioResult {
    /// The result of a scenario from what its measuring process reported.
    pub fn new(scenario: Scenario, measured: Result<Measured, String>) -> Self {
        match measured {
            Ok(measured) => {
                let mut result = Self::measured(scenario, measured.measurement);
                result.memory = measured.memory;
                result
            }
            Err(error) => Self::failed(scenario, error),
        }
    }

    /// The result of a scenario that ran (possibly with failed operations).
    pub fn measured(scenario: Scenario, measurement: Measurement) -> Self {
        let mut result = Self::empty(scenario);
        result.outcome = measurement.outcome;
        result.figures = measurement.figures;
        result
    }

    /// The result of a scenario that could not run.
    pub fn failed(scenario: Scenario, error: String) -> Self {
        let mut result = Self::empty(scenario);
        result.outcome.error = Some(error);
        result
    }

    fn empty(scenario: Scenario) -> Self {
        Self {
            name: scenario.name(),
            kind: scenario.kind,
            op: scenario.op,
            value_size: scenario.value_size,
            in_flight: scenario.in_flight,
            broker: scenario.broker,
            outcome: Outcome::default(),
            figures: Figures::default(),
            ratio_to_floor: None,
            p50_delta_us: None,
            ratio_to_raw: None,
            p50_delta_raw_us: None,
            memory: None,
            scenario,
        }
    }

    /// The scenario these figures are of.
    pub fn scenario(&self) -> Scenario {
        self.scenario
    }

    /// Whether the scenario ran without any failure.
    pub fn ok(&self) -> bool {
        self.outcome.ok()
    }
}

/// Fills the comparisons: `ratio_to_floor` and `p50_delta_us` against the floor of the same
/// cell, `ratio_to_raw` and `p50_delta_raw_us` against the raw requester on the server.
pub fn compare_with_floor(results: &mut [ScenarioResult]) {
    let references = References::new(
        results
            .iter()
            .filter(|r| matches!(r.kind, Kind::Floor | Kind::Server) && r.ok())
            .map(|r| (r.scenario, &r.figures)),
    );
    for result in results.iter_mut().filter(|r| r.ok()) {
        if let Some(c) = references.compare(result.scenario.floor(), &result.figures) {
            result.ratio_to_floor = Some(c.ratio);
            result.p50_delta_us = Some(c.p50_delta_us);
        }
        if let Some(c) = references.compare(result.scenario.raw(), &result.figures) {
            result.ratio_to_raw = Some(c.ratio);
            result.p50_delta_raw_us = Some(c.p50_delta_us);
        }
    }
}

/// Where a report's files went.
#[derive(Debug, Clone)]
pub struct Written {
    /// The JSON document.
    pub json: PathBuf,
    /// The chart.
    pub svg: PathBuf,
}

impl Written {
    /// `dir/stem.json` and `dir/stem.svg`; creates `dir` if missing.
    pub fn in_dir(dir: &Path, stem: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Self {
            json: dir.join(format!("{stem}.json")),
            svg: dir.join(format!("{stem}.svg")),
        })
    }
}

/// Writes `latest.json` and `latest.svg` into `dir` (created if missing).
pub fn write_files(
    dir: &Path,
    profile: &str,
    results: &[ScenarioResult],
    checks: &[targets::TargetCheck],
    load_at_start: Option<String>,
) -> Result<Written, String> {
    let written = Written::in_dir(dir, "latest")?;
    let run = json::Run::ending_now(profile, &json::NOTES, load_at_start);
    let title = format!("statestore: floor vs clients ({})", run.conditions());
    let document = json::Document {
        run,
        scenarios: results,
        targets: checks,
    };
    json::write(&written.json, &document)?;
    chart::write(&written.svg, results, &title)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(kind: Kind, op: Op, ops_per_sec: f64, p50_us: f64) -> ScenarioResult {
        let scenario = Scenario {
            kind,
            op,
            value_size: 16,
            in_flight: 64,
            broker: Some(Broker::Embedded),
        };
        ScenarioResult::measured(
            scenario,
            Measurement {
                outcome: Outcome {
                    ops: 100,
                    ..Outcome::default()
                },
                figures: Figures {
                    elapsed_s: 1.0,
                    ops_per_sec,
                    p50_us,
                    p99_us: p50_us * 2.0,
                    max_us: p50_us * 3.0,
                    cpu_us_per_op: 5.0,
                    ..Figures::default()
                },
            },
        )
    }

    #[test]
    fn clients_are_compared_with_the_floor_and_the_raw_requester_of_their_cell() {
        let mut results = vec![
            result(Kind::Floor, Op::Echo, 1000.0, 100.0),
            result(Kind::Server, Op::Set, 1200.0, 90.0),
            result(Kind::Server, Op::Get, 5.0, 5.0),
            result(Kind::Async, Op::Set, 900.0, 130.0),
        ];
        compare_with_floor(&mut results);
        assert_eq!(results[0].ratio_to_floor, None);
        assert_eq!(results[1].ratio_to_floor, Some(1.2));
        assert_eq!(results[1].ratio_to_raw, None);
        assert_eq!(results[3].ratio_to_floor, Some(0.9));
        assert_eq!(results[3].p50_delta_us, Some(30.0));
        assert_eq!(results[3].ratio_to_raw, Some(0.75));
        assert_eq!(results[3].p50_delta_raw_us, Some(40.0));
    }
}
