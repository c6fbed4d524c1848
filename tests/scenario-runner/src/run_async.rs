//! The runner of the async client (`statestore::Client` and `statestore::lease`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore::lease::{Election, LeaderObservation, Lease, Lock, LockGuard};
use statestore::{Client, Observation};
use tokio::sync::Semaphore;

use crate::convert;
use crate::data::{Ctx, Fields};
use crate::exec::{call, interpreter};
use crate::runner::{run_id, Report, StepOutcome, CONCURRENCY, RUN_DEADLINE, SCENARIO_DEADLINE};
use crate::scenario::{load_shared, Catalogue, Loaded};

/// Runs every scenario concurrently against the server at `server`; call
/// [`Report::finish`] to fail the test on any failure.
pub async fn run_all(server: SocketAddr) -> Report {
    let (catalogue, loaded) = load_shared();
    run(server, Arc::new(catalogue), loaded).await
}

/// Runs the given scenarios (checked against `catalogue`) against the server at `server`.
pub async fn run(server: SocketAddr, catalogue: Arc<Catalogue>, loaded: Vec<Loaded>) -> Report {
    let mut report = Report::new("rust-async");
    let run = run_id();
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    let mut tasks = Vec::new();
    for scenario in report.runnable(loaded) {
        let catalogue = catalogue.clone();
        let name = scenario.name.clone();
        let mut state = Run::new(server, &run, &scenario.name);
        let slots = slots.clone();
        let task = tokio::spawn(async move {
            let _slot = slots.acquire_owned().await;
            let result = tokio::time::timeout(SCENARIO_DEADLINE, state.run(&scenario, &catalogue))
                .await
                .unwrap_or_else(|_| Err(format!("not finished within {SCENARIO_DEADLINE:?}")));
            state.cleanup().await;
            result
        });
        tasks.push((name, task));
    }
    let deadline = tokio::time::Instant::now() + RUN_DEADLINE;
    for (name, task) in tasks {
        let result = match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(format!("the runner panicked: {e}")),
            Err(_) => Err(format!("the run did not finish within {RUN_DEADLINE:?}")),
        };
        report.record(name, result);
    }
    report
}

/// `wait!(future)`: the interpreter's calls are awaited.
macro_rules! wait {
    ($e:expr) => {
        $e.await
    };
}

/// An observation: of a key, or of an election's leadership (with the election's key).
enum Stream {
    Key(Observation),
    Leader(LeaderObservation, Bytes),
}

interpreter!(async);

async fn next_event(stream: &mut Stream, timeout: Duration, ctx: &Ctx) -> StepOutcome {
    Ok(Ok(match stream {
        Stream::Key(observation) => match tokio::time::timeout(timeout, observation.next()).await {
            Err(_) => convert::no_event(),
            Ok(None) => convert::end_of_stream(),
            Ok(Some(event)) => convert::key_event(ctx, observation.key(), event)?,
        },
        Stream::Leader(observation, key) => {
            match tokio::time::timeout(timeout, observation.next()).await {
                Err(_) => convert::no_event(),
                Ok(None) => convert::end_of_stream(),
                Ok(Some(event)) => convert::leader_event(ctx, key, event)?,
            }
        }
    }))
}

async fn lease_lost(lease: &Lease, timeout: Duration) -> statestore::Result<Fields> {
    // Still held when the time is up: no loss, as in every binding.
    let loss = tokio::time::timeout(timeout, lease.lost())
        .await
        .unwrap_or(None);
    Ok(convert::lost_fields(loss.as_ref()))
}
