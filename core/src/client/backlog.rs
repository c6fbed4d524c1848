//! The bound on an observation's queue of events not yet consumed.
//!
//! A service that floods notifications to an observation the application does not read would
//! otherwise grow the process without limit. Past [`LIMIT`] bytes, new events are dropped and
//! the observation is marked: once the application has consumed what was queued, it receives
//! one `Resynced` event with the key's current value (as after a reconnect), so no change goes
//! unnoticed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::types::KeyEvent;

/// Bytes of events (values plus a fixed cost each) one observation may hold unconsumed.
pub const LIMIT: usize = 16 << 20;

/// What one event weighs against [`LIMIT`].
pub(crate) fn cost(event: &KeyEvent) -> usize {
    const FIXED: usize = 64;
    FIXED
        + match event {
            KeyEvent::Set { value, .. } => value.len(),
            KeyEvent::Delete { .. } => 0,
            KeyEvent::Resynced { value } => value.as_ref().map_or(0, |v| v.value.len()),
        }
}

/// The bytes queued in one observation, shared by its sender and its receiver.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    queued: AtomicUsize,
    overflowed: AtomicBool,
    drained: Notify,
}

impl Backlog {
    /// Takes room for an event of `size` bytes; false when the queue is full (an empty queue
    /// always takes one event, however large).
    pub(crate) fn reserve(&self, size: usize) -> bool {
        let mut queued = self.queued.load(Ordering::Acquire);
        loop {
            if queued > 0 && queued.saturating_add(size) > LIMIT {
                return false;
            }
            match self.queued.compare_exchange_weak(
                queued,
                queued + size,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => queued = now,
            }
        }
    }

    /// Takes room whatever the bound (the resync event that repairs an overflow).
    pub(crate) fn force(&self, size: usize) {
        self.queued.fetch_add(size, Ordering::AcqRel);
    }

    /// Gives back the room of a consumed event.
    pub(crate) fn release(&self, size: usize) {
        if self.queued.fetch_sub(size, Ordering::AcqRel) == size {
            self.drained.notify_waiters();
        }
    }

    /// Marks the observation as having lost events; true if it was not marked yet (the caller
    /// then arranges the resync).
    pub(crate) fn mark_overflow(&self) -> bool {
        !self.overflowed.swap(true, Ordering::AcqRel)
    }

    /// Clears the mark, before the resync reads the key: a later overflow arranges another.
    pub(crate) fn clear_overflow(&self) {
        self.overflowed.store(false, Ordering::Release);
    }

    /// Waits until everything queued has been consumed.
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.queued.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_holds_but_an_empty_queue_takes_one_event() {
        let backlog = Backlog::default();
        assert!(backlog.reserve(LIMIT * 2), "one oversized event when empty");
        assert!(!backlog.reserve(1));
        assert!(backlog.mark_overflow());
        assert!(!backlog.mark_overflow(), "marked once");
        backlog.release(LIMIT * 2);
        assert!(backlog.reserve(LIMIT / 2) && backlog.reserve(LIMIT / 2));
        assert!(!backlog.reserve(1));
    }
}
