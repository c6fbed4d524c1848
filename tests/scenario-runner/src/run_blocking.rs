//! The runner of the blocking client (`statestore::blocking`), one plain thread per scenario.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use statestore::blocking::{Client, Election, Lease, Lock, LockGuard};
use statestore::lease::LeaderObservation;
use statestore::{Error, Observation};

use crate::convert;
use crate::data::{Ctx, Fields};
use crate::exec::{call, interpreter};
use crate::runner::{run_id, Report, StepOutcome, CONCURRENCY, RUN_DEADLINE};
use crate::scenario::{load_shared, Catalogue, Loaded};

/// Runs every scenario, a few at a time on plain threads, against the server at `server`; call
/// [`Report::finish`] to fail the test on any failure. Call it from a plain thread (not
/// inside an async runtime, where the blocking API refuses to run).
pub fn run_all(server: SocketAddr) -> Report {
    let (catalogue, loaded) = load_shared();
    run(server, Arc::new(catalogue), loaded)
}

/// Runs the given scenarios (checked against `catalogue`) against the server at `server`.
pub fn run(server: SocketAddr, catalogue: Arc<Catalogue>, loaded: Vec<Loaded>) -> Report {
    let mut report = Report::new("rust-blocking");
    let run = run_id();
    let queue = Arc::new(Mutex::new(report.runnable(loaded)));
    let mut pending: Vec<String> = queue
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let (done, results) = mpsc::channel();
    for worker in 0..CONCURRENCY {
        let queue = queue.clone();
        let catalogue = catalogue.clone();
        let done = done.clone();
        let run = run.clone();
        std::thread::Builder::new()
            .name(format!("scenarios-{worker}"))
            .spawn(move || loop {
                let Some(scenario) = queue.lock().unwrap().pop() else {
                    return;
                };
                let mut state = Run::new(server, &run, &scenario.name);
                let result = state.run(&scenario, &catalogue);
                state.cleanup();
                let _ = done.send((scenario.name.clone(), result));
            })
            .expect("start a scenario thread");
    }
    drop(done);
    // A blocking call cannot be abandoned, so the deadline is the whole run's.
    let deadline = Instant::now() + RUN_DEADLINE;
    while !pending.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        match results.recv_timeout(left) {
            Ok((name, result)) => {
                pending.retain(|p| *p != name);
                report.record(name, result);
            }
            // Out of time, or every worker is gone (a panic: its scenario stays pending).
            Err(_) => break,
        }
    }
    for name in pending {
        report.record(
            name,
            Err(format!(
                "not finished within the run's {RUN_DEADLINE:?} (or the runner panicked)"
            )),
        );
    }
    report
}

/// `wait!(call)`: the interpreter's calls block.
macro_rules! wait {
    ($e:expr) => {
        $e
    };
}

/// An observation: of a key, or of an election's leadership (with the election's key).
enum Stream {
    Key(Observation),
    Leader(LeaderObservation, Bytes),
}

interpreter!();

fn next_event(stream: &mut Stream, timeout: Duration, ctx: &Ctx) -> StepOutcome {
    let fields = match stream {
        Stream::Key(observation) => match observation.next_timeout(timeout) {
            Ok(None) => convert::no_event(),
            Err(Error::Closed) => convert::end_of_stream(),
            Err(error) => return Ok(Err(error)),
            Ok(Some(event)) => convert::key_event(ctx, observation.key(), event)?,
        },
        Stream::Leader(observation, key) => match observation.next_timeout(timeout) {
            Ok(None) => convert::no_event(),
            Err(Error::Closed) => convert::end_of_stream(),
            Err(error) => return Ok(Err(error)),
            Ok(Some(event)) => convert::leader_event(ctx, key, event)?,
        },
    };
    Ok(Ok(fields))
}

fn lease_lost(lease: &Lease, timeout: Duration) -> statestore::Result<Fields> {
    // Still held when the time is up: no loss, as in every binding.
    Ok(convert::lost_fields(lease.lost_timeout(timeout)?.loss()))
}
