//! `SCAN pattern [token]`: one page of the keys matching a glob pattern, in byte order.
//!
//! The token is the position to resume at (see `cursor`): every key present for the whole
//! scan is listed exactly once however keys come and go between pages. Keys past their
//! deadline were removed before the request, so they are never listed. A token this server
//! did not issue gets `-ERR invalid continuation token`. Patterns are in the service's
//! dialect (see `glob`); an invalid one gets `-ERR invalid pattern "<pattern>": <reason>`.

use bytes::Bytes;
use statestore::protocol::{Response, ServiceError};

use crate::engine::glob::Glob;
use crate::engine::pager::{self, Limits};
use crate::engine::{cursor, Engine, Outcome, RequestContext};

/// Keys examined per page, as a multiple of the page's key limit.
const EXAMINED_PER_KEY: usize = 10;

impl Engine {
    pub(in crate::engine) fn scan(
        &mut self,
        pattern: &Bytes,
        token: Option<&Bytes>,
        ctx: &RequestContext<'_>,
    ) -> Result<Outcome, ServiceError> {
        self.receive_optional_timestamp(ctx)?;
        // Compiled once per request: every key of the page is matched against it.
        let glob = Glob::compile(pattern).map_err(ServiceError::Unknown)?;
        let resume_at = token.map(|token| cursor::decode(token)).transpose()?;
        // Matching keys all start with the pattern's literal prefix: only that range of the
        // ordered keys is visited.
        let prefix = glob.literal_prefix();
        let start = match resume_at {
            Some(position) if position.as_slice() > prefix => position,
            _ => prefix.to_vec(),
        };
        let keys = self.config.scan_page_keys.max(1);
        let limits = Limits {
            keys,
            examined: keys.saturating_mul(EXAMINED_PER_KEY),
            bytes: self.config.scan_page_bytes,
        };
        let candidates = self
            .store
            .keys_from(&start)
            .take_while(|key| key.starts_with(prefix));
        let page = pager::page(candidates, &glob, limits);
        Ok(Outcome::reply(Response::Scan(page), None))
    }
}
