//! The coordinator of a scenario: waits until the workers are ready, lets the warm-up run,
//! opens the measuring window, closes it, and turns what the workers recorded into figures.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::figures::Measurement;
use crate::gate::Gate;
use crate::measure::{Reading, Recorder};

/// The phases of one scenario.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Warm-up, not measured.
    pub warmup: Duration,
    /// Measuring window (unless `op_cap` ends it first).
    pub measure: Duration,
    /// Measured operations after which the window closes.
    pub op_cap: Option<u64>,
    /// Time allowed beyond warm-up and window (connecting, priming, draining).
    pub grace: Duration,
}

/// Runs the workers that `start` returns under a fresh gate and measures them.
///
/// `service_pid` is the service-side process whose CPU time is reported too.
pub async fn measure<F, W>(
    plan: Plan,
    service_pid: Option<u32>,
    start: F,
) -> Result<Measurement, String>
where
    F: FnOnce(Arc<Gate>) -> W,
    W: Future<Output = Result<Recorder, String>>,
{
    let gate = Arc::new(Gate::new(plan.op_cap));
    let workers = start(gate.clone());
    let coordinator = async {
        tokio::select! {
            () = gate.ready() => {}
            () = gate.woken() => return None,
        }
        tokio::select! {
            () = tokio::time::sleep(plan.warmup) => {}
            () = gate.woken() => return None,
        }
        let start = Reading::now(service_pid);
        gate.start_measuring();
        tokio::select! {
            () = tokio::time::sleep(plan.measure) => {}
            () = gate.woken() => {}
        }
        gate.stop();
        Some(start)
    };
    let limit = plan.warmup + plan.measure + plan.grace;
    let both = async { tokio::join!(workers, coordinator) };
    let Ok((recorder, start)) = tokio::time::timeout(limit, both).await else {
        gate.stop();
        return Err(format!("did not finish within {limit:?}"));
    };
    let recorder = recorder?;
    let end = Reading::now(service_pid);
    match start {
        Some(start) => Ok(Measurement::new(recorder, start, end)),
        None => Err(recorder
            .first_error
            .unwrap_or_else(|| "the workers stopped before measuring".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn plan(op_cap: Option<u64>) -> Plan {
        Plan {
            warmup: Duration::from_millis(1),
            measure: Duration::from_secs(30),
            op_cap,
            grace: Duration::from_secs(30),
        }
    }

    #[tokio::test]
    async fn the_cap_closes_the_window_with_exactly_that_many_operations() {
        let figures = measure(plan(Some(50)), None, |gate| async move {
            let mut recorder = Recorder::default();
            gate.set_ready();
            while let Some(phase) = gate.next() {
                let sent = Instant::now();
                tokio::task::yield_now().await;
                recorder.success(phase, sent);
            }
            Ok(recorder)
        })
        .await
        .expect("measured");
        assert_eq!(figures.outcome.ops, 50);
        assert_eq!(figures.outcome.errors, 0);
    }

    #[tokio::test]
    async fn a_worker_that_gives_up_ends_the_scenario_with_its_error() {
        let result = measure(plan(None), None, |gate| async move {
            let mut recorder = Recorder::default();
            recorder.failure("connection refused");
            gate.stop();
            Ok(recorder)
        })
        .await;
        assert_eq!(result.err().as_deref(), Some("connection refused"));
    }
}
