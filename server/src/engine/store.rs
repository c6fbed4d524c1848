//! The key-value map: values, versions, fencing tokens and deadlines, with the expiry index
//! and the byte-ordered key index (for SCAN) kept in step.
//!
//! The ordered index costs a `BTreeSet` insert when a key is created and a removal when it
//! goes; reads and overwrites of existing keys do not touch it.

use std::collections::BTreeSet;

use super::fast_hash::HashMap;
use std::ops::Bound;

use bytes::Bytes;
use statestore::protocol::Hlc;

use super::clock::Stamp;
use super::expiry::{ExpiryIndex, Ticket};

/// One stored key.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The value (copied out of the request payload that set it).
    pub value: Bytes,
    /// The version the server gave it.
    pub version: Stamp,
    /// The fencing token protecting it, once a SET carried one.
    pub fencing_token: Option<Hlc>,
    /// The last SET asked for persistence (`aio-persistence: true`).
    pub persisted: bool,
    /// Its place in the expiry index, if it has a deadline.
    expiry: Option<Ticket>,
}

/// What a successful SET writes.
#[derive(Debug)]
pub(crate) struct Write {
    /// The new value.
    pub value: Bytes,
    /// The new version.
    pub version: Stamp,
    /// A token that replaces the stored one; `None` keeps the stored token.
    pub new_fencing_token: Option<Hlc>,
    /// The new deadline; `None` clears any deadline.
    pub deadline_ms: Option<u64>,
    /// Whether the key is now persisted.
    pub persist: bool,
}

/// All keys.
#[derive(Debug, Default)]
pub(crate) struct Store {
    entries: HashMap<Bytes, Entry>,
    expiry: ExpiryIndex,
    /// Every key of `entries`, in byte order.
    order: BTreeSet<Bytes>,
}

impl Store {
    /// The entry of `key`. Expired keys are removed before every request, so a present entry
    /// is live.
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The stored key and entry of `key`.
    pub fn get_key_value(&self, key: &[u8]) -> Option<(&Bytes, &Entry)> {
        self.entries.get_key_value(key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Writes `key`, creating it or replacing its value, version and deadline.
    ///
    /// New keys and all values are copied out of the request payload: a slice would keep the
    /// whole network buffer it came from alive for as long as the key lives.
    pub fn write(&mut self, key: &Bytes, write: Write) {
        let stored_key = match self.entries.get_key_value(&key[..]) {
            Some((stored, _)) => stored.clone(),
            None => Bytes::copy_from_slice(key),
        };
        let value = Bytes::copy_from_slice(&write.value);
        let expiry = write
            .deadline_ms
            .map(|deadline| self.expiry.schedule(stored_key.clone(), deadline));
        match self.entries.get_mut(&key[..]) {
            Some(entry) => {
                if let Some(old) = entry.expiry.take() {
                    self.expiry.cancel(old);
                }
                entry.value = value;
                entry.version = write.version;
                entry.expiry = expiry;
                entry.persisted = write.persist;
                if let Some(token) = write.new_fencing_token {
                    entry.fencing_token = Some(token);
                }
            }
            None => {
                self.order.insert(stored_key.clone());
                self.entries.insert(
                    stored_key,
                    Entry {
                        value,
                        version: write.version,
                        fencing_token: write.new_fencing_token,
                        persisted: write.persist,
                        expiry,
                    },
                );
            }
        }
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.order.remove(key);
        if let Some(ticket) = entry.expiry {
            self.expiry.cancel(ticket);
        }
        Some(entry)
    }

    /// Removes and returns one key whose deadline is at or before `now_ms`.
    pub fn pop_expired(&mut self, now_ms: u64) -> Option<(Bytes, Entry)> {
        let key = self.expiry.pop_due(now_ms)?;
        // The index and the map change together, so the key is present; its ticket is
        // already out of the index.
        let (key, entry) = self.entries.remove_entry(&key[..])?;
        self.order.remove(&key);
        Some((key, entry))
    }

    /// The keys at or after `start`, in byte order.
    pub fn keys_from<'a>(&'a self, start: &[u8]) -> impl Iterator<Item = &'a Bytes> + 'a {
        self.order
            .range::<[u8], _>((Bound::Included(start), Bound::Unbounded))
    }

    /// The earliest deadline of any key.
    pub fn next_deadline(&self) -> Option<u64> {
        self.expiry.next_deadline()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(value: &'static [u8], deadline_ms: Option<u64>) -> Write {
        Write {
            value: Bytes::from_static(value),
            version: Stamp::default(),
            new_fencing_token: None,
            deadline_ms,
            persist: false,
        }
    }

    #[test]
    fn overwrite_replaces_the_deadline_and_remove_cancels_it() {
        let mut store = Store::default();
        let key = Bytes::from_static(b"k");
        store.write(&key, write(b"1", Some(10)));
        store.write(&key, write(b"2", Some(20)));
        assert_eq!(store.next_deadline(), Some(20));
        store.write(&key, write(b"3", None));
        assert_eq!(store.next_deadline(), None);
        store.write(&key, write(b"4", Some(5)));
        assert!(store.remove(b"k").is_some());
        assert_eq!(store.next_deadline(), None);
        assert_eq!(store.pop_expired(100).map(|(k, _)| k), None);
    }

    #[test]
    fn pop_expired_removes_the_entry() {
        let mut store = Store::default();
        store.write(&Bytes::from_static(b"a"), write(b"1", Some(10)));
        store.write(&Bytes::from_static(b"b"), write(b"2", None));
        let (key, entry) = store.pop_expired(10).unwrap();
        assert_eq!((&key[..], &entry.value[..]), (&b"a"[..], &b"1"[..]));
        assert_eq!(store.len(), 1);
        assert!(store.get(b"a").is_none());
        assert_eq!(store.keys_from(b"").collect::<Vec<_>>(), [&b"b"[..]]);
    }

    #[test]
    fn the_order_index_follows_creations_and_removals() {
        let mut store = Store::default();
        for key in [&b"b"[..], b"a", b"c", b"a"] {
            store.write(&Bytes::copy_from_slice(key), write(b"v", None));
        }
        store.remove(b"c");
        let from = |start: &[u8]| store.keys_from(start).cloned().collect::<Vec<_>>();
        assert_eq!(from(b""), [&b"a"[..], b"b"]);
        assert_eq!(from(b"a\x00"), [&b"b"[..]]);
    }
}
