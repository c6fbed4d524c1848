//! Waiting for a lease another holder has: observe its key, and try again when the key is
//! deleted or should have expired, after a delay that spreads the contenders and lets a
//! late renewal of the previous holder land first.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::holder::{check_ttl, Lease};
use super::state::AcquireOutcome;
use crate::client::{Client, KeyEvent, Observation};
use crate::protocol::Hlc;
use crate::{Error, Result};

/// Acquires `lease` for `ttl`, waiting at most `timeout` (without limit if `None`).
pub(super) async fn acquire(
    lease: &Lease,
    ttl: Duration,
    timeout: Option<Duration>,
) -> Result<Hlc> {
    check_ttl(ttl)?;
    // Cut short by the timeout or by dropping this future (`statestore lock` on SIGINT), an
    // attempt may have taken the key: the guard gives it back.
    let mut cut_short = CutShort {
        lease,
        ttl,
        armed: true,
    };
    let result = match timeout {
        None => contend(lease, ttl).await,
        Some(timeout) => match tokio::time::timeout(timeout, contend(lease, ttl)).await {
            Ok(result) => result,
            Err(_) => return Err(Error::Timeout(timeout)),
        },
    };
    // Finished: acquired, or failed with no attempt in flight.
    cut_short.armed = false;
    result
}

/// Gives the key back ([`Lease::abandon_attempt`]) when dropped armed.
struct CutShort<'a> {
    lease: &'a Lease,
    ttl: Duration,
    armed: bool,
}

impl Drop for CutShort<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.lease.abandon_attempt(self.ttl);
        }
    }
}

async fn contend(lease: &Lease, ttl: Duration) -> Result<Hlc> {
    let mut waiter: Option<Waiter> = None;
    let mut unknown_outcomes = 0u32;
    loop {
        match lease.try_acquire(ttl).await {
            Ok(AcquireOutcome::Acquired { token }) => return Ok(token),
            Ok(AcquireOutcome::HeldBy { .. }) => {}
            Err(error) if error.outcome_unknown() => {
                // Repeating is safe (the SET only applies to an absent key or our own), but
                // not at once: the connection is probably down.
                unknown_outcomes += 1;
                tracing::debug!(%error, "lease acquisition attempt failed: retrying");
                tokio::time::sleep(jitter(ttl, unknown_outcomes)).await;
                continue;
            }
            Err(error) => return Err(error),
        }
        match waiter.as_mut() {
            Some(waiter) => {
                let delay = waiter.next_chance().await?;
                tokio::time::sleep(delay).await;
            }
            // Try once more right after starting to observe: a delete that happened between
            // the failed attempt and the registration would never be notified.
            None => waiter = Some(Waiter::start(lease.client(), lease.key().clone(), ttl).await?),
        }
    }
}

/// Watches a held key for the moment it looks free.
struct Waiter {
    observation: Observation,
    ttl: Duration,
    /// When the key was last seen written (acquired or renewed), or when waiting began.
    last_write: Instant,
    /// Chances given so far: the jitter widens with each race lost.
    chances: u32,
}

impl Waiter {
    async fn start(client: &Client, key: Bytes, ttl: Duration) -> Result<Self> {
        Ok(Self {
            observation: client.observe(key).await?,
            ttl,
            last_write: Instant::now(),
            chances: 0,
        })
    }

    /// Waits until the key looks free; returns how long to hold back before trying.
    async fn next_chance(&mut self) -> Result<Duration> {
        self.chances += 1;
        loop {
            // A holder that renews writes well within its TTL: a whole TTL (plus a margin for
            // the notification itself) without a write means the key expired and the DELETE
            // notification was missed, or the holder uses a longer TTL than ours. Either way
            // a look costs one request per TTL.
            let silence = self.last_write + self.ttl + self.ttl / 10;
            tokio::select! {
                event = self.observation.next() => match event {
                    None => return Err(Error::Closed),
                    Some(KeyEvent::Set { .. } | KeyEvent::Resynced { value: Some(_) }) => {
                        self.last_write = Instant::now();
                    }
                    Some(KeyEvent::Delete { .. } | KeyEvent::Resynced { value: None }) => {
                        return Ok(self.delay_after_delete());
                    }
                },
                () = tokio::time::sleep_until(silence) => {
                    self.last_write = Instant::now();
                    return Ok(jitter(self.ttl, self.chances));
                }
            }
        }
    }

    /// A delete after about a TTL without a write is an expiry: the previous holder may have
    /// a renewal in flight, which then lands on the absent key and keeps its lease, so the
    /// contenders wait a grace period first. A delete sooner is a release: only the jitter.
    fn delay_after_delete(&self) -> Duration {
        let silent_for = self.last_write.elapsed();
        let expired = silent_for + self.ttl / 10 >= self.ttl;
        let jitter = jitter(self.ttl, self.chances);
        if expired {
            renewal_grace(self.ttl) + jitter
        } else {
            jitter
        }
    }
}

/// How long contenders leave the previous holder after its lease expired: a tenth of the
/// TTL, between 5 ms and 250 ms.
pub(super) fn renewal_grace(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_millis(5), Duration::from_millis(250))
}

/// A random delay that spreads contenders: up to a 50th of the TTL (between 1 ms and 20 ms),
/// doubling with each of the first few lost races.
pub(super) fn jitter(ttl: Duration, attempt: u32) -> Duration {
    let spread = (ttl / 50).clamp(Duration::from_millis(1), Duration::from_millis(20));
    let spread = spread * (1 << attempt.saturating_sub(1).min(3));
    spread.mul_f64(fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_within_their_bounds() {
        let ttl = Duration::from_secs(2);
        assert_eq!(renewal_grace(ttl), Duration::from_millis(200));
        assert_eq!(
            renewal_grace(Duration::from_secs(60)),
            Duration::from_millis(250)
        );
        assert_eq!(
            renewal_grace(Duration::from_millis(10)),
            Duration::from_millis(5)
        );
        for attempt in 0..10 {
            assert!(jitter(ttl, attempt) <= Duration::from_millis(20 * 8));
        }
        assert!(jitter(Duration::from_millis(1), 1) <= Duration::from_millis(1));
    }
}
