//! Hybrid logical clocks (HLC): the versions of keys, the `__ts` and `__ft` user properties.
//!
//! Text form `{wallMs}:{counter}:{nodeId}`, written zero-padded to 15 and 5 digits as the
//! SDKs do and parsed padded or not. Order: wall clock, counter, node id (bytes).

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use thiserror::Error;

/// The maximum clock skew the service tolerates: a `__ts` or `__ft` further ahead is rejected.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(60);

/// A hybrid logical clock value.
///
/// Field order matters: the derived ordering compares the wall clock, then the counter, then
/// the node id byte by byte, which is the order the service uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hlc {
    /// Milliseconds since the Unix epoch.
    pub wall_ms: u64,
    /// Logical counter, incremented when the wall clock does not move.
    pub counter: u64,
    /// Node id of the clock that issued this value.
    pub node: String,
}

/// Why an HLC could not be parsed or updated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HlcError {
    /// The text is not `{wallMs}:{counter}:{nodeId}`.
    #[error("malformed hybrid logical clock {0:?}: expected {{wallMs}}:{{counter}}:{{nodeId}}")]
    Malformed(String),
    /// The counter would pass its maximum.
    #[error("hybrid logical clock counter overflow: too many events within one millisecond")]
    CounterOverflow,
    /// A clock value is further ahead of the local wall clock than the maximum skew.
    #[error("clock value is {ahead_ms} ms ahead of the local clock, more than the maximum skew of {max_skew_ms} ms: synchronise the clocks")]
    TooFarInFuture {
        /// How far ahead it is.
        ahead_ms: u64,
        /// The maximum skew allowed.
        max_skew_ms: u64,
    },
}

/// Milliseconds since the Unix epoch of the system clock (0 if the clock is before 1970).
pub fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Hlc {
    /// A value for `node` at wall clock `wall_ms` with counter 0.
    pub fn new(wall_ms: u64, node: impl Into<String>) -> Self {
        Self {
            wall_ms,
            counter: 0,
            node: node.into(),
        }
    }

    /// Fails if this value is more than `max_skew` ahead of `now_ms`.
    pub fn check_skew(&self, now_ms: u64, max_skew: Duration) -> Result<(), HlcError> {
        let max_skew_ms = u64::try_from(max_skew.as_millis()).unwrap_or(u64::MAX);
        let ahead_ms = self.wall_ms.saturating_sub(now_ms);
        if ahead_ms > max_skew_ms {
            Err(HlcError::TooFarInFuture {
                ahead_ms,
                max_skew_ms,
            })
        } else {
            Ok(())
        }
    }

    /// The send rule: advances this clock for a local event at wall clock `now_ms`.
    /// On error the clock is unchanged.
    pub fn tick(&mut self, now_ms: u64, max_skew: Duration) -> Result<(), HlcError> {
        let (wall_ms, counter) = if now_ms > self.wall_ms {
            (now_ms, 0)
        } else {
            let counter = self
                .counter
                .checked_add(1)
                .ok_or(HlcError::CounterOverflow)?;
            (self.wall_ms, counter)
        };
        self.commit(wall_ms, counter, now_ms, max_skew)
    }

    /// The receive rule: merges a remote value into this clock at wall clock `now_ms`.
    /// A remote value too far ahead is rejected and the clock is unchanged.
    pub fn merge(&mut self, remote: &Hlc, now_ms: u64, max_skew: Duration) -> Result<(), HlcError> {
        remote.check_skew(now_ms, max_skew)?;
        let wall_ms = self.wall_ms.max(remote.wall_ms).max(now_ms);
        let counter = if wall_ms == self.wall_ms && wall_ms == remote.wall_ms {
            self.counter.max(remote.counter).checked_add(1)
        } else if wall_ms == self.wall_ms {
            self.counter.checked_add(1)
        } else if wall_ms == remote.wall_ms {
            remote.counter.checked_add(1)
        } else {
            Some(0)
        };
        let counter = counter.ok_or(HlcError::CounterOverflow)?;
        self.commit(wall_ms, counter, now_ms, max_skew)
    }

    fn commit(
        &mut self,
        wall_ms: u64,
        counter: u64,
        now_ms: u64,
        max_skew: Duration,
    ) -> Result<(), HlcError> {
        let next = Hlc {
            wall_ms,
            counter,
            node: String::new(),
        };
        next.check_skew(now_ms, max_skew)?;
        self.wall_ms = wall_ms;
        self.counter = counter;
        Ok(())
    }
}

