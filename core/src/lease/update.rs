//! [`Lock::update`]: acquire a lock, read a key, write a new value with the fencing token,
//! release.

use bytes::Bytes;

use super::lock::{Lock, LockGuard};
use crate::client::{Client, DeleteOptions, SetOptions};
use crate::{Error, Result};

impl Lock {
    /// Updates `key` under the lock: acquires it (waiting as [`Lock::lock`] does), reads the
    /// key, calls `f` with its value (`None`: absent), writes the result with the fencing
    /// token (`Some`: SET, `None`: DEL), releases the lock, and returns what was written.
    ///
    /// Every writer of `key` must go through the lock: once written with a fencing token, the
    /// key refuses writes without one ([`ServiceError::FencingTokenRequired`]), and writes by
    /// a holder that lost the lock after the next holder wrote
    /// ([`ServiceError::FencingTokenLowerVersion`]). If the lock is lost before the write,
    /// nothing is written and the call fails with [`Error::NotHeld`].
    ///
    /// [`ServiceError::FencingTokenRequired`]: crate::ServiceError::FencingTokenRequired
    /// [`ServiceError::FencingTokenLowerVersion`]: crate::ServiceError::FencingTokenLowerVersion
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # async fn demo(lock: Lock) -> statestore::Result<()> {
    /// // A counter that many processes increment.
    /// let written = lock
    ///     .update("counter", |old| {
    ///         let n: u64 = old
    ///             .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
    ///             .unwrap_or(0);
    ///         Some((n + 1).to_string().into())
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn update<F>(&self, key: impl Into<Bytes>, f: F) -> Result<Option<Bytes>>
    where
        F: FnOnce(Option<Bytes>) -> Option<Bytes>,
    {
        let key = key.into();
        if key.is_empty() {
            return Err(Error::InvalidArgument("the key is empty".into()));
        }
        if key == *self.name() {
            return Err(Error::InvalidArgument(
                "a lock cannot protect its own key: update another key".into(),
            ));
        }
        let guard = self.lock().await?;
        let written = write(self.client(), &guard, key, f).await;
        if let Err(error) = guard.release().await {
            // The write's outcome matters more; the lock expires after its TTL anyway.
            tracing::debug!(%error, "releasing the lock after an update failed");
        }
        written
    }
}

async fn write<F>(client: &Client, guard: &LockGuard, key: Bytes, f: F) -> Result<Option<Bytes>>
where
    F: FnOnce(Option<Bytes>) -> Option<Bytes>,
{
    let old = client.get(key.clone()).await?.map(|v| v.value);
    let existed = old.is_some();
    let new = f(old);
    guard.ensure_held()?;
    let token = guard.fencing_token().clone();
    match &new {
        Some(value) => {
            client
                .set(
                    key,
                    value.clone(),
                    SetOptions::default().fencing_token(token),
                )
                .await?;
        }
        None if existed => {
            client
                .delete(key, DeleteOptions::default().fencing_token(token))
                .await?;
        }
        None => {}
    }
    Ok(new)
}
