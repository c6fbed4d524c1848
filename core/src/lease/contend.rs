//! Waiting for a lease another holder has: observe its key until it is deleted or should have
//! expired, and tell how long to hold back before trying again, a delay that spreads the
//! contenders and lets a late renewal of the previous holder land first.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::client::{Client, KeyEvent, Observation};
use crate::{Error, Result};

/// Watches a held key for the moment it looks free.
pub(super) struct Waiter {
    observation: Observation,
    ttl: Duration,
    /// When the key was last seen written (acquired or renewed), or when waiting began.
    last_write: Instant,
    /// Chances given so far: the jitter widens with each race lost.
    chances: u32,
}

impl Waiter {
    /// Starts observing `key`, held by another holder with (we assume) our `ttl`.
    pub(super) async fn start(client: &Client, key: Bytes, ttl: Duration) -> Result<Self> {
        Ok(Self {
            observation: client.observe(key).await?,
            ttl,
            last_write: Instant::now(),
            chances: 0,
        })
    }

    /// Waits until the key looks free; returns how long to hold back before trying.
    pub(super) async fn next_chance(&mut self) -> Result<Duration> {
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