impl fmt::Display for Hlc {
    /// `{wallMs:0>15}:{counter:0>5}:{node}` without the formatting machinery: every response
    /// and notification carries one, so this is on the server's hot path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const ZEROS: &str = "000000000000000";
        let mut wall = itoa::Buffer::new();
        let wall = wall.format(self.wall_ms);
        let mut counter = itoa::Buffer::new();
        let counter = counter.format(self.counter);
        f.write_str(&ZEROS[..15usize.saturating_sub(wall.len())])?;
        f.write_str(wall)?;
        f.write_str(":")?;
        f.write_str(&ZEROS[..5usize.saturating_sub(counter.len())])?;
        f.write_str(counter)?;
        f.write_str(":")?;
        f.write_str(&self.node)
    }
}

impl FromStr for Hlc {
    type Err = HlcError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = || HlcError::Malformed(text.chars().take(128).collect());
        let mut fields = text.splitn(3, ':');
        let (Some(wall), Some(counter), Some(node)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(malformed());
        };
        let number = |digits: &str| {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<u64>().ok()
        };
        Ok(Self {
            wall_ms: number(wall).ok_or_else(malformed)?,
            counter: number(counter).ok_or_else(malformed)?,
            node: node.to_owned(),
        })
    }
}

/// A thread-safe clock for one node: every `__ts` a node sends comes from
/// [`HybridClock::next`], and every `__ts` it receives goes through [`HybridClock::observe`].
#[derive(Debug)]
pub struct HybridClock {
    state: Mutex<Hlc>,
    max_skew: Duration,
}

