//! The changes to persisted keys (`aio-persistence: true`) that durable storage must follow,
//! collected while requests are applied and taken by the service after each batch.
//!
//! A key stops being persisted when it is deleted, expires, or is overwritten by a SET
//! without the option: each of these is a [`DurableChange::Remove`], so that the key cannot
//! come back after a restart.

use bytes::Bytes;
use statestore::protocol::Hlc;

/// Everything needed to bring a persisted key back after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistedKey {
    /// The key.
    pub key: Bytes,
    /// Its value.
    pub value: Bytes,
    /// Its version (the node id is the server's own on restore).
    pub version: Hlc,
    /// The fencing token protecting it.
    pub fencing_token: Option<Hlc>,
    /// When it expires, ms since the Unix epoch.
    pub deadline_ms: Option<u64>,
}

/// One change for durable storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurableChange {
    /// The key was written with persistence: store it (replacing what was stored).
    Put(PersistedKey),
    /// The key is no longer persisted: forget it.
    Remove(Bytes),
}

/// Changes not yet taken by the service; records nothing unless enabled.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    enabled: bool,
    changes: Vec<DurableChange>,
}

impl Journal {
    /// A journal that records only when `enabled`.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            changes: Vec::new(),
        }
    }

    /// Whether persistence is on (otherwise `aio-persistence` is ignored).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records a change.
    pub fn record(&mut self, change: DurableChange) {
        if self.enabled {
            self.changes.push(change);
        }
    }

    /// Takes every change recorded so far, oldest first.
    pub fn take(&mut self) -> Vec<DurableChange> {
        std::mem::take(&mut self.changes)
    }
}
