//! KEYNOTIFY registrations per (client id, key), indexed both ways so that notifying a key's
//! observers and dropping a disconnected client are both proportional to what they touch.

use super::fast_hash::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use statestore::protocol::{Hlc, Notification};

use super::Notice;

/// Who observes what.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// Observers of each key, in registration order (notices go out in that order).
    by_key: HashMap<Bytes, Vec<Arc<str>>>,
    /// Keys each client observes; the map's keys are the interned client ids.
    by_client: HashMap<Arc<str>, HashSet<Bytes>>,
}

impl Registry {
    /// Registers `client_id` for `key`; registering twice is the same as once.
    pub fn register(&mut self, client_id: &str, key: &Bytes) {
        let client = match self.by_client.get_key_value(client_id) {
            Some((interned, _)) => interned.clone(),
            None => Arc::from(client_id),
        };
        if !self
            .by_client
            .entry(client.clone())
            .or_default()
            .insert(key.clone())
        {
            return;
        }
        self.by_key.entry(key.clone()).or_default().push(client);
    }

    /// Stops `client_id` observing `key`; false if it was not.
    pub fn unregister(&mut self, client_id: &str, key: &[u8]) -> bool {
        let Some(keys) = self.by_client.get_mut(client_id) else {
            return false;
        };
        if !keys.remove(key) {
            return false;
        }
        if keys.is_empty() {
            self.by_client.remove(client_id);
        }
        self.forget_observer(key, client_id);
        true
    }

    /// Drops every registration of `client_id`.
    pub fn drop_client(&mut self, client_id: &str) {
        let Some(keys) = self.by_client.remove(client_id) else {
            return;
        };
        for key in keys {
            self.forget_observer(&key, client_id);
        }
    }

    fn forget_observer(&mut self, key: &[u8], client_id: &str) {
        if let Some(observers) = self.by_key.get_mut(key) {
            observers.retain(|c| &**c != client_id);
            if observers.is_empty() {
                self.by_key.remove(key);
            }
        }
    }

    /// Whether anyone observes `key`.
    pub fn is_observed(&self, key: &[u8]) -> bool {
        self.by_key.contains_key(key)
    }

    /// Appends one notice per observer of `key` to `out`.
    pub fn notify(
        &self,
        key: &Bytes,
        notification: &Notification,
        version: &Hlc,
        out: &mut Vec<Notice>,
    ) {
        let Some(observers) = self.by_key.get(&key[..]) else {
            return;
        };
        out.extend(observers.iter().map(|client_id| Notice {
            client_id: client_id.clone(),
            key: key.clone(),
            notification: notification.clone(),
            version: version.clone(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observers(registry: &Registry, key: &'static [u8]) -> Vec<String> {
        let mut out = Vec::new();
        registry.notify(
            &Bytes::from_static(key),
            &Notification::Delete,
            &Hlc::new(1, "s"),
            &mut out,
        );
        out.into_iter().map(|n| n.client_id.to_string()).collect()
    }

    #[test]
    fn registration_is_idempotent_and_ordered() {
        let mut registry = Registry::default();
        let key = Bytes::from_static(b"k");
        registry.register("b", &key);
        registry.register("a", &key);
        registry.register("b", &key);
        assert_eq!(observers(&registry, b"k"), ["b", "a"]);
    }

    #[test]
    fn unregister_and_drop_client_clean_both_indexes() {
        let mut registry = Registry::default();
        let (k1, k2) = (Bytes::from_static(b"k1"), Bytes::from_static(b"k2"));
        registry.register("a", &k1);
        registry.register("a", &k2);
        registry.register("b", &k2);
        assert!(registry.unregister("a", b"k1"));
        assert!(!registry.unregister("a", b"k1"));
        assert!(!registry.is_observed(b"k1"));
        registry.drop_client("a");
        assert_eq!(observers(&registry, b"k2"), ["b"]);
        registry.drop_client("b");
        assert!(!registry.is_observed(b"k2"));
        assert!(registry.by_client.is_empty() && registry.by_key.is_empty());
    }
}
