//! Checks of the scenarios themselves (valid, enough of them, every op used and named in the
//! README) and of the runners: each must fail, naming the step, on every kind of mismatch.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;
use statestore::ErrorCode;
use statestore_scenarios::runner::{Report, MIN_SCENARIOS};
use statestore_scenarios::scenario::{
    load_shared, parse, scenarios_dir, Catalogue, Expect, Loaded,
};

#[test]
fn the_scenarios_are_valid_and_use_every_op() {
    let (catalogue, loaded) = load_shared();
    assert!(
        loaded.len() >= MIN_SCENARIOS,
        "only {} scenarios",
        loaded.len()
    );
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.name()).collect();
    for l in &loaded {
        let scenario = match &l.scenario {
            Ok(scenario) => scenario,
            Err(problem) => {
                problems.push(format!("{}: {problem}", l.name));
                continue;
            }
        };
        for step in &scenario.steps {
            used.insert(step.op.clone());
            if let Expect::Error(code) = &step.expect {
                if !codes.contains(&code.as_str()) {
                    problems.push(format!(
                        "{}: {}: {code} is not an error code name",
                        l.name,
                        step.label()
                    ));
                }
            }
        }
    }
    let readme = std::fs::read_to_string(scenarios_dir().join("README.md")).unwrap();
    for op in catalogue.ops.keys() {
        if !used.contains(op) {
            problems.push(format!("no scenario uses the op {op:?}"));
        }
        if !readme.contains(&format!("| `{op}` |")) {
            problems.push(format!("the README's name table has no row for {op:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Scenarios that must fail, each with a text its failure must contain, and one that passes.
fn self_test() -> (
    Arc<Catalogue>,
    Vec<Loaded>,
    Vec<(&'static str, &'static str)>,
) {
    let catalogue = Catalogue::load(&scenarios_dir()).unwrap();
    let cases = [
        (
            "selftest/wrong_value",
            json!([
                {"op": "set", "client": "a", "key": "k", "value": "v"},
                {"op": "get", "client": "a", "key": "k", "expect": {"value": "other"}}
            ]),
            "step 1 (get): field \"value\": expected \"other\", got \"v\"",
        ),
        (
            "selftest/wrong_error",
            json!([{"op": "get", "client": "a", "key": "", "expect": {"error": "TIMEOUT"}}]),
            "expected error TIMEOUT, got INVALID_ARGUMENT",
        ),
        (
            "selftest/unexpected_success",
            json!([{"op": "set", "client": "a", "key": "k", "value": "v",
                    "expect": {"error": "CLOSED"}}]),
            "expected error CLOSED, got success",
        ),
        (
            "selftest/unexpected_error",
            json!([{"op": "close", "client": "a"},
                   {"op": "get", "client": "a", "key": "k", "comment": "after close"}]),
            "step 1 (get: \"after close\"): expected success, got error CLOSED",
        ),
        (
            "selftest/unset_variable",
            json!([{"op": "set", "client": "a", "key": "k", "value": {"var": "nope"}}]),
            "the variable \"nope\" is not set",
        ),
        (
            "selftest/not_newer",
            json!([
                {"op": "set", "client": "a", "key": "k", "value": "v", "save": {"v": "version"}},
                {"op": "get", "client": "a", "key": "k", "expect": {"version": {"newer_than": "v"}}}
            ]),
            "expected a version newer than",
        ),
        (
            "selftest/unknown_handle",
            json!([{"op": "get", "client": "nobody", "key": "k"}]),
            "no client named \"nobody\"",
        ),
        (
            "selftest/event_missing",
            json!([
                {"op": "observe", "client": "a", "key": "k", "stream": "w"},
                {"op": "next_event", "stream": "w", "timeout_ms": 100, "expect": {"kind": "set"}}
            ]),
            "field \"kind\": expected \"set\", got \"none\"",
        ),
        (
            "selftest/unknown_op",
            json!([{"op": "frobnicate", "client": "a"}]),
            "unknown op \"frobnicate\"",
        ),
        (
            "selftest/unknown_argument",
            json!([{"op": "get", "client": "a", "key": "k", "colour": "red"}]),
            "get has no argument \"colour\"",
        ),
        (
            "selftest/unknown_field",
            json!([{"op": "get", "client": "a", "key": "k", "expect": {"valeu": null}}]),
            "the result has no field \"valeu\"",
        ),
    ];
    let mut loaded = Vec::new();
    let mut expected = Vec::new();
    for (name, steps, failure) in cases {
        let json =
            json!({"name": name, "description": "must fail", "clients": ["a"], "steps": steps});
        loaded.push(Loaded {
            name: name.into(),
            scenario: parse(name, &json, &catalogue),
        });
        expected.push((name, failure));
    }
    let passing = json!({
        "name": "selftest/passes", "description": "must pass", "clients": ["a"],
        "steps": [{"op": "set", "client": "a", "key": "k", "value": "v",
                   "expect": {"applied": true}}]
    });
    loaded.push(Loaded {
        name: "selftest/passes".into(),
        scenario: parse("selftest/passes", &passing, &catalogue),
    });
    (Arc::new(catalogue), loaded, expected)
}

fn check(report: &Report, expected: &[(&str, &str)]) {
    let failures = report.failures();
    assert_eq!(report.len(), expected.len() + 1);
    for (name, text) in expected {
        let found = failures.iter().find(|(n, _)| n == name);
        match found {
            Some((_, problem)) => assert!(
                problem.contains(text),
                "{name} failed as {problem:?}, expected it to mention {text:?}"
            ),
            None => panic!("{name} passed, but it must fail with {text:?}"),
        }
    }
    assert!(
        !failures.iter().any(|(n, _)| *n == "selftest/passes"),
        "{failures:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_runner_fails_on_every_mismatch() {
    let server = statestore_testkit::embedded().await;
    let (catalogue, loaded, expected) = self_test();
    let report = statestore_scenarios::run_async::run(server.local_addr(), catalogue, loaded).await;
    check(&report, &expected);
}

#[test]
fn the_blocking_runner_fails_on_every_mismatch() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(statestore_testkit::embedded());
    let (catalogue, loaded, expected) = self_test();
    let report = statestore_scenarios::run_blocking::run(server.local_addr(), catalogue, loaded);
    check(&report, &expected);
}
