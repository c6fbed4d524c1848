//! The phase gate shared by a scenario's workers and its coordinator: workers ask it before
//! each request whether to send one and whether it counts (warm-up requests do not).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use tokio::sync::Notify;

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// What a request about to be sent is part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not measured.
    Warmup,
    /// Measured.
    Measure,
}

/// The phases of one scenario. Cheap to ask from any thread.
#[derive(Debug)]
pub struct Gate {
    phase: AtomicU8,
    measured: AtomicU64,
    op_cap: Option<u64>,
    wake: Notify,
    ready: Notify,
}

impl Gate {
    /// A gate in warm-up; at most `op_cap` requests are let through once measuring.
    pub fn new(op_cap: Option<u64>) -> Self {
        Self {
            phase: AtomicU8::new(WARMUP),
            measured: AtomicU64::new(0),
            op_cap,
            wake: Notify::new(),
            ready: Notify::new(),
        }
    }

    /// Whether to send another request, and in which phase; `None` means stop.
    pub fn next(&self) -> Option<Phase> {
        match self.phase.load(Ordering::Acquire) {
            WARMUP => Some(Phase::Warmup),
            MEASURE => {
                let Some(cap) = self.op_cap else {
                    return Some(Phase::Measure);
                };
                let n = self.measured.fetch_add(1, Ordering::AcqRel);
                if n < cap {
                    Some(Phase::Measure)
                } else {
                    if n == cap {
                        self.wake.notify_one();
                    }
                    None
                }
            }
            _ => None,
        }
    }

    /// Ends the warm-up (unless the gate was stopped already).
    pub fn start_measuring(&self) {
        let _ = self
            .phase
            .compare_exchange(WARMUP, MEASURE, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Measured requests let through so far (counted only when there is a cap).
    pub fn measured(&self) -> u64 {
        self.measured.load(Ordering::Acquire)
    }

    /// The workers are connected and primed: the warm-up may begin.
    pub fn set_ready(&self) {
        self.ready.notify_one();
    }

    /// Resolves after [`Gate::set_ready`].
    pub async fn ready(&self) {
        self.ready.notified().await;
    }

    /// No more requests. Workers finish the ones in flight.
    pub fn stop(&self) {
        self.phase.store(STOP, Ordering::Release);
        self.wake.notify_one();
    }

    /// Whether [`Gate::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.phase.load(Ordering::Acquire) == STOP
    }

    /// Resolves when the operation cap is reached or the gate is stopped (a worker gave up).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_measured_requests_up_to_the_cap() {
        let gate = Gate::new(Some(2));
        assert_eq!(gate.next(), Some(Phase::Warmup));
        assert_eq!(gate.next(), Some(Phase::Warmup));
        gate.start_measuring();
        assert_eq!(gate.next(), Some(Phase::Measure));
        assert_eq!(gate.next(), Some(Phase::Measure));
        assert_eq!(gate.next(), None);
        assert!(!gate.is_stopped());
        gate.stop();
        assert_eq!(gate.next(), None);
        assert!(gate.is_stopped());
        gate.start_measuring();
        assert!(gate.is_stopped(), "a stopped gate stays stopped");
    }

    #[tokio::test]
    async fn reaching_the_cap_wakes_the_coordinator() {
        let gate = Gate::new(Some(1));
        gate.start_measuring();
        assert_eq!(gate.next(), Some(Phase::Measure));
        assert_eq!(gate.next(), None);
        gate.woken().await;
    }
}
