//! The performance targets of the protocol benchmark, checked against a run's figures. The harness reports
//! them; nothing asserts them.

use serde::Serialize;

use super::ScenarioResult;
use crate::scenario::Kind;

/// Second-half growth of resident memory below which memory counts as flat, MiB.
pub const FLAT_MEMORY_MB: f64 = 1.0;

/// One target and how the run fared.
#[derive(Debug, Clone, Serialize)]
pub struct TargetCheck {
    /// The target, in words.
    pub target: String,
    /// Scenarios it applies to that ran.
    pub cells: usize,
    /// Of those, the ones that meet it.
    pub met_by: usize,
    /// The scenario furthest from the target, and its figure.
    pub worst: Option<(String, f64)>,
    /// Whether every applicable scenario meets it (`None`: nothing to check in this run).
    pub met: Option<bool>,
}

impl TargetCheck {
    /// `[MET ] target: 24/24 cells; worst 0.93 (name)`.
    pub fn line(&self) -> String {
        let status = match self.met {
            Some(true) => "MET ",
            Some(false) => "MISS",
            None => "N/A ",
        };
        let worst = self
            .worst
            .as_ref()
            .map(|(name, v)| format!("; worst {v:.2} ({name})"))
            .unwrap_or_default();
        format!(
            "[{status}] {}: {}/{} cells{worst}",
            self.target, self.met_by, self.cells
        )
    }
}

/// What [`check`] needs of a result: a name to quote as the worst, and whether it ran
/// cleanly (a failed run has no figure to hold against a target).
pub trait Checked {
    /// The name quoted as the worst case.
    fn name(&self) -> &str;
    /// Whether it ran without any failure.
    fn ok(&self) -> bool;
}

impl Checked for ScenarioResult {
    fn name(&self) -> &str {
        &self.name
    }

    fn ok(&self) -> bool {
        ScenarioResult::ok(self)
    }
}

/// Checks `value(result)` of the results `applies` selects against `meets`; the worst is
/// the largest value when `higher_is_better` is false, the smallest otherwise.
pub fn check<R: Checked>(
    target: impl Into<String>,
    results: &[R],
    applies: impl Fn(&R) -> bool,
    value: impl Fn(&R) -> Option<f64>,
    meets: impl Fn(f64) -> bool,
    higher_is_better: bool,
) -> TargetCheck {
    let values: Vec<(String, f64)> = results
        .iter()
        .filter(|r| r.ok() && applies(r))
        .filter_map(|r| value(r).map(|v| (r.name().to_owned(), v)))
        .collect();
    let worst = values
        .iter()
        .min_by(|a, b| {
            let order = a.1.total_cmp(&b.1);
            if higher_is_better {
                order
            } else {
                order.reverse()
            }
        })
        .cloned();
    let met_by = values.iter().filter(|(_, v)| meets(*v)).count();
    TargetCheck {
        target: target.into(),
        cells: values.len(),
        met_by,
        met: (!values.is_empty()).then_some(met_by == values.len()),
        worst,
    }
}

/// Every target of the issue.
pub fn evaluate(results: &[ScenarioResult]) -> Vec<TargetCheck> {
    let client = |r: &ScenarioResult| r.kind.is_client();
    vec![
        check(
            "client throughput >= 0.90 x floor at 64 in flight",
            results,
            |r| client(r) && r.in_flight == 64,
            |r| r.ratio_to_floor,
            |v| v >= 0.90,
            true,
        ),
        check(
            "client median latency within 50 µs of the floor at 1 in flight",
            results,
            |r| client(r) && r.in_flight == 1,
            |r| r.p50_delta_us,
            |v| v <= 50.0,
            false,
        ),
        check(
            "client throughput >= 0.90 x raw requester on the same server at 64 in flight",
            results,
            |r| client(r) && r.in_flight == 64,
            |r| r.ratio_to_raw,
            |v| v >= 0.90,
            true,
        ),
        check(
            "client median latency within 50 µs of the raw requester on the same server at 1 in flight",
            results,
            |r| client(r) && r.in_flight == 1,
            |r| r.p50_delta_raw_us,
            |v| v <= 50.0,
            false,
        ),
        check(
            "client CPU <= 10 µs per operation",
            results,
            client,
            |r| Some(r.figures.cpu_us_per_op),
            |v| v <= 10.0,
            false,
        ),
        check(
            "server end to end >= 0.90 x echo responder",
            results,
            |r| r.kind == Kind::Server,
            |r| r.ratio_to_floor,
            |v| v >= 0.90,
            true,
        ),
        check(
            "engine >= 1 million operations per second (one core)",
            results,
            |r| r.kind == Kind::Engine,
            |r| Some(r.figures.ops_per_sec),
            |v| v >= 1e6,
            true,
        ),
        check(
            "memory flat (second-half growth <= 1 MiB, figure in MiB)",
            results,
            |r| r.kind == Kind::Memory,
            |r| r.memory.as_ref().map(|m| m.second_half_growth_mb),
            |v| v <= FLAT_MEMORY_MB,
            false,
        ),
    ]
}
