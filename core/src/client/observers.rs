//! The registry of observations: the observers of each key with their queues, and the per-key
//! locks that keep a key's registrations in order. It sends nothing: the KEYNOTIFY exchanges
//! are `observe`'s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::backlog::{self, Backlog};
use super::types::{KeyEvent, Value};
use crate::{Error, Result};

struct Observer {
    id: u64,
    events: mpsc::UnboundedSender<KeyEvent>,
    backlog: Arc<Backlog>,
}

/// An observer whose queue overflowed: it gets a resync once it has consumed its queue.
///
/// Made here, where a full queue is seen; the resync itself ([`Overflow::resync`]) is a
/// request, so it lives with the other requests of observations (`observe`).
pub(crate) struct Overflow {
    pub(super) key: Bytes,
    pub(super) events: mpsc::UnboundedSender<KeyEvent>,
    pub(super) backlog: Arc<Backlog>,
}

/// The receiving side of an observer: its queue and the queue's bound.
type Receiving = (mpsc::UnboundedReceiver<KeyEvent>, Arc<Backlog>);

/// The observations of every key; a key is registered with the service while it has any.
#[derive(Default)]
pub(crate) struct Observers {
    keys: Mutex<Keys>,
    next_id: AtomicU64,
    /// Serialises the registrations, stops and re-registrations of each key, so that a STOP
    /// never overtakes a newer KEYNOTIFY. Per key: a slow answer for one key holds up no other.
    registrations: KeyLocks,
}

/// One async lock per key, present while someone holds or waits for it.
#[derive(Default)]
struct KeyLocks {
    locks: Mutex<HashMap<Bytes, KeyLock>>,
}

/// A key's lock and how many hold or wait for it.
type KeyLock = (Arc<tokio::sync::Mutex<()>>, usize);

/// Holds (or, while [`KeyLocks::lock`] waits, reserves) one key's lock.
pub(super) struct KeyGuard<'a> {
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    locks: &'a KeyLocks,
    key: Bytes,
}

impl KeyLocks {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<Bytes, KeyLock>) -> R) -> R {
        // Each critical section is a single map operation: a poisoned lock is still usable.
        f(&mut self.locks.lock().unwrap_or_else(|e| e.into_inner()))
    }

    async fn lock(&self, key: &Bytes) -> KeyGuard<'_> {
        let lock = self.with(|locks| {
            let (lock, users) = locks.entry(key.clone()).or_default();
            *users += 1;
            lock.clone()
        });
        // Counted from here: dropped while waiting, the guard still gives the place back.
        let mut guard = KeyGuard {
            guard: None,
            locks: self,
            key: key.clone(),
        };
        guard.guard = Some(lock.lock_owned().await);
        guard
    }
}

impl Drop for KeyGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.locks.with(|locks| {
            if let Some((_, users)) = locks.get_mut(&self.key) {
                *users -= 1;
                if *users == 0 {
                    locks.remove(&self.key);
                }
            }
        });
    }
}

#[derive(Default)]
struct Keys {
    observers: HashMap<Bytes, Vec<Observer>>,
    closed: bool,
}

impl Observers {
    fn with<R>(&self, f: impl FnOnce(&mut Keys) -> R) -> R {
        // Each critical section is a single map operation: a poisoned lock is still usable.
        f(&mut self.keys.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Adds an observer of `key`; true if it is the key's first.
    pub(super) fn add(&self, key: &Bytes) -> Result<(u64, Receiving, bool)> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog::default());
        self.with(|keys| {
            if keys.closed {
                return Err(Error::Closed);
            }
            let observers = keys.observers.entry(key.clone()).or_default();
            observers.push(Observer {
                id,
                events: sender,
                backlog: backlog.clone(),
            });
            Ok((id, (receiver, backlog), observers.len() == 1))
        })
    }

    /// Removes one observer; true if the key has none left.
    pub(crate) fn remove(&self, key: &Bytes, id: u64) -> bool {
        self.with(|keys| {
            let Some(observers) = keys.observers.get_mut(key) else {
                return false;
            };
            observers.retain(|o| o.id != id);
            let last = observers.is_empty();
            if last {
                keys.observers.remove(key);
            }
            last
        })
    }

    /// Removes every observer of `key` (their streams end); true if there were any.
    pub(super) fn remove_all(&self, key: &Bytes) -> bool {
        self.with(|keys| keys.observers.remove(key).is_some())
    }

    pub(super) fn contains(&self, key: &Bytes) -> bool {
        self.with(|keys| keys.observers.contains_key(key))
    }

    pub(super) fn keys(&self) -> Vec<Bytes> {
        self.with(|keys| keys.observers.keys().cloned().collect())
    }

    /// Hands `event` to every observer of `key` that has room for it; returns the observers
    /// that just overflowed, for the caller to resync ([`Overflow::resync`]).
    pub(crate) fn deliver(&self, key: &Bytes, event: KeyEvent) -> Vec<Overflow> {
        let size = backlog::cost(&event);
        let mut overflows = Vec::new();
        self.with(|keys| {
            for observer in keys.observers.get(key).into_iter().flatten() {
                if observer.backlog.reserve(size) {
                    // A receiver being dropped is removing itself: nothing to do.
                    let _ = observer.events.send(event.clone());
                } else if observer.backlog.mark_overflow() {
                    overflows.push(Overflow {
                        key: key.clone(),
                        events: observer.events.clone(),
                        backlog: observer.backlog.clone(),
                    });
                }
            }
        });
        overflows
    }

    /// Hands a resync to every observer of `key`, room or not: it is the state that repairs
    /// whatever a full queue dropped.
    pub(super) fn deliver_resynced(&self, key: &Bytes, value: Option<Value>) {
        let event = KeyEvent::Resynced { value };
        let size = backlog::cost(&event);
        self.with(|keys| {
            for observer in keys.observers.get(key).into_iter().flatten() {
                observer.backlog.force(size);
                let _ = observer.events.send(event.clone());
            }
        });
    }

    /// Locks the registrations of `key`: held across each KEYNOTIFY exchange of it.
    pub(super) async fn registration(&self, key: &Bytes) -> KeyGuard<'_> {
        self.registrations.lock(key).await
    }

    /// Ends every observation, now and later.
    pub(crate) fn close(&self) {
        let observers = self.with(|keys| {
            keys.closed = true;
            std::mem::take(&mut keys.observers)
        });
        drop(observers);
    }
}
