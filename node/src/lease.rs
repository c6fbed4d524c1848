//! Leases, locks (with the two-phase update that lets a JavaScript function compute the new
//! value) and elections: core's `statestore::lease`, each call as a Promise and a `…Sync` twin.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;
use statestore::bindings::{EventStream, Pending};
use statestore::lease::{
    AcquireOutcome, Election, Lease, LeaseState, Lock, LockGuard, Loss, UpdateTxn,
};
use statestore::{Client, Error};

use crate::bridge::{self, buffer, bytes, millis, millis_opt, JsBytes};
use crate::client::NativeClient;
use crate::events::{js_loss, JsLoss, NativeEvents};

/// The result of one acquisition attempt.
#[napi(object)]
pub struct JsAcquire {
    pub acquired: bool,
    /// The fencing token when acquired.
    pub fencing_token: Option<String>,
    /// The current holder when not acquired (if known).
    pub holder: Option<Buffer>,
}

fn acquire_result(outcome: AcquireOutcome) -> JsAcquire {
    match outcome {
        AcquireOutcome::Acquired { token } => JsAcquire {
            acquired: true,
            fencing_token: Some(token.to_string()),
            holder: None,
        },
        AcquireOutcome::HeldBy { holder } => JsAcquire {
            acquired: false,
            fencing_token: None,
            holder: holder.as_ref().map(buffer),
        },
    }
}

fn holder_result(holder: Option<Bytes>) -> Option<Buffer> {
    holder.as_ref().map(buffer)
}

fn client_of(native: &NativeClient) -> Client {
    Client::clone(&native.client)
}

// ---------------------------------------------------------------------------------------------
// Lease

#[napi]
pub struct NativeLease {
    lease: Lease,
}

#[napi]
impl NativeLease {
    #[napi(constructor)]
    pub fn new(
        env: &Env,
        client: &NativeClient,
        key: JsBytes,
        holder: JsBytes,
        auto_renew: bool,
    ) -> napi::Result<Self> {
        let lease = bridge::sync(
            env,
            Lease::new(&client_of(client), bytes(key), bytes(holder)),
        )?;
        Ok(NativeLease {
            lease: lease.auto_renew(auto_renew),
        })
    }

    fn try_acquire_pending(&self, ttl: f64) -> Pending<AcquireOutcome> {
        let lease = self.lease.clone();
        Pending::spawn(async move { lease.try_acquire(millis("ttl", ttl)?).await })
    }

