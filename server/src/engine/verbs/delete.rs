//! `DEL key` and `VDEL key value`: the same fencing rules as SET, but the token is never
//! stored since the key goes away.

use bytes::Bytes;
use statestore::protocol::{Response, ServiceError};

use crate::engine::fencing;
use crate::engine::request_clocks;
use crate::engine::{DurableChange, Engine, Outcome, RequestContext};

impl Engine {
    /// Deletes `key`; with `expected`, only if it holds that value (VDEL).
    pub(in crate::engine) fn delete(
        &mut self,
        key: &Bytes,
        expected: Option<&Bytes>,
        ctx: &RequestContext<'_>,
    ) -> Result<Outcome, ServiceError> {
        self.receive_optional_timestamp(ctx)?;
        let token =
            request_clocks::fencing_token(ctx.fencing_token, ctx.now_ms, self.config.max_skew)?;
        let Some(entry) = self.store.get(key) else {
            return Ok(Outcome::reply(Response::Integer(0), None));
        };
        fencing::check(entry.fencing_token.as_ref(), token.as_ref())?;
        let version = self.clock.hlc(entry.version);
        if expected.is_some_and(|value| entry.value != value) {
            return Ok(Outcome::reply(Response::Integer(-1), Some(version)));
        }
        if self.store.remove(key).is_some_and(|entry| entry.persisted) {
            self.journal.record(DurableChange::Remove(key.clone()));
        }
        let mut notices = Vec::new();
        self.notify_deleted(key, ctx.now_ms, &mut notices);
        Ok(Outcome {
            response: Response::Integer(1),
            version: Some(version),
            notices,
        })
    }
}
