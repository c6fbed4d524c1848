//! The harness end to end at smoke size: every kind of scenario on both brokers for a handful
//! of operations, with real brokers, a real server and the real clients. Asserts that the
//! results are complete and sane (counts, no errors, files written), never how fast.

use std::collections::BTreeSet;
use std::path::PathBuf;

use statestore_bench::matrix;
use statestore_bench::profile::Profile;
use statestore_bench::report::{self, targets};
use statestore_bench::runner::{self, RunConfig};
use statestore_bench::scenario::{Broker, Kind};

#[test]
fn every_kind_of_scenario_runs_and_counts_exactly() {
    let profile = Profile::smoke();
    let scenarios = matrix::scenarios(&profile, None);
    let config = RunConfig {
        profile: profile.clone(),
        exe: PathBuf::from(env!("CARGO_BIN_EXE_statestore-bench")),
    };
    let mut seen = 0;
    let mut results = runner::run(&config, &scenarios, |_| seen += 1).expect("the run starts");
    assert_eq!(
        seen,
        scenarios.len(),
        "progress is reported for every scenario"
    );
    assert_eq!(results.len(), scenarios.len());

    let kinds: BTreeSet<(Kind, Option<Broker>)> =
        results.iter().map(|r| (r.kind, r.broker)).collect();
    for kind in [Kind::Floor, Kind::Server, Kind::Async, Kind::Blocking] {
        for broker in [Broker::Embedded, Broker::Mosquitto] {
            assert!(
                kinds.contains(&(kind, Some(broker))),
                "{kind:?} on {broker:?}"
            );
        }
    }
    assert!(kinds.contains(&(Kind::Engine, None)));
    assert!(kinds.contains(&(Kind::Memory, Some(Broker::Embedded))));

    for r in &results {
        assert_eq!(r.outcome.error, None, "{}", r.name);
        assert_eq!(r.outcome.errors, 0, "{}", r.name);
        let expected = match r.kind {
            Kind::Engine => profile.engine_op_cap,
            Kind::Memory => profile.memory_ops,
            _ => profile.op_cap,
        };
        assert_eq!(
            Some(r.outcome.ops),
            expected,
            "{}: measured operations",
            r.name
        );
        assert!(
            r.figures.ops_per_sec > 0.0 && r.figures.ops_per_sec.is_finite(),
            "{}",
            r.name
        );
        assert!(
            r.figures.p50_us > 0.0
                && r.figures.p99_us >= r.figures.p50_us
                && r.figures.max_us >= r.figures.p99_us,
            "{}",
            r.name
        );
        assert!(
            r.figures.cpu_us_per_op > 0.0,
            "{}: the measuring process did work",
            r.name
        );
        assert!(
            r.figures.peak_rss_mb.is_some_and(|mb| mb > 1.0),
            "{}",
            r.name
        );
        if r.broker.is_some() {
            assert!(
                r.figures.service_peak_rss_mb.is_some_and(|mb| mb > 1.0),
                "{}",
                r.name
            );
        }
    }
    let memory = results
        .iter()
        .find(|r| r.kind == Kind::Memory)
        .and_then(|r| r.memory.as_ref())
        .expect("the memory scenario samples resident memory");
    assert!(memory.samples.iter().all(|&(_, mb)| mb > 1.0));

    report::compare_with_floor(&mut results);
    for r in &results {
        let compared = r.broker.is_some() && r.kind != Kind::Floor && r.kind != Kind::Memory;
        assert_eq!(r.ratio_to_floor.is_some(), compared, "{}", r.name);
        assert_eq!(r.p50_delta_us.is_some(), compared, "{}", r.name);
        assert_eq!(r.ratio_to_raw.is_some(), r.kind.is_client(), "{}", r.name);
    }

    let checks = targets::evaluate(&results);
    assert_eq!(checks.len(), 8);
    let dir = tempfile::tempdir().expect("temp dir");
    let written =
        report::write_files(dir.path(), profile.name, &results, &checks, None).expect("written");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&written.json).expect("json"))
            .expect("valid JSON");
    let scenarios_json = json["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios_json.len(), results.len());
    for (object, result) in scenarios_json.iter().zip(&results) {
        assert_eq!(object["name"], result.name.as_str());
        for field in [
            "ops_per_sec",
            "p50_us",
            "p99_us",
            "cpu_us_per_op",
            "peak_rss_mb",
        ] {
            assert!(object[field].is_number(), "{}: {field}", result.name);
        }
    }
    let svg = std::fs::read_to_string(&written.svg).expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("floor (echo)") && svg.contains("async GET"));
}
