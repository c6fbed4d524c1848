//! [`Lock::update`]: acquire a lock, read a key, write a new value with the fencing token,
//! release.

use bytes::Bytes;

use super::lock::{Lock, LockGuard};
use crate::client::{Client, DeleteOptions, SetOptions};
use crate::protocol::Hlc;
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
        let txn = self.begin_update(key).await?;
        let new = txn.run_callback(|| f(txn.old_value().cloned()));
        txn.commit(new).await
    }

    /// Fails with [`Error::InvalidArgument`] for a key that [`Lock::begin_update`] refuses
    /// (empty, or the lock's own key): bindings check when the call is made, so that an
    /// asynchronous update is refused before it starts.
    pub fn check_update_key(&self, key: &Bytes) -> Result<()> {
        if key.is_empty() {
            return Err(Error::InvalidArgument("the key is empty".into()));
        }
        if *key == *self.name() {
            return Err(Error::InvalidArgument(
                "a lock cannot protect its own key: update another key".into(),
            ));
        }
        Ok(())
    }

    /// The first half of [`Lock::update`], for callers that cannot pass a closure (a C
    /// callback, a JavaScript function on its own thread): acquires the lock and reads `key`.
    /// Finish with [`UpdateTxn::commit`] or [`UpdateTxn::abort`]; dropping the transaction
    /// releases the lock in the background and writes nothing.
    ///
    /// ```no_run
    /// # use statestore::lease::Lock;
    /// # async fn demo(lock: Lock) -> statestore::Result<()> {
    /// let txn = lock.begin_update("counter").await?;
    /// let next = match txn.old_value() {
    ///     Some(old) => format!("{}+", String::from_utf8_lossy(old)),
    ///     None => "1".to_string(),
    /// };
    /// txn.commit(Some(next.into())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn begin_update(&self, key: impl Into<Bytes>) -> Result<UpdateTxn> {
        let key = key.into();
        self.check_update_key(&key)?;
        let guard = self.lock().await?;
        let old = match self.client().get(key.clone()).await {
            Ok(old) => old.map(|v| v.value),
            Err(error) => {
                release(guard).await;
                return Err(error);
            }
        };
        Ok(UpdateTxn {
            client: self.client().clone(),
            guard,
            key,
            old,
        })
    }
}

/// A [`Lock::begin_update`] in progress: the lock is held and the key's old value read.
#[derive(Debug)]
pub struct UpdateTxn {
    client: Client,
    guard: LockGuard,
    key: Bytes,
    old: Option<Bytes>,
}

impl UpdateTxn {
    /// The key being updated.
    pub fn key(&self) -> &Bytes {
        &self.key
    }

    /// The key's value when the lock was taken (`None`: absent).
    pub fn old_value(&self) -> Option<&Bytes> {
        self.old.as_ref()
    }

    /// The fencing token the write will carry.
    pub fn fencing_token(&self) -> &Hlc {
        self.guard.fencing_token()
    }

    /// Runs `f`, the caller's update function, on this thread. While it runs, waiting for
    /// this same lock on this thread ([`Lock::lock`], [`Lock::update`], on any `Lock` of
    /// the same name and client) fails at once with [`Error::InvalidArgument`]: it could only
    /// end when `f` returns, so it would wait for itself forever.
    pub fn run_callback<R>(&self, f: impl FnOnce() -> R) -> R {
        let _scope = self.enter_callback();
        f()
    }

    /// [`UpdateTxn::run_callback`] as a scope, for a host that calls its update function
    /// itself: the function runs on this thread until the scope is dropped.
    pub fn enter_callback(&self) -> super::CallbackScope {
        super::reentry::enter(self.client.client_id(), self.guard.name())
    }

    /// Writes `new_value` with the fencing token (`Some`: SET; `None`: DEL, if the key
    /// existed), releases the lock, and returns what was written. If the lock was lost
    /// meanwhile, nothing is written and the call fails with [`Error::NotHeld`].
    pub async fn commit(self, new_value: Option<Bytes>) -> Result<Option<Bytes>> {
        let written = write(
            &self.client,
            &self.guard,
            self.key,
            self.old.is_some(),
            new_value,
        )
        .await;
        release(self.guard).await;
        written
    }

    /// Releases the lock without writing.
    pub async fn abort(self) -> Result<()> {
        self.guard.release().await
    }
}

async fn release(guard: LockGuard) {
    if let Err(error) = guard.release().await {
        // The write's outcome matters more; the lock expires after its TTL anyway.
        tracing::debug!(%error, "releasing the lock after an update failed");
    }
}

async fn write(
    client: &Client,
    guard: &LockGuard,
    key: Bytes,
    existed: bool,
    new: Option<Bytes>,
) -> Result<Option<Bytes>> {
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