impl HybridClock {
    /// A clock for `node` tolerating `max_skew`.
    pub fn new(node: impl Into<String>, max_skew: Duration) -> Self {
        Self {
            state: Mutex::new(Hlc::new(0, node)),
            max_skew,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Hlc> {
        // The state is two integers updated atomically under the lock: a panic elsewhere
        // cannot leave it half-written, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Advances the clock for a local event (a request sent) and returns the new value.
    pub fn next(&self) -> Result<Hlc, HlcError> {
        let mut state = self.state();
        state.tick(unix_ms_now(), self.max_skew)?;
        Ok(state.clone())
    }

    /// Merges a received value and returns the clock's new value.
    pub fn observe(&self, remote: &Hlc) -> Result<Hlc, HlcError> {
        let mut state = self.state();
        state.merge(remote, unix_ms_now(), self.max_skew)?;
        Ok(state.clone())
    }

    /// The current value, without advancing.
    pub fn current(&self) -> Hlc {
        self.state().clone()
    }

    /// The maximum skew this clock tolerates.
    pub fn max_skew(&self) -> Duration {
        self.max_skew
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKEW: Duration = MAX_CLOCK_SKEW;

    #[test]
    fn formats_padded_and_parses_both_forms() {
        let hlc = Hlc {
            wall_ms: 1_696_374_425_000,
            counter: 1,
            node: "StateStore".into(),
        };
        assert_eq!(hlc.to_string(), "001696374425000:00001:StateStore");
        assert_eq!(
            "001696374425000:00001:StateStore".parse::<Hlc>(),
            Ok(hlc.clone())
        );
        assert_eq!("1696374425000:1:StateStore".parse::<Hlc>(), Ok(hlc));
        let with_colons: Hlc = "1:2:node:with:colons".parse().unwrap();
        assert_eq!(with_colons.node, "node:with:colons");
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in [
            "",
            "1",
            "1:2",
            "a:1:n",
            "1:b:n",
            "-1:0:n",
            "+1:0:n",
            ":0:n",
            "1::n",
            "99999999999999999999999:0:n",
        ] {
            assert!(
                matches!(bad.parse::<Hlc>(), Err(HlcError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn orders_by_wall_then_counter_then_node() {
        let h = |w, c, n: &str| Hlc {
            wall_ms: w,
            counter: c,
            node: n.into(),
        };
        assert!(h(1, 9, "z") < h(2, 0, "a"));
        assert!(h(2, 0, "z") < h(2, 1, "a"));
        assert!(h(2, 1, "a") < h(2, 1, "b"));
    }

    #[test]
    fn send_rule_uses_wall_clock_or_increments_counter() {
        let mut clock = Hlc::new(100, "c");
        clock.tick(200, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (200, 0));
        clock.tick(150, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (200, 1));
        clock.tick(200, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (200, 2));
    }

    #[test]
    fn receive_rule_follows_the_hlc_paper() {
        let remote = |w, c| Hlc {
            wall_ms: w,
            counter: c,
            node: "r".into(),
        };
        // Local physical time wins.
        let mut clock = Hlc::new(100, "c");
        clock.merge(&remote(90, 7), 300, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (300, 0));
        // Remote ahead: take its wall clock and counter + 1.
        clock.merge(&remote(400, 7), 300, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (400, 8));
        // Equal wall clocks: max counter + 1.
        clock.merge(&remote(400, 3), 300, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (400, 9));
        // Local ahead of remote: own counter + 1.
        clock.merge(&remote(350, 50), 300, SKEW).unwrap();
        assert_eq!((clock.wall_ms, clock.counter), (400, 10));
        assert_eq!(clock.node, "c");
    }

    #[test]
    fn skew_beyond_sixty_seconds_is_rejected_and_changes_nothing() {
        let now = 1_000_000;
        let mut clock = Hlc::new(now, "c");
        let far = Hlc::new(now + 60_001, "r");
        assert_eq!(
            clock.merge(&far, now, SKEW),
            Err(HlcError::TooFarInFuture {
                ahead_ms: 60_001,
                max_skew_ms: 60_000
            })
        );
        assert_eq!(clock, Hlc::new(now, "c"));
        clock
            .merge(&Hlc::new(now + 60_000, "r"), now, SKEW)
            .unwrap();
        assert_eq!(clock.wall_ms, now + 60_000);
    }

    #[test]
    fn counter_overflow_is_an_error_not_a_wrap() {
        let mut clock = Hlc {
            wall_ms: 500,
            counter: u64::MAX,
            node: "c".into(),
        };
        assert_eq!(clock.tick(400, SKEW), Err(HlcError::CounterOverflow));
        assert_eq!(clock.counter, u64::MAX);
        let remote = Hlc {
            wall_ms: 500,
            counter: u64::MAX,
            node: "r".into(),
        };
        let mut other = Hlc::new(500, "c");
        assert_eq!(
            other.merge(&remote, 400, SKEW),
            Err(HlcError::CounterOverflow)
        );
    }

    #[test]
    fn shared_clock_is_monotonic() {
        let clock = HybridClock::new("client", SKEW);
        let mut last = clock.next().unwrap();
        for _ in 0..1000 {
            let next = clock.next().unwrap();
            assert!(next > last);
            last = next;
        }
        let remote = Hlc {
            wall_ms: last.wall_ms + 10_000,
            counter: 5,
            node: "StateStore".into(),
        };
        let merged = clock.observe(&remote).unwrap();
        assert_eq!((merged.wall_ms, merged.counter), (remote.wall_ms, 6));
        assert!(clock.next().unwrap() > merged);
    }
}