    #[napi]
    pub fn try_acquire<'env>(&self, env: &'env Env, ttl: f64) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.try_acquire_pending(ttl), |_, o| {
            Ok(acquire_result(o))
        })
    }

    #[napi]
    pub fn try_acquire_sync(&self, env: &Env, ttl: f64) -> napi::Result<JsAcquire> {
        bridge::wait(env, self.try_acquire_pending(ttl)).map(acquire_result)
    }

    fn acquire_pending(&self, ttl: f64, timeout: Option<f64>) -> Pending<String> {
        let lease = self.lease.clone();
        Pending::spawn(async move {
            let token = match timeout {
                Some(t) => {
                    lease
                        .acquire_timeout(millis("ttl", ttl)?, millis("timeout", t)?)
                        .await?
                }
                None => lease.acquire(millis("ttl", ttl)?).await?,
            };
            Ok(token.to_string())
        })
    }

    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        ttl: f64,
        timeout: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.acquire_pending(ttl, timeout), |_, t| Ok(t))
    }

    #[napi]
    pub fn acquire_sync(&self, env: &Env, ttl: f64, timeout: Option<f64>) -> napi::Result<String> {
        bridge::wait(env, self.acquire_pending(ttl, timeout))
    }

    fn renew_pending(&self) -> Pending<()> {
        let lease = self.lease.clone();
        Pending::spawn(async move { lease.renew().await })
    }

    #[napi]
    pub fn renew<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.renew_pending(), |_, ()| Ok(()))
    }

    #[napi]
    pub fn renew_sync(&self, env: &Env) -> napi::Result<()> {
        bridge::wait(env, self.renew_pending())
    }

    fn release_pending(&self) -> Pending<bool> {
        let lease = self.lease.clone();
        Pending::spawn(async move { lease.release().await })
    }

    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.release_pending(), |_, r| Ok(r))
    }

    #[napi]
    pub fn release_sync(&self, env: &Env) -> napi::Result<bool> {
        bridge::wait(env, self.release_pending())
    }

    fn holder_pending(&self) -> Pending<Option<Bytes>> {
        let lease = self.lease.clone();
        Pending::spawn(async move { lease.holder().await })
    }

    #[napi]
    pub fn holder<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.holder_pending(), |_, h| Ok(holder_result(h)))
    }

    #[napi]
    pub fn holder_sync(&self, env: &Env) -> napi::Result<Option<Buffer>> {
        bridge::wait(env, self.holder_pending()).map(holder_result)
    }

    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<String> {
        self.lease.fencing_token().map(|t| t.to_string())
    }

    #[napi(getter)]
    pub fn is_held(&self) -> bool {
        self.lease.is_held()
    }

    #[napi(getter)]
    pub fn key(&self) -> Buffer {
        buffer(self.lease.key())
    }

    #[napi(getter)]
    pub fn holder_name(&self) -> Buffer {
        buffer(self.lease.holder_name())
    }

    /// A stream with one `lost` event when the lease is lost (ends without one on release).
    #[napi]
    pub fn loss_events(&self, env: &Env) -> NativeEvents {
        NativeEvents::new(env, EventStream::from_lease_loss(&self.lease))
    }

    /// `{ state: 'notHeld' | 'held' | 'lost', fencingToken, loss }`.
    #[napi(getter)]
    pub fn state(&self) -> JsLeaseState {
        match self.lease.state() {
            LeaseState::Held { token } => JsLeaseState {
                state: "held".into(),
                fencing_token: Some(token.to_string()),
                loss: None,
            },
            LeaseState::Lost(loss) => JsLeaseState {
                state: "lost".into(),
                fencing_token: None,
                loss: Some(js_loss(&loss)),
            },
            _ => JsLeaseState {
                state: "notHeld".into(),
                fencing_token: None,
                loss: None,
            },
        }
    }

    fn lost_pending(&self, timeout: Option<f64>) -> Pending<Option<Loss>> {
        let lease = self.lease.clone();
        Pending::spawn(async move {
            match millis_opt("timeout", timeout)? {
                None => Ok(lease.lost().await),
                Some(limit) => tokio::time::timeout(limit, lease.lost())
                    .await
                    .map_err(|_| Error::Timeout(limit)),
            }
        })
    }

    /// Waits until the lease is not held: the loss, or `null` if it was released (or never
    /// held); `STATESTORE_TIMEOUT` if still held after `timeout` ms.
    #[napi]
    pub fn lost<'env>(&self, env: &'env Env, timeout: Option<f64>) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.lost_pending(timeout), |_, l| {
            Ok(l.as_ref().map(js_loss))
        })
    }

    #[napi]
    pub fn lost_sync(&self, env: &Env, timeout: Option<f64>) -> napi::Result<Option<JsLoss>> {
        bridge::wait(env, self.lost_pending(timeout)).map(|l| l.as_ref().map(js_loss))
    }
}

/// A lease's state.
#[napi(object)]
pub struct JsLeaseState {
    /// `'notHeld'`, `'held'` or `'lost'`.
    pub state: String,
    pub fencing_token: Option<String>,
    pub loss: Option<JsLoss>,
}

// ---------------------------------------------------------------------------------------------
// Lock

#[napi]
pub struct NativeLock {
    lock: Lock,
}

#[napi]
impl NativeLock {
    #[napi(constructor)]
    pub fn new(
        env: &Env,
        client: &NativeClient,
        name: JsBytes,
        ttl: f64,
        timeout: Option<f64>,
        auto_renew: Option<bool>,
    ) -> napi::Result<Self> {
        let ttl = bridge::sync(env, millis("ttl", ttl))?;
        let mut lock = bridge::sync(env, Lock::new(&client_of(client), bytes(name), ttl))?;
        if let Some(timeout) = timeout {
            lock = lock.timeout(bridge::sync(env, millis("timeout", timeout))?);
        }
        if let Some(on) = auto_renew {
            lock = lock.auto_renew(on);
        }
        Ok(NativeLock { lock })
    }

    fn lock_pending(&self) -> Pending<LockGuard> {
        let lock = self.lock.clone();
        Pending::spawn(async move { lock.lock().await })
    }

