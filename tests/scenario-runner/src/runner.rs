//! What both flavours share around the calls: checking a step's outcome, saving variables,
//! the run id, the deadline and the report.

use std::time::Duration;

use statestore::Error;

use crate::convert::code_name;
use crate::data::{matches, Ctx, Fields};
use crate::scenario::{Catalogue, Expect, Loaded, Step};

/// How long one scenario may take before it fails.
pub const SCENARIO_DEADLINE: Duration = Duration::from_secs(60);

/// How many scenarios run at once: enough to finish quickly, few enough that a loaded
/// 2-core machine connects every client well within its timeout.
pub const CONCURRENCY: usize = 12;

/// How long a whole run may take: below nextest's 2-minute deadline per test, so that a
/// hanging scenario is reported by name instead of the test being killed.
pub const RUN_DEADLINE: Duration = Duration::from_secs(100);

/// At least this many scenarios must run (an empty or unreadable directory must not pass).
pub const MIN_SCENARIOS: usize = 40;

/// Scenarios that fail because of a known bug, with the bug. Empty: none is known.
pub const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// What a step gave: `Err` is a mistake of the scenario or the runner (unknown handle, bad
/// argument); `Ok` is the library's answer.
pub type StepOutcome = Result<Result<Fields, Error>, String>;

/// A random id for this run's key prefixes, so that runs sharing a server never meet.
pub fn run_id() -> String {
    format!("{:08x}", fastrand::u32(..))
}

/// Checks a step's outcome against its expectation and the catalogue, then saves its
/// variables. `Err` says what went wrong.
pub fn finish_step(
    step: &Step,
    catalogue: &Catalogue,
    ctx: &mut Ctx,
    outcome: StepOutcome,
) -> Result<(), String> {
    let fail = |what: String| Err(format!("{}: {what}", step.label()));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(problem) => return fail(problem),
    };
    let fields = match (&step.expect, outcome) {
        (Expect::Error(want), Err(error)) => {
            let got = code_name(&error);
            return if got == want {
                Ok(())
            } else {
                fail(format!("expected error {want}, got {got}: {error}"))
            };
        }
        (Expect::Error(want), Ok(fields)) => {
            return fail(format!("expected error {want}, got success {fields:?}"))
        }
        (Expect::Fields(_), Err(error)) => {
            return fail(format!(
                "expected success, got error {}: {error}",
                code_name(&error)
            ))
        }
        (Expect::Fields(_), Ok(fields)) => fields,
    };
    // A runner that leaves a field out (or adds one) is a runner bug: say so.
    let spec = catalogue
        .op(&step.op)
        .ok_or_else(|| format!("{}: unknown op", step.label()))?;
    let mut listed: Vec<&String> = spec.result.iter().collect();
    listed.sort();
    if fields.keys().collect::<Vec<_>>() != listed {
        return fail(format!(
            "the runner gave the fields {:?}, ops.json lists {:?}",
            fields.keys().collect::<Vec<_>>(),
            spec.result
        ));
    }
    if let Expect::Fields(expected) = &step.expect {
        for (name, want) in expected {
            if let Err(problem) = matches(ctx, want, &fields[name]) {
                return fail(format!("field {name:?}: {problem}"));
            }
        }
    }
    for (var, field) in &step.save {
        ctx.vars.insert(var.clone(), fields[field].clone());
    }
    Ok(())
}

/// The outcome of every scenario of one flavour.
#[derive(Debug)]
pub struct Report {
    flavour: &'static str,
    results: Vec<(String, Result<(), String>)>,
}

impl Report {
    /// An empty report for `flavour` (`"rust-async"`, ...).
    pub fn new(flavour: &'static str) -> Report {
        Report {
            flavour,
            results: Vec::new(),
        }
    }

    /// Records a scenario's outcome.
    pub fn record(&mut self, name: String, result: Result<(), String>) {
        self.results.push((name, result));
    }

    /// Records the scenarios that could not be loaded and returns the runnable ones.
    pub fn runnable(&mut self, loaded: Vec<Loaded>) -> Vec<crate::scenario::Scenario> {
        let mut runnable = Vec::new();
        for l in loaded {
            match l.scenario {
                Ok(scenario) => runnable.push(scenario),
                Err(problem) => self.record(l.name, Err(format!("cannot run: {problem}"))),
            }
        }
        runnable
    }

    /// The failed scenarios and why, by name.
    pub fn failures(&self) -> Vec<(&str, &str)> {
        self.results
            .iter()
            .filter_map(|(name, result)| Some((name.as_str(), result.as_ref().err()?.as_str())))
            .collect()
    }

    /// How many scenarios ran.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    /// Whether no scenario ran.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Prints every outcome and panics if any scenario failed (known failures excepted, but
    /// a known failure that passes fails too), or if fewer than [`MIN_SCENARIOS`] ran.
    pub fn finish(mut self) {
        self.results.sort_by(|a, b| a.0.cmp(&b.0));
        let mut failures = Vec::new();
        for (name, result) in &self.results {
            let known = KNOWN_FAILURES.iter().find(|(n, _)| n == name);
            match (result, known) {
                (Ok(()), None) => println!("PASS {name}"),
                (Err(problem), Some((_, bug))) => {
                    println!("KNOWN FAILURE {name}: {problem} (bug: {bug})");
                }
                (Ok(()), Some(_)) => {
                    failures.push(format!(
                        "{name}: passes but is listed in KNOWN_FAILURES: remove it from the list"
                    ));
                }
                (Err(problem), None) => failures.push(format!("{name}: {problem}")),
            }
        }
        let passed = self.results.len() - failures.len();
        println!(
            "{}: {passed} passed, {} failed",
            self.flavour,
            failures.len()
        );
        if self.results.len() < MIN_SCENARIOS {
            failures.push(format!(
                "only {} scenarios ran, expected at least {MIN_SCENARIOS}",
                self.results.len()
            ));
        }
        assert!(
            failures.is_empty(),
            "{} scenario failures ({}):\n{}",
            self.flavour,
            failures.len(),
            failures.join("\n")
        );
    }
}
