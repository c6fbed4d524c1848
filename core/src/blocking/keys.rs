//! The blocking form of [`crate::Keys`]: an iterator of keys that fetches pages as needed.

use bytes::Bytes;

use super::Client;
use crate::Result;

/// The keys matching a glob pattern, from [`Client::keys`]: an [`Iterator`] of
/// `Result<Bytes>` that sends one `SCAN` request per page as the keys are consumed. See
/// [`crate::Keys`] for what a listing guarantees.
#[derive(Debug)]
pub struct Keys {
    client: Client,
    inner: crate::Keys,
}

impl Keys {
    pub(super) fn new(client: &Client, pattern: Bytes) -> Result<Keys> {
        Ok(Keys {
            inner: client.as_async().keys(pattern)?,
            client: client.clone(),
        })
    }

    /// The pattern being listed.
    pub fn pattern(&self) -> &Bytes {
        self.inner.pattern()
    }

    /// The next keys as the service paged them (never empty); `Ok(None)` at the end.
    pub fn next_page(&mut self) -> Result<Option<Vec<Bytes>>> {
        self.client.run(self.inner.next_page())
    }

    /// Every remaining key.
    pub fn collect_all(self) -> Result<Vec<Bytes>> {
        self.client.run(self.inner.collect_all())
    }
}

impl Iterator for Keys {
    type Item = Result<Bytes>;

    /// The next key, `Some(Err(..))` if its page could not be fetched (asking again retries
    /// that page), `None` at the end.
    fn next(&mut self) -> Option<Result<Bytes>> {
        self.client.run(self.inner.next()).transpose()
    }
}