    #[napi]
    pub fn lock<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.lock_pending(), |_, g| Ok(NativeGuard::new(g)))
    }

    #[napi]
    pub fn lock_sync(&self, env: &Env) -> napi::Result<NativeGuard> {
        bridge::wait(env, self.lock_pending()).map(NativeGuard::new)
    }

    fn try_lock_pending(&self) -> Pending<Option<LockGuard>> {
        let lock = self.lock.clone();
        Pending::spawn(async move { lock.try_lock().await })
    }

    #[napi]
    pub fn try_lock<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.try_lock_pending(), |_, g| {
            Ok(g.map(NativeGuard::new))
        })
    }

    #[napi]
    pub fn try_lock_sync(&self, env: &Env) -> napi::Result<Option<NativeGuard>> {
        bridge::wait(env, self.try_lock_pending()).map(|g| g.map(NativeGuard::new))
    }

    fn holder_pending(&self) -> Pending<Option<Bytes>> {
        let lock = self.lock.clone();
        Pending::spawn(async move { lock.holder().await })
    }

    #[napi]
    pub fn holder<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.holder_pending(), |_, h| Ok(holder_result(h)))
    }

    #[napi]
    pub fn holder_sync(&self, env: &Env) -> napi::Result<Option<Buffer>> {
        bridge::wait(env, self.holder_pending()).map(holder_result)
    }

    fn begin_update_pending(&self, key: JsBytes) -> Pending<UpdateTxn> {
        let lock = self.lock.clone();
        let key = bytes(key);
        Pending::spawn(async move { lock.begin_update(key).await })
    }

    /// First phase of `update(key, fn)`: acquires the lock and reads the key.
    #[napi]
    pub fn begin_update<'env>(&self, env: &'env Env, key: JsBytes) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.begin_update_pending(key), |_, t| {
            Ok(NativeUpdate::new(t))
        })
    }

    #[napi]
    pub fn begin_update_sync(&self, env: &Env, key: JsBytes) -> napi::Result<NativeUpdate> {
        bridge::wait(env, self.begin_update_pending(key)).map(NativeUpdate::new)
    }

    #[napi(getter)]
    pub fn name(&self) -> Buffer {
        buffer(self.lock.name())
    }
}

/// A held lock. Release it with `release()`; if the object is collected while held, the lock
/// is released in the background.
#[napi]
pub struct NativeGuard {
    guard: Arc<Mutex<Option<LockGuard>>>,
    token: String,
    lease: Lease,
}

impl NativeGuard {
    fn new(guard: LockGuard) -> NativeGuard {
        NativeGuard {
            token: guard.fencing_token().to_string(),
            lease: guard.lease().clone(),
            guard: Arc::new(Mutex::new(Some(guard))),
        }
    }

    fn release_pending(&self) -> Pending<()> {
        let guard = self.guard.lock().unwrap_or_else(|e| e.into_inner()).take();
        Pending::spawn(async move {
            match guard {
                Some(guard) => guard.release().await,
                None => Ok(()),
            }
        })
    }

    fn renew_pending(&self) -> Pending<()> {
        let lease = self.lease.clone();
        if self
            .guard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            return Pending::ready(Err(Error::NotHeld("the lock was released".into())));
        }
        Pending::spawn(async move { lease.renew().await })
    }
}

#[napi]
impl NativeGuard {
    #[napi(getter)]
    pub fn fencing_token(&self) -> String {
        self.token.clone()
    }

    #[napi(getter)]
    pub fn is_held(&self) -> bool {
        self.guard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
            && self.lease.is_held()
    }

    #[napi(getter)]
    pub fn holder_name(&self) -> Buffer {
        buffer(self.lease.holder_name())
    }

    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.release_pending(), |_, ()| Ok(()))
    }

    #[napi]
    pub fn release_sync(&self, env: &Env) -> napi::Result<()> {
        bridge::wait(env, self.release_pending())
    }

    #[napi]
    pub fn renew<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.renew_pending(), |_, ()| Ok(()))
    }

    #[napi]
    pub fn renew_sync(&self, env: &Env) -> napi::Result<()> {
        bridge::wait(env, self.renew_pending())
    }

    /// A stream with one `lost` event if the lock is lost while held.
    #[napi]
    pub fn loss_events(&self, env: &Env) -> NativeEvents {
        NativeEvents::new(env, EventStream::from_lease_loss(&self.lease))
    }
}

/// An update in progress: the lock is held and the key's old value read; `commit` writes the
/// new value with the fencing token and releases, `abort` releases without writing.
#[napi]
pub struct NativeUpdate {
    txn: Arc<Mutex<Option<UpdateTxn>>>,
    old: Option<Bytes>,
    token: String,
}

impl NativeUpdate {
    fn new(txn: UpdateTxn) -> NativeUpdate {
        NativeUpdate {
            old: txn.old_value().cloned(),
            token: txn.fencing_token().to_string(),
            txn: Arc::new(Mutex::new(Some(txn))),
        }
    }

    fn take(&self) -> Result<UpdateTxn, Error> {
        self.txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                Error::InvalidArgument("this update was already committed or aborted".into())
            })
    }

    fn commit_pending(&self, value: Option<JsBytes>) -> Pending<Option<Bytes>> {
        match self.take() {
            Ok(txn) => {
                let value = value.map(bytes);
                Pending::spawn(async move { txn.commit(value).await })
            }
            Err(error) => Pending::ready(Err(error)),
        }
    }

    fn abort_pending(&self) -> Pending<()> {
        match self.take() {
            Ok(txn) => Pending::spawn(async move { txn.abort().await }),
            Err(error) => Pending::ready(Err(error)),
        }
    }
}

