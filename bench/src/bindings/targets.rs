//! The targets of the bindings issue, checked against a bindings run's figures. The run
//! reports them; nothing asserts them.

use super::result::BindingResult;
use super::Flavour;
use crate::report::targets::{check, Checked, TargetCheck};

/// Second-half growth of resident memory below which a binding counts as flat, MiB.
pub const FLAT_MEMORY_MB: f64 = 2.0;

/// CPU a connected client with an open observation may use per 20 s idle, ms.
pub const IDLE_CPU_MS_PER_20S: f64 = 50.0;

fn in_flight_of(r: &BindingResult) -> usize {
    r.in_flight.unwrap_or(0)
}

impl Checked for BindingResult {
    fn name(&self) -> &str {
        &self.name
    }

    fn ok(&self) -> bool {
        BindingResult::ok(self)
    }
}

/// The targets of the issue ("at 64 in flight" is the deepest depth of the run).
pub fn evaluate(results: &[BindingResult]) -> Vec<TargetCheck> {
    let deepest = results
        .iter()
        .filter(|r| r.is_throughput())
        .map(in_flight_of)
        .max()
        .unwrap_or(64);
    let deep = move |r: &BindingResult, flavours: &[Flavour]| {
        r.is_throughput() && in_flight_of(r) == deepest && flavours.contains(&r.flavour)
    };
    let single = |r: &BindingResult, flavours: &[Flavour]| {
        r.is_throughput() && in_flight_of(r) == 1 && flavours.contains(&r.flavour)
    };
    let py_node_async = [Flavour::PythonAsync, Flavour::NodePromise];
    let py_node_all = [
        Flavour::PythonAsync,
        Flavour::PythonSync,
        Flavour::NodePromise,
        Flavour::NodeSync,
    ];
    let bindings = [
        Flavour::CAsync,
        Flavour::CDispatch,
        Flavour::CBlocking,
        Flavour::PythonAsync,
        Flavour::PythonSync,
        Flavour::NodePromise,
        Flavour::NodeSync,
        Flavour::RustAsync,
        Flavour::RustBlocking,
    ];
    vec![
        check(
            format!("python-async, node-promise >= 0.80 x rust-async throughput at {deepest} in flight"),
            results,
            |r| deep(r, &py_node_async),
            |r| r.ratio_to_rust_async,
            |v| v >= 0.8,
            true,
        ),
        check(
            format!("c-async >= 0.95 x rust-async throughput at {deepest} in flight"),
            results,
            |r| deep(r, &[Flavour::CAsync]),
            |r| r.ratio_to_rust_async,
            |v| v >= 0.95,
            true,
        ),
        check(
            "python-sync, node-sync median <= rust-blocking + 15 µs at 1 in flight (µs above)",
            results,
            |r| single(r, &[Flavour::PythonSync, Flavour::NodeSync]),
            |r| r.p50_delta_rust_us,
            |v| v <= 15.0,
            false,
        ),
        check(
            "c-blocking median <= rust-blocking + 5 µs at 1 in flight (µs above)",
            results,
            |r| single(r, &[Flavour::CBlocking]),
            |r| r.p50_delta_rust_us,
            |v| v <= 5.0,
            false,
        ),
        check(
            format!("python-async, node-promise >= 5 x the by-hand baseline's throughput at {deepest} in flight"),
            results,
            |r| deep(r, &py_node_async),
            |r| r.ratio_to_baseline,
            |v| v >= 5.0,
            true,
        ),
        check(
            "Python and Node flavours: median below the by-hand baseline's at 1 in flight (µs above)",
            results,
            |r| single(r, &py_node_all),
            |r| r.p50_delta_baseline_us,
            |v| v < 0.0,
            false,
        ),
        check(
            "batch >= 10 x faster than a loop of awaited single calls, same keys (x faster)",
            results,
            |r| r.kind == "batch" && !r.flavour.is_baseline(),
            |r| r.batch_speedup,
            |v| v >= 10.0,
            true,
        ),
        check(
            format!("memory flat: <= {FLAT_MEMORY_MB} MiB growth over the second half (MiB)"),
            results,
            |r| r.kind == "memory" && bindings.contains(&r.flavour),
            |r| r.memory.as_ref().map(|m| m.second_half_growth_mb),
            |v| v <= FLAT_MEMORY_MB,
            false,
        ),
        check(
            format!("idle: <= {IDLE_CPU_MS_PER_20S} ms CPU per 20 s with an open observation (ms)"),
            results,
            |r| r.kind == "idle" && bindings.contains(&r.flavour),
            BindingResult::idle_cpu_ms_per_20s,
            |v| v <= IDLE_CPU_MS_PER_20S,
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::result::DriverOutput;
    use crate::bindings::{Item, Test};

    #[test]
    fn every_flavour_of_ours_is_judged_by_the_idle_target_and_no_baseline_is() {
        let results: Vec<BindingResult> = Flavour::ALL
            .into_iter()
            .map(|flavour| {
                let out = DriverOutput {
                    elapsed_s: Some(20.0),
                    idle_cpu_ms: Some(if flavour == Flavour::CDispatch {
                        60.0
                    } else {
                        1.0
                    }),
                    idle_ctx_switches: Some(1),
                    ..DriverOutput::default()
                };
                let item = Item {
                    flavour,
                    test: Test::Idle,
                };
                BindingResult::from_output(item, out)
            })
            .collect();
        let idle = evaluate(&results)
            .into_iter()
            .find(|c| c.target.starts_with("idle"))
            .expect("an idle target");
        let ours = Flavour::ALL.iter().filter(|f| !f.is_baseline()).count();
        assert_eq!(
            (idle.cells, idle.met_by, idle.met),
            (ours, ours - 1, Some(false))
        );
        assert_eq!(idle.worst.map(|w| w.0), Some("c-dispatch/idle".to_owned()));
    }
}
