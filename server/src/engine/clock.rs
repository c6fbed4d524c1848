//! The server's hybrid logical clock. Unlike a client's clock it never fails: the server must
//! always be able to issue a version greater than every version it issued before.

use statestore::protocol::Hlc;

/// A version issued by this server: the node id is implied (always the server's), which keeps
/// stored versions two integers instead of an allocated string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct Stamp {
    /// Milliseconds since the Unix epoch.
    pub wall_ms: u64,
    /// Logical counter.
    pub counter: u64,
}

impl Stamp {
    /// The next stamp after `self` at the same wall clock. A counter at its maximum (a client
    /// can send any counter) moves the wall clock on instead of wrapping, so versions stay
    /// monotonic and a hostile `__ts` cannot wedge the clock.
    fn successor(self) -> Stamp {
        match self.counter.checked_add(1) {
            Some(counter) => Stamp { counter, ..self },
            None => Stamp {
                wall_ms: self.wall_ms.saturating_add(1),
                counter: 0,
            },
        }
    }
}

/// The server's clock: the source of every version.
#[derive(Debug)]
pub(crate) struct ServerClock {
    last: Stamp,
    node: String,
}

impl ServerClock {
    /// A clock for node `node` that has issued nothing yet.
    pub fn new(node: String) -> Self {
        Self {
            last: Stamp::default(),
            node,
        }
    }

    /// The send rule: a new stamp for a local event at wall clock `now_ms`.
    pub fn tick(&mut self, now_ms: u64) -> Stamp {
        self.last = if now_ms > self.last.wall_ms {
            Stamp {
                wall_ms: now_ms,
                counter: 0,
            }
        } else {
            self.last.successor()
        };
        self.last
    }

    /// The receive rule: merges a request's `__ts` (already checked for skew) at `now_ms`.
    /// The result is greater than both the remote value and every stamp issued before.
    pub fn receive(&mut self, remote: &Hlc, now_ms: u64) -> Stamp {
        let remote = Stamp {
            wall_ms: remote.wall_ms,
            counter: remote.counter,
        };
        let wall_ms = self.last.wall_ms.max(remote.wall_ms).max(now_ms);
        self.last = if wall_ms == self.last.wall_ms && wall_ms == remote.wall_ms {
            self.last.max(remote).successor()
        } else if wall_ms == self.last.wall_ms {
            self.last.successor()
        } else if wall_ms == remote.wall_ms {
            remote.successor()
        } else {
            Stamp {
                wall_ms,
                counter: 0,
            }
        };
        self.last
    }

    /// Moves the clock to at least `stamp` (a version issued before a restart), so that
    /// every later stamp is greater.
    pub fn witness(&mut self, stamp: Stamp) {
        self.last = self.last.max(stamp);
    }

    /// The full HLC of a stamp this clock issued.
    pub fn hlc(&self, stamp: Stamp) -> Hlc {
        Hlc {
            wall_ms: stamp.wall_ms,
            counter: stamp.counter,
            node: self.node.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(wall_ms: u64, counter: u64) -> Hlc {
        Hlc {
            wall_ms,
            counter,
            node: "client".into(),
        }
    }

    #[test]
    fn receive_is_greater_than_the_remote_and_the_past() {
        let mut clock = ServerClock::new("StateStore".into());
        let first = clock.receive(&remote(1_000, 7), 900);
        assert_eq!(
            first,
            Stamp {
                wall_ms: 1_000,
                counter: 8
            }
        );
        let second = clock.receive(&remote(500, 0), 900);
        assert!(second > first);
        let third = clock.receive(&remote(2_000, 0), 2_500);
        assert_eq!(
            third,
            Stamp {
                wall_ms: 2_500,
                counter: 0
            }
        );
        assert_eq!(
            clock.hlc(third).to_string(),
            "000000000002500:00000:StateStore"
        );
    }

    #[test]
    fn tick_is_monotonic_when_the_wall_clock_goes_back() {
        let mut clock = ServerClock::new("s".into());
        let a = clock.tick(1_000);
        let b = clock.tick(400);
        let c = clock.tick(1_000);
        assert!(a < b && b < c);
    }

    #[test]
    fn a_maximal_counter_moves_the_wall_clock_instead_of_failing() {
        let mut clock = ServerClock::new("s".into());
        let merged = clock.receive(&remote(1_000, u64::MAX), 1_000);
        assert_eq!(
            merged,
            Stamp {
                wall_ms: 1_001,
                counter: 0
            }
        );
        assert!(clock.tick(1_000) > merged);
    }
}