#[napi]
impl NativeUpdate {
    #[napi(getter)]
    pub fn old_value(&self) -> Option<Buffer> {
        self.old.as_ref().map(buffer)
    }

    #[napi(getter)]
    pub fn fencing_token(&self) -> String {
        self.token.clone()
    }

    /// Writes `value` (`null`: deletes the key) with the fencing token, then releases.
    #[napi]
    pub fn commit<'env>(
        &self,
        env: &'env Env,
        value: Option<JsBytes>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.commit_pending(value), |_, w| Ok(holder_result(w)))
    }

    #[napi]
    pub fn commit_sync(&self, env: &Env, value: Option<JsBytes>) -> napi::Result<Option<Buffer>> {
        bridge::wait(env, self.commit_pending(value)).map(holder_result)
    }

    #[napi]
    pub fn abort<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.abort_pending(), |_, ()| Ok(()))
    }

    #[napi]
    pub fn abort_sync(&self, env: &Env) -> napi::Result<()> {
        bridge::wait(env, self.abort_pending())
    }
}

// ---------------------------------------------------------------------------------------------
// Election

#[napi]
pub struct NativeElection {
    election: Election,
}

#[napi]
impl NativeElection {
    #[napi(constructor)]
    pub fn new(
        env: &Env,
        client: &NativeClient,
        name: JsBytes,
        candidate: JsBytes,
        ttl: f64,
    ) -> napi::Result<Self> {
        let election = bridge::sync(
            env,
            Election::new(
                &client_of(client),
                bytes(name),
                bytes(candidate),
                bridge::sync(env, millis("ttl", ttl))?,
            ),
        )?;
        Ok(NativeElection { election })
    }

    fn campaign_pending(&self, timeout: Option<f64>) -> Pending<String> {
        let election = self.election.clone();
        Pending::spawn(async move {
            let token = match timeout {
                Some(t) => election.campaign_timeout(millis("timeout", t)?).await?,
                None => election.campaign().await?,
            };
            Ok(token.to_string())
        })
    }

    #[napi]
    pub fn campaign<'env>(
        &self,
        env: &'env Env,
        timeout: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.campaign_pending(timeout), |_, t| Ok(t))
    }

    #[napi]
    pub fn campaign_sync(&self, env: &Env, timeout: Option<f64>) -> napi::Result<String> {
        bridge::wait(env, self.campaign_pending(timeout))
    }

    fn try_campaign_pending(&self) -> Pending<AcquireOutcome> {
        let election = self.election.clone();
        Pending::spawn(async move { election.try_campaign().await })
    }

    #[napi]
    pub fn try_campaign<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.try_campaign_pending(), |_, o| {
            Ok(acquire_result(o))
        })
    }

    #[napi]
    pub fn try_campaign_sync(&self, env: &Env) -> napi::Result<JsAcquire> {
        bridge::wait(env, self.try_campaign_pending()).map(acquire_result)
    }

    fn resign_pending(&self) -> Pending<()> {
        let election = self.election.clone();
        Pending::spawn(async move { election.resign().await })
    }

    #[napi]
    pub fn resign<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.resign_pending(), |_, ()| Ok(()))
    }

    #[napi]
    pub fn resign_sync(&self, env: &Env) -> napi::Result<()> {
        bridge::wait(env, self.resign_pending())
    }

    fn leader_pending(&self) -> Pending<Option<Bytes>> {
        let election = self.election.clone();
        Pending::spawn(async move { election.leader().await })
    }

    #[napi]
    pub fn leader<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.leader_pending(), |_, h| Ok(holder_result(h)))
    }

    #[napi]
    pub fn leader_sync(&self, env: &Env) -> napi::Result<Option<Buffer>> {
        bridge::wait(env, self.leader_pending()).map(holder_result)
    }

    fn observe_pending(&self) -> Pending<EventStream> {
        let election = self.election.clone();
        Pending::spawn(async move {
            let key = election.name().clone();
            Ok(EventStream::from_leader(election.observe().await?, key))
        })
    }

    /// Leadership changes: `elected` (with `holder`) and `vacant` events.
    #[napi]
    pub fn observe<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.observe_pending(), |env, s| {
            Ok(NativeEvents::new(env, s))
        })
    }

    #[napi]
    pub fn observe_sync(&self, env: &Env) -> napi::Result<NativeEvents> {
        bridge::wait(env, self.observe_pending()).map(|s| NativeEvents::new(env, s))
    }

    #[napi(getter)]
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<String> {
        self.election.fencing_token().map(|t| t.to_string())
    }

    /// A stream with one `lost` event if the leadership is lost (not on resign).
    #[napi]
    pub fn loss_events(&self, env: &Env) -> NativeEvents {
        NativeEvents::new(env, EventStream::from_lease_loss(self.election.lease()))
    }
}
