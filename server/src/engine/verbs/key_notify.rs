//! `KEYNOTIFY key [STOP]`. The key need not exist: observing a key that is created later is
//! how a client waits for it.

use bytes::Bytes;
use statestore::protocol::{Response, ServiceError};

use crate::engine::{Engine, Outcome, RequestContext};

impl Engine {
    pub(in crate::engine) fn key_notify(
        &mut self,
        key: &Bytes,
        stop: bool,
        ctx: &RequestContext<'_>,
    ) -> Result<Outcome, ServiceError> {
        self.receive_optional_timestamp(ctx)?;
        let response = if !stop {
            self.registry.register(ctx.client_id, key);
            Response::Ok
        } else if self.registry.unregister(ctx.client_id, key) {
            Response::Ok
        } else {
            // The service answers a STOP for a key it was not watching like a DEL of a
            // missing key.
            Response::Integer(0)
        };
        Ok(Outcome::reply(response, self.version_of(key)))
    }
}
