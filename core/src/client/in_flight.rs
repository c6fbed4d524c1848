//! Requests in flight, matched to responses by correlation data.
//!
//! Each entry is freed when its response arrives, when its caller gives up (timeout or a dropped
//! future, through [`InFlightGuard`]), or when the connection fails it. The lock is never held
//! across an await.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use tokio::sync::oneshot;

use crate::Error;

/// A raw response: decoded by the caller's task so the event loop stays lean.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) payload: Bytes,
    pub(crate) properties: Option<PublishProperties>,
}

pub(crate) type Outcome = Result<Reply, Error>;

/// Correlation data: 16 random bytes.
pub(crate) type Correlation = u128;

/// The requests in flight of one client, by correlation data.
pub(crate) struct InFlight {
    inner: Mutex<Inner>,
    /// Mixed into every correlation so that processes forked from one parent (whose thread-local
    /// generators start equal) still differ.
    salt: u128,
}

struct Inner {
    entries: HashMap<Correlation, Entry, BuildHasherDefault<RandomKeyHasher>>,
    next_seq: u64,
    /// Entries with a lower sequence number were (possibly) sent on a connection that has since
    /// failed: if the next connection has no session, their outcome is unknown.
    lost_before: u64,
    /// Why requests fail at once ([`Error::Closed`], or why reconnecting gave up).
    closed: Option<Error>,
    /// Correlation data: a generator of this map's own, seeded from the salt. fastrand's
    /// global one seeds itself per thread from `std::thread::current()`, which makes the
    /// standard library keep a handle of the caller's thread (a C program's main thread) that
    /// valgrind reports as possibly lost at exit.
    rng: fastrand::Rng,
}

struct Entry {
    seq: u64,
    reply: oneshot::Sender<Outcome>,
}

impl InFlight {
    pub(crate) fn new(salt: u128) -> Self {
        Self {
            inner: Mutex::new(Inner {
                entries: HashMap::default(),
                next_seq: 0,
                lost_before: 0,
                closed: None,
                rng: fastrand::Rng::with_seed(salt as u64 ^ (salt >> 64) as u64),
            }),
            salt,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every critical section leaves the map consistent: a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request under fresh correlation data; the guard unregisters it when dropped.
    pub(crate) fn register(
        &self,
    ) -> Result<(InFlightGuard<'_>, oneshot::Receiver<Outcome>), Error> {
        let (reply, receiver) = oneshot::channel();
        let mut inner = self.lock();
        if let Some(error) = &inner.closed {
            return Err(error.clone());
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let correlation = loop {
            let candidate = inner.rng.u128(..) ^ self.salt;
            if !inner.entries.contains_key(&candidate) {
                break candidate;
            }
        };
        inner.entries.insert(correlation, Entry { seq, reply });
        drop(inner);
        Ok((
            InFlightGuard {
                map: self,
                correlation,
            },
            receiver,
        ))
    }

    /// Delivers a response; false if nobody waits for it (late, duplicate or foreign).
    pub(crate) fn complete(&self, correlation: &[u8], reply: Reply) -> bool {
        let Ok(bytes) = <[u8; 16]>::try_from(correlation) else {
            return false;
        };
        let entry = self.lock().entries.remove(&u128::from_be_bytes(bytes));
        match entry {
            Some(entry) => entry.reply.send(Ok(reply)).is_ok(),
            None => false,
        }
    }

    /// The connection failed: every request registered so far may have been lost with it.
    pub(crate) fn mark_connection_lost(&self) {
        let mut inner = self.lock();
        inner.lost_before = inner.next_seq;
    }

    /// A connection without the previous session is up: the requests that may have been lost
    /// fail with [`Error::ConnectionLost`]. Returns how many.
    pub(crate) fn fail_unknown(&self) -> usize {
        let mut inner = self.lock();
        let lost_before = inner.lost_before;
        let lost: Vec<Correlation> = inner
            .entries
            .iter()
            .filter(|(_, entry)| entry.seq < lost_before)
            .map(|(correlation, _)| *correlation)
            .collect();
        for correlation in &lost {
            if let Some(entry) = inner.entries.remove(correlation) {
                let _ = entry.reply.send(Err(Error::ConnectionLost));
            }
        }
        lost.len()
    }

    /// The client is closing: every request fails with [`Error::Closed`], later ones too.
    pub(crate) fn close(&self) {
        self.fail_all(Error::Closed);
    }

    /// Every request fails with `error`, later ones too.
    pub(crate) fn fail_all(&self, error: Error) {
        let entries = {
            let mut inner = self.lock();
            inner.closed = Some(error.clone());
            std::mem::take(&mut inner.entries)
        };
        for (_, entry) in entries {
            let _ = entry.reply.send(Err(error.clone()));
        }
    }

    /// Requests in flight.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

/// Unregisters its request when dropped.
/// The length of a request's correlation data.
pub(crate) const CORRELATION_LEN: usize = std::mem::size_of::<Correlation>();

pub(crate) struct InFlightGuard<'a> {
    map: &'a InFlight,
    correlation: Correlation,
}

impl InFlightGuard<'_> {
    /// The correlation data to send.
    pub(crate) fn correlation_data(&self) -> Bytes {
        Bytes::copy_from_slice(&self.correlation.to_be_bytes())
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.map.lock().entries.remove(&self.correlation);
    }
}

/// Correlations are uniformly random, so their low bits are already a good hash.
#[derive(Default)]
struct RandomKeyHasher(u64);

impl Hasher for RandomKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, value: u128) {
        self.0 = value as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(payload: &'static [u8]) -> Reply {
        Reply {
            payload: Bytes::from_static(payload),
            properties: None,
        }
    }

    #[test]
    fn response_reaches_its_caller_and_frees_the_entry() {
        let map = InFlight::new(7);
        let (guard, mut rx) = map.register().unwrap();
        let correlation = guard.correlation_data();
        assert_eq!(correlation.len(), 16);
        assert!(map.complete(&correlation, reply(b"+OK\r\n")));
        assert_eq!(rx.try_recv().unwrap().unwrap().payload, &b"+OK\r\n"[..]);
        assert_eq!(map.len(), 0);
        assert!(!map.complete(&correlation, reply(b"+OK\r\n")), "duplicate");
        assert!(!map.complete(b"short", reply(b"+OK\r\n")));
    }

    #[test]
    fn dropping_the_guard_frees_the_entry() {
        let map = InFlight::new(0);
        let guards: Vec<_> = (0..100).map(|_| map.register().unwrap()).collect();
        assert_eq!(map.len(), 100);
        drop(guards);
        assert_eq!(map.len(), 0);
    }

    #[test]
    fn only_requests_before_the_loss_fail_as_connection_lost() {
        let map = InFlight::new(0);
        let (_old_guard, mut old) = map.register().unwrap();
        map.mark_connection_lost();
        let (_new_guard, mut new) = map.register().unwrap();
        assert_eq!(map.fail_unknown(), 1);
        assert!(matches!(old.try_recv(), Ok(Err(Error::ConnectionLost))));
        assert!(new.try_recv().is_err(), "still waiting");
        assert_eq!(map.fail_unknown(), 0);
    }

    #[test]
    fn close_fails_everything_now_and_later() {
        let map = InFlight::new(0);
        let (_guard, mut rx) = map.register().unwrap();
        map.close();
        assert!(matches!(rx.try_recv(), Ok(Err(Error::Closed))));
        assert!(matches!(map.register(), Err(Error::Closed)));
    }
}
