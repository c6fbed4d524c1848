//! Exponential reconnect backoff with jitter (rumqttc reconnects at once and would spin).

use std::time::Duration;

use super::options::ReconnectPolicy;

/// The delays between reconnection attempts.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    policy: ReconnectPolicy,
    failures: u32,
}

impl Backoff {
    pub(crate) fn new(policy: ReconnectPolicy) -> Self {
        Self {
            policy,
            failures: 0,
        }
    }

    /// The policy it follows.
    pub(crate) fn policy(&self) -> ReconnectPolicy {
        self.policy
    }

    /// A connection succeeded: the next failure waits the initial delay again.
    pub(crate) fn reset(&mut self) {
        self.failures = 0;
    }

    /// The delay before the next attempt, randomised.
    pub(crate) fn next_delay(&mut self) -> Duration {
        self.next_delay_with(fastrand::f64())
    }

    /// The delay before the next attempt; `unit` in `[0, 1)` picks the point between half and
    /// all of the exponential delay.
    pub(crate) fn next_delay_with(&mut self, unit: f64) -> Duration {
        let ceiling = self
            .policy
            .initial_delay
            .checked_mul(1u32.checked_shl(self.failures).unwrap_or(u32::MAX))
            .unwrap_or(self.policy.max_delay)
            .min(self.policy.max_delay);
        self.failures = self.failures.saturating_add(1);
        ceiling.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_initial_to_max_and_resets() {
        let mut backoff = Backoff::new(ReconnectPolicy::default());
        let ceilings: Vec<u128> = (0..12)
            .map(|_| backoff.next_delay_with(1.0).as_millis())
            .collect();
        assert_eq!(
            ceilings,
            [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 60000, 60000, 60000]
        );
        for _ in 0..100 {
            backoff.next_delay_with(1.0);
        }
        assert_eq!(backoff.next_delay_with(1.0), Duration::from_secs(60));
        backoff.reset();
        assert_eq!(backoff.next_delay_with(0.0), Duration::from_millis(64));
    }

    #[test]
    fn jitter_stays_between_half_and_full_delay() {
        let mut backoff = Backoff::new(ReconnectPolicy::default());
        for attempt in 0..20 {
            let delay = backoff.next_delay();
            let ceiling = Duration::from_millis(128)
                .saturating_mul(1 << attempt.min(20))
                .min(Duration::from_secs(60));
            assert!(
                delay >= ceiling / 2 && delay <= ceiling,
                "{attempt}: {delay:?}"
            );
        }
    }
}
