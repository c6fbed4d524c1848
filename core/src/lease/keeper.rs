//! The background task of one holding: renews it when automatic renewal is on, and declares
//! it lost once its deadline passes without a successful renewal.

use std::sync::Weak;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::holding::Inner;
use super::state::{Loss, LossReason};
use crate::Error;

/// Failed renewals since the last success.
#[derive(Default)]
struct Failures {
    count: u32,
    retry_at: Option<Instant>,
    last_error: Option<Error>,
}

enum Step {
    Sleep(Instant),
    Renew { ttl: Duration },
    Expire { ttl: Duration },
}

/// Runs until the holding `generation` ends or the lease is dropped. Holds the lease only
/// while acting, so that dropping the last handle ends it.
pub(super) async fn keep(lease: Weak<Inner>, generation: u64, stop: CancellationToken) {
    let mut failures = Failures::default();
    loop {
        let Some(inner) = lease.upgrade() else {
            return;
        };
        // Registered before the settings are read, so that no change is missed.
        let settings = inner.settings_changed.clone();
        let settings_changed = settings.notified();
        tokio::pin!(settings_changed);
        settings_changed.as_mut().enable();
        let Some(step) = next_step(&inner, generation, &failures) else {
            return;
        };
        match step {
            Step::Sleep(until) => {
                drop(inner);
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep_until(until) => {}
                    () = settings_changed => {}
                }
            }
            Step::Renew { ttl } => match inner.renew(Some(generation)).await {
                Ok(()) => failures = Failures::default(),
                Err(_) if inner.current(Some(generation)).is_none() => return,
                Err(error) => {
                    tracing::debug!(%error, "lease renewal failed: retrying");
                    failures.count += 1;
                    failures.retry_at = Some(Instant::now() + retry_delay(ttl, failures.count));
                    failures.last_error = Some(error);
                }
            },
            Step::Expire { ttl } => {
                let loss = Loss {
                    reason: LossReason::Expired,
                    holder: None,
                    error: failures.last_error.take(),
                };
                if inner.lose(Some(generation), loss) {
                    inner.delete_if_not_held(ttl).await;
                }
                return;
            }
        }
    }
}

fn next_step(inner: &Inner, generation: u64, failures: &Failures) -> Option<Step> {
    let holding = inner.current(Some(generation))?;
    let now = Instant::now();
    if now >= holding.deadline {
        return Some(Step::Expire { ttl: holding.ttl });
    }
    if !inner.is_auto_renew() {
        return Some(Step::Sleep(holding.deadline));
    }
    // A third of the TTL after the last successful renewal was sent.
    let scheduled = holding
        .deadline
        .checked_sub(holding.ttl - holding.ttl / 3)
        .unwrap_or(now);
    let renew_at = failures.retry_at.unwrap_or(scheduled);
    if now >= renew_at {
        Some(Step::Renew { ttl: holding.ttl })
    } else {
        Some(Step::Sleep(renew_at.min(holding.deadline)))
    }
}

/// Jittered exponential backoff between failed renewals: from a 20th of the TTL, doubling,
/// at most a quarter of it, so that several attempts fit before the deadline without
/// spinning.
fn retry_delay(ttl: Duration, failures: u32) -> Duration {
    let base = (ttl / 20).clamp(Duration::from_millis(5), Duration::from_millis(500));
    let ceiling = (ttl / 4).max(base);
    let delay = base
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(ceiling);
    // Between half and all of the delay.
    delay / 2 + delay.mul_f64(fastrand::f64() / 2.0)
}
