//! `SET key value [NX|NEX] [PX ms]`.
//!
//! Checks, in order: `__ts` (required), `__ft`, the key's fencing token, the NX/NEX
//! condition, the quota. A request that fails any of them changes no key: in particular a
//! SET whose condition failed does not store its fencing token, so a key only becomes fenced
//! (or gets a newer token) through a SET that was applied.

use bytes::Bytes;
use statestore::protocol::{Hlc, Notification, Response, ServiceError, SetCondition, SetFlags};

use crate::engine::fencing::{self, TokenUpdate};
use crate::engine::request_clocks;
use crate::engine::store::Write;
use crate::engine::{DurableChange, Engine, Outcome, PersistedKey, RequestContext};

impl Engine {
    pub(in crate::engine) fn set(
        &mut self,
        key: &Bytes,
        value: &Bytes,
        flags: SetFlags,
        ctx: &RequestContext<'_>,
    ) -> Result<Outcome, ServiceError> {
        let max_skew = self.config.max_skew;
        let timestamp = request_clocks::timestamp(ctx.timestamp, ctx.now_ms, max_skew)?
            .ok_or(ServiceError::MissingTimestamp)?;
        let token = request_clocks::fencing_token(ctx.fencing_token, ctx.now_ms, max_skew)?;
        let version = self.clock.receive(&timestamp, ctx.now_ms);

        let existing = self.store.get(key);
        let update = fencing::check(
            existing.and_then(|entry| entry.fencing_token.as_ref()),
            token.as_ref(),
        )?;
        let allowed = match flags.condition {
            SetCondition::Always => true,
            SetCondition::OnlyIfAbsent => existing.is_none(),
            SetCondition::OnlyIfAbsentOrEqual => existing.is_none_or(|entry| entry.value == value),
        };
        if !allowed {
            let current = existing.map(|entry| self.clock.hlc(entry.version));
            return Ok(Outcome::reply(Response::Integer(-1), current));
        }
        if existing.is_none()
            && self
                .config
                .max_keys
                .is_some_and(|max| self.store.len() >= max)
        {
            return Err(ServiceError::QuotaExceeded);
        }

        let was_persisted = existing.is_some_and(|entry| entry.persisted);
        let persist = ctx.persist && self.journal.enabled();
        let deadline_ms = flags.expiry_ms.map(|ms| ctx.now_ms.saturating_add(ms));
        self.store.write(
            key,
            Write {
                value: value.clone(),
                version,
                new_fencing_token: token.filter(|_| update == TokenUpdate::Store),
                deadline_ms,
                persist,
            },
        );
        let version = self.clock.hlc(version);
        if persist {
            self.record_persisted(key, &version, deadline_ms);
        } else if was_persisted {
            self.journal.record(DurableChange::Remove(key.clone()));
        }
        let mut notices = Vec::new();
        self.registry.notify(
            key,
            &Notification::Set {
                value: value.clone(),
            },
            &version,
            &mut notices,
        );
        Ok(Outcome {
            response: Response::Ok,
            version: Some(version),
            notices,
        })
    }

    /// Records the stored state of `key` for durable storage (the stored key and value are
    /// the engine's own copies, shared rather than copied again).
    fn record_persisted(&mut self, key: &[u8], version: &Hlc, deadline_ms: Option<u64>) {
        let Some((key, entry)) = self.store.get_key_value(key) else {
            return;
        };
        let change = DurableChange::Put(PersistedKey {
            key: key.clone(),
            value: entry.value.clone(),
            version: version.clone(),
            fencing_token: entry.fencing_token.clone(),
            deadline_ms,
        });
        self.journal.record(change);
    }
}
