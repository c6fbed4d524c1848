//! Expiry deadlines in deadline order, so that the next one and every due one are found
//! without scanning the store.

use std::collections::BTreeMap;

use bytes::Bytes;

/// Where a key sits in the index: its deadline plus a sequence number that makes equal
/// deadlines distinct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ticket {
    /// Milliseconds since the Unix epoch at or after which the key is gone.
    pub deadline_ms: u64,
    seq: u64,
}

/// The keys that have a deadline, earliest first.
#[derive(Debug, Default)]
pub(crate) struct ExpiryIndex {
    queue: BTreeMap<Ticket, Bytes>,
    next_seq: u64,
}

impl ExpiryIndex {
    /// Schedules `key` to expire at `deadline_ms`; the ticket cancels it.
    pub fn schedule(&mut self, key: Bytes, deadline_ms: u64) -> Ticket {
        let ticket = Ticket {
            deadline_ms,
            seq: self.next_seq,
        };
        self.next_seq = self.next_seq.wrapping_add(1);
        self.queue.insert(ticket, key);
        ticket
    }

    /// Forgets a scheduled expiry.
    pub fn cancel(&mut self, ticket: Ticket) {
        self.queue.remove(&ticket);
    }

    /// The earliest deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        self.queue.first_key_value().map(|(t, _)| t.deadline_ms)
    }

    /// Removes and returns the earliest key whose deadline is at or before `now_ms`.
    pub fn pop_due(&mut self, now_ms: u64) -> Option<Bytes> {
        let entry = self.queue.first_entry()?;
        if entry.key().deadline_ms > now_ms {
            return None;
        }
        Some(entry.remove())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_due_keys_earliest_first_and_skips_cancelled_ones() {
        let mut index = ExpiryIndex::default();
        index.schedule(Bytes::from_static(b"late"), 30);
        let cancelled = index.schedule(Bytes::from_static(b"gone"), 5);
        index.schedule(Bytes::from_static(b"b"), 10);
        index.schedule(Bytes::from_static(b"c"), 10);
        index.cancel(cancelled);
        assert_eq!(index.next_deadline(), Some(10));
        assert_eq!(index.pop_due(9), None);
        assert_eq!(index.pop_due(10).as_deref(), Some(&b"b"[..]));
        assert_eq!(index.pop_due(10).as_deref(), Some(&b"c"[..]));
        assert_eq!(index.pop_due(29), None);
        assert_eq!(index.next_deadline(), Some(30));
    }
}
