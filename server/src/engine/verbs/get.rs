//! `GET key`.

use bytes::Bytes;
use statestore::protocol::{Response, ServiceError};

use crate::engine::{Engine, Outcome, RequestContext};

impl Engine {
    pub(in crate::engine) fn get(
        &mut self,
        key: &Bytes,
        ctx: &RequestContext<'_>,
    ) -> Result<Outcome, ServiceError> {
        self.receive_optional_timestamp(ctx)?;
        Ok(match self.store.get(key) {
            Some(entry) => Outcome::reply(
                Response::Value(entry.value.clone()),
                Some(self.clock.hlc(entry.version)),
            ),
            None => Outcome::reply(Response::Nil, None),
        })
    }
}
