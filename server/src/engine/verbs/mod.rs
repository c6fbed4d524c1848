//! One module per verb, each an `impl Engine` block, plus what the verbs share.

mod delete;
mod get;
mod key_notify;
mod scan;
mod set;

use bytes::Bytes;
use statestore::protocol::{Hlc, Notification, ServiceError};

use super::clock::Stamp;
use super::{request_clocks, Engine, Notice, RequestContext};

impl Engine {
    /// Validates an optional `__ts` and merges it into the server clock (every verb but SET,
    /// which requires one).
    fn receive_optional_timestamp(
        &mut self,
        ctx: &RequestContext<'_>,
    ) -> Result<Option<Stamp>, ServiceError> {
        let timestamp = request_clocks::timestamp(ctx.timestamp, ctx.now_ms, self.config.max_skew)?;
        Ok(timestamp.map(|ts| self.clock.receive(&ts, ctx.now_ms)))
    }

    /// The version of `key`, if it exists.
    fn version_of(&self, key: &[u8]) -> Option<Hlc> {
        self.store
            .get(key)
            .map(|entry| self.clock.hlc(entry.version))
    }

    /// Tells the observers of a key that was just removed (deleted or expired). The DELETE
    /// carries a fresh version: the deletion is a change of the key like any other.
    pub(super) fn notify_deleted(&mut self, key: &Bytes, now_ms: u64, out: &mut Vec<Notice>) {
        let stamp = self.clock.tick(now_ms);
        if self.registry.is_observed(key) {
            let version = self.clock.hlc(stamp);
            self.registry
                .notify(key, &Notification::Delete, &version, out);
        }
    }
}
