//! Listing keys by glob pattern (`SCAN`), one page per request, fetched as they are consumed.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;

use super::call::{unexpected, Invocation};
use super::shared::{ClientInner, Shared};
use crate::protocol::{Request, Response, ScanPage};
use crate::{Error, Result};

type PageFuture = Pin<Box<dyn Future<Output = Result<ScanPage>> + Send>>;

/// The keys matching a glob pattern, from [`Client::keys`](super::Client::keys): a lazy pager that
/// sends one `SCAN` request per page, only when the keys already fetched are used up.
///
/// Consume it key by key ([`Keys::next`], or as a [`futures_core::Stream`] of
/// `Result<Bytes>`), page by page ([`Keys::next_page`]), or all at once
/// ([`Keys::collect_all`]). The continuation token stays inside.
///
/// The service lists every key that exists for the whole listing exactly once; keys created
/// or deleted meanwhile may or may not appear. A failed page (timeout, connection lost) can
/// be asked for again: the listing resumes where it stopped. Each page has the client's
/// default timeout; page requests are reads, so one lost with the connection is sent again.
/// A listing keeps its client's connection open.
pub struct Keys {
    /// Keeps the connection open while keys are listed.
    client: Arc<ClientInner>,
    pattern: Bytes,
    /// Where the next page starts (`None`: at the beginning).
    token: Option<Bytes>,
    /// The last page has been received.
    done: bool,
    /// Keys received but not yet handed out.
    buffered: VecDeque<Bytes>,
    /// The page request under way, kept when the caller stops waiting for it.
    in_flight: Option<PageFuture>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("pattern", &self.pattern)
            .field("done", &self.done)
            .field("buffered", &self.buffered.len())
            .finish_non_exhaustive()
    }
}

impl Keys {
    pub(super) fn new(client: &Arc<ClientInner>, pattern: Bytes) -> Result<Keys> {
        if pattern.is_empty() {
            return Err(Error::InvalidArgument(
                "the pattern is empty (`*` lists every key)".into(),
            ));
        }
        Ok(Keys {
            client: client.clone(),
            pattern,
            token: None,
            done: false,
            buffered: VecDeque::new(),
            in_flight: None,
        })
    }

    /// The pattern being listed.
    pub fn pattern(&self) -> &Bytes {
        &self.pattern
    }

    /// The next key; `Ok(None)` once every page has been consumed.
    pub async fn next(&mut self) -> Result<Option<Bytes>> {
        loop {
            if let Some(key) = self.buffered.pop_front() {
                return Ok(Some(key));
            }
            if self.done {
                return Ok(None);
            }
            poll_fn(|cx| self.poll_fetch(cx)).await?;
        }
    }

    /// The next keys, as the service paged them (never an empty page: empty pages the
    /// service sends on the way are skipped); `Ok(None)` at the end. Keys already taken one
    /// by one are not repeated.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Bytes>>> {
        loop {
            if !self.buffered.is_empty() {
                return Ok(Some(self.buffered.drain(..).collect()));
            }
            if self.done {
                return Ok(None);
            }
            poll_fn(|cx| self.poll_fetch(cx)).await?;
        }
    }

    /// Every remaining key.
    pub async fn collect_all(mut self) -> Result<Vec<Bytes>> {
        let mut keys = Vec::new();
        while let Some(page) = self.next_page().await? {
            keys.extend(page);
        }
        Ok(keys)
    }

    /// Whether every page has been received (buffered keys may remain).
    pub fn is_exhausted(&self) -> bool {
        self.done
    }

    /// Fetches the next page into `buffered`.
    fn poll_fetch(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let in_flight = self.in_flight.get_or_insert_with(|| {
            let shared = self.client.shared.clone();
            let request = Request::Scan {
                pattern: self.pattern.clone(),
                token: self.token.clone(),
            };
            Box::pin(async move { fetch(&shared, request).await })
        });
        let result = ready!(in_flight.as_mut().poll(cx));
        self.in_flight = None;
        let page = result?;
        self.done = page.token.is_none();
        self.token = page.token;
        self.buffered.extend(page.keys);
        Poll::Ready(Ok(()))
    }
}

async fn fetch(shared: &Shared, request: Request) -> Result<ScanPage> {
    let answer = shared
        .call(Invocation {
            request,
            fencing_token: None,
            persist: false,
            timeout: None,
            idempotent: true,
        })
        .await?;
    match answer.response {
        Response::Scan(page) => Ok(page),
        other => Err(unexpected("SCAN", &other)),
    }
}

impl futures_core::Stream for Keys {
    type Item = Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        loop {
            if let Some(key) = self.buffered.pop_front() {
                return Poll::Ready(Some(Ok(key)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            if let Err(error) = ready!(self.poll_fetch(cx)) {
                return Poll::Ready(Some(Err(error)));
            }
        }
    }
}
