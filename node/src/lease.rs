//! Leases, locks (with the two-phase update that lets a JavaScript function compute the new
//! value) and elections: core's `statestore::lease`. Each operation is one method taking the
//! `NativeCall` first (a Promise, or the blocking `…Sync` twin; see `bridge::run`).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use napi::Env;
use napi_derive::napi;
use statestore::bindings::{lost_within, EventStream, Pending};
use statestore::lease::{AcquireOutcome, Election, Lease, Lock, LockGuard, UpdateTxn};
use statestore::Error;

use crate::args::{self, call_options, Arg, Named, Options};
use crate::bridge::{self, nullable, Call, JsBuffer, Nullable, Out, Returned};
use crate::client::{NativeClient, TIMEOUT};
use crate::events::{js_loss, JsLoss, NativeEvents};
use napi::bindgen_prelude::Unknown;

/// The result of one acquisition attempt.
#[napi(object, object_from_js = false)]
pub struct JsAcquire {
    pub acquired: bool,
    /// The fencing token when acquired.
    pub fencing_token: Nullable<String>,
    /// The current holder when not acquired (if known).
    pub holder: Nullable<JsBuffer>,
}

/// An acquisition attempt (`tryAcquire`, `tryCampaign`) for JavaScript.
fn attempt<'e>(
    env: &'e Env,
    call: Call,
    pending: Pending<AcquireOutcome>,
    out: Out,
) -> napi::Result<Returned<'e, JsAcquire>> {
    bridge::run(env, call, pending, move |_, outcome| {
        Ok(match outcome {
            AcquireOutcome::Acquired { token } => JsAcquire {
                acquired: true,
                fencing_token: nullable(Some(token.to_string())),
                holder: nullable(None),
            },
            AcquireOutcome::HeldBy { holder } => JsAcquire {
                acquired: false,
                fencing_token: nullable(None),
                holder: nullable(holder.as_ref().map(|holder| out.bytes(holder))),
            },
        })
    })
}

/// A holder's name, a leader or a written value: `null` when none.
type MaybeBytes = Option<JsBuffer>;

/// [`MaybeBytes`] for JavaScript.
fn optional_bytes<'e>(
    env: &'e Env,
    call: Call,
    pending: Pending<Option<Bytes>>,
    out: Out,
) -> napi::Result<Returned<'e, MaybeBytes>> {
    bridge::run(env, call, pending, move |_, bytes| {
        Ok(bytes.as_ref().map(|bytes| out.bytes(bytes)))
    })
}

/// A call with nothing to return.
fn unit<'e>(env: &'e Env, call: Call, pending: Pending<()>) -> napi::Result<Returned<'e, ()>> {
    bridge::run(env, call, pending, |_, ()| Ok(()))
}

/// A call returning a fencing token (or another plain value).
fn plain<'e, T: napi::bindgen_prelude::ToNapiValue + Send + 'static>(
    env: &'e Env,
    call: Call,
    pending: Pending<T>,
) -> napi::Result<Returned<'e, T>> {
    bridge::run(env, call, pending, |_, value| Ok(value))
}

/// Runs `f` on a clone of `of` in core's runtime.
fn spawn<S, T, F>(of: &S, f: impl FnOnce(S) -> F) -> Pending<T>
where
    S: Clone,
    T: Send + 'static,
    F: std::future::Future<Output = statestore::Result<T>> + Send + 'static,
{
    Pending::spawn(f(of.clone()))
}

// ---------------------------------------------------------------------------------------------
// Lease

#[napi]
pub struct NativeLease {
    lease: Lease,
    out: Out,
}

/// The leases, locks and elections of a client: made at once, no call.
#[napi]
impl NativeClient {
    /// A lease on `key` under the holder name `holder`; `{ autoRenew }`.
    #[napi(catch_unwind)]
    pub fn lease(
        &self,
        env: &Env,
        key: Unknown,
        holder: Unknown,
        options: Unknown,
    ) -> napi::Result<NativeLease> {
        let key = args::arg(env, &key, "key").bytes()?;
        let holder = args::arg(env, &holder, "holder").bytes()?;
        let options = args::options(env, &options, "options", &["autoRenew"], false)?;
        let auto_renew = options.read("autoRenew", Named::boolean)?;
        let lease = bridge::sync(env, Lease::new(&self.client(), key, holder))?;
        Ok(NativeLease {
            lease: lease.auto_renew(auto_renew.unwrap_or(false)),
            out: self.out,
        })
    }

    /// A named lock; `{ ttl, timeout, autoRenew }`.
    #[napi(catch_unwind)]
    pub fn create_lock(
        &self,
        env: &Env,
        name: Unknown,
        options: Unknown,
    ) -> napi::Result<NativeLock> {
        let options = args::options(env, &options, "options", LOCK, false)?;
        self.named_lock(env, &name, &options)
    }

    /// Takes the lock `name` (`{ ttl, timeout, autoRenew }`), waiting until it is free (or the
    /// timeout): the guard.
    #[napi(ts_return_type = "NativeGuard | Promise<NativeGuard>", catch_unwind)]
    pub fn lock<'e>(
        &self,
        env: &'e Env,
        call: Call,
        name: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, NativeGuard>> {
        let lock = self.named_lock(env, &name, &call_options!(env, options, LOCK, call))?;
        lock.guard(env, call)
    }

    /// One attempt at the lock `name`: the guard, or `null` if someone else holds it.
    #[napi(
        ts_return_type = "NativeGuard | null | Promise<NativeGuard | null>",
        catch_unwind
    )]
    pub fn try_lock<'e>(
        &self,
        env: &'e Env,
        call: Call,
        name: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, Option<NativeGuard>>> {
        let lock = self.named_lock(env, &name, &call_options!(env, options, LOCK, call))?;
        lock.try_guard(env, call)
    }

    /// Leader election `name` with this client as `candidate`; `{ ttl }`.
    #[napi(catch_unwind)]
    pub fn election(
        &self,
        env: &Env,
        name: Unknown,
        candidate: Unknown,
        options: Unknown,
    ) -> napi::Result<NativeElection> {
        let name = args::arg(env, &name, "name").bytes()?;
        let candidate = args::arg(env, &candidate, "candidate").bytes()?;
        let options = args::options(env, &options, "options", TTL, false)?;
        let ttl = options.read("ttl", Named::required_duration)?;
        let election = Election::new(&self.client(), name, candidate, ttl);
        Ok(NativeElection {
            election: bridge::sync(env, election)?,
            out: self.out,
        })
    }
}

impl NativeClient {
    fn named_lock(&self, env: &Env, name: &Arg, options: &Options) -> napi::Result<NativeLock> {
        let name = args::arg(env, name, "name").bytes()?;
        let ttl = options.read("ttl", Named::required_duration)?;
        let mut lock = bridge::sync(env, Lock::new(&self.client(), name, ttl))?;
        if let Some(timeout) = options.read("timeout", Named::duration)? {
            lock = lock.timeout(timeout);
        }
        if let Some(on) = options.read("autoRenew", Named::boolean)? {
            lock = lock.auto_renew(on);
        }
        Ok(NativeLock {
            lock,
            out: self.out,
        })
    }
}

const LOCK: &[&str] = &["ttl", "timeout", "autoRenew"];
const TTL: &[&str] = &["ttl"];

#[napi]
impl NativeLease {
    /// One attempt (`{ ttl }`).
    #[napi(ts_return_type = "JsAcquire | Promise<JsAcquire>", catch_unwind)]
    pub fn try_acquire<'e>(
        &self,
        env: &'e Env,
        call: Call,
        options: Unknown,
    ) -> napi::Result<Returned<'e, JsAcquire>> {
        let ttl = call_options!(env, options, TTL, call).read("ttl", Named::required_duration)?;
        let pending = spawn(
            &self.lease,
            |lease| async move { lease.try_acquire(ttl).await },
        );
        attempt(env, call, pending, self.out)
    }

    /// Waits until acquired (`{ ttl, timeout }`: or `timeout` ms): the fencing token.
    #[napi(ts_return_type = "string | Promise<string>", catch_unwind)]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        call: Call,
        options: Unknown,
    ) -> napi::Result<Returned<'e, String>> {
        let options = call_options!(env, options, &["ttl", "timeout"], call);
        let ttl = options.read("ttl", Named::required_duration)?;
        let timeout = options.read("timeout", Named::duration)?;
        let pending = spawn(&self.lease, |lease| async move {
            let token = match timeout {
                Some(limit) => lease.acquire_timeout(ttl, limit).await?,
                None => lease.acquire(ttl).await?,
            };
            Ok(token.to_string())
        });
        plain(env, call, pending)
    }

    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn renew<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        let pending = spawn(&self.lease, |lease| async move { lease.renew().await });
        unit(env, call, pending)
    }

    /// Whether this holder had the lease.
    #[napi(ts_return_type = "boolean | Promise<boolean>", catch_unwind)]
    pub fn release<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, bool>> {
        let pending = spawn(&self.lease, |lease| async move { lease.release().await });
        plain(env, call, pending)
    }

    #[napi(
        ts_return_type = "Buffer | null | Promise<Buffer | null>",
        catch_unwind
    )]
    pub fn holder<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, MaybeBytes>> {
        let pending = spawn(&self.lease, |lease| async move { lease.holder().await });
        optional_bytes(env, call, pending, self.out)
    }

    #[napi(getter, catch_unwind)]
    pub fn fencing_token(&self) -> Option<String> {
        self.lease.fencing_token().map(|t| t.to_string())
    }

    #[napi(getter, catch_unwind)]
    pub fn is_held(&self) -> bool {
        self.lease.is_held()
    }

    #[napi(getter, catch_unwind)]
    pub fn key(&self) -> JsBuffer {
        self.out.bytes(self.lease.key())
    }

    #[napi(getter, catch_unwind)]
    pub fn holder_name(&self) -> JsBuffer {
        self.out.bytes(self.lease.holder_name())
    }

    /// A stream with one `lost` event when the lease is lost (ends without one on release).
    #[napi(catch_unwind)]
    pub fn loss_events(&self, env: &Env) -> NativeEvents {
        NativeEvents::new(env, EventStream::from_lease_loss(&self.lease), self.out)
    }

    /// `{ state: 'notHeld' | 'held' | 'lost', fencingToken, loss }`.
    #[napi(getter, catch_unwind)]
    pub fn state(&self) -> JsLeaseState {
        let state = self.lease.state();
        JsLeaseState {
            state: state.names().1.into(),
            fencing_token: nullable(state.fencing_token().map(|token| token.to_string())),
            loss: nullable(state.loss().map(js_loss)),
        }
    }
}

/// `lost({ timeout })` of `$class`, whose lease `$lease(self)` gives: waits until it is not
/// held, for at most `timeout` ms (none: until then; 0: the state now), and gives the loss, or
/// `null` if it was released (resigned), never held, or still held when the time is up. The
/// same for a lease, a held lock and an election (core's `lost_within`).
macro_rules! losable {
    ($class:ident, $lease:expr) => {
        #[napi]
        impl $class {
            #[napi(
                ts_return_type = "JsLoss | null | Promise<JsLoss | null>",
                catch_unwind
            )]
            pub fn lost<'e>(
                &self,
                env: &'e Env,
                call: Call,
                options: Unknown,
            ) -> napi::Result<Returned<'e, Option<JsLoss>>> {
                let options = call_options!(env, options, TIMEOUT, call);
                let timeout = options.read("timeout", Named::duration)?;
                let lease: fn(&$class) -> &Lease = $lease;
                let pending = Pending::spawn(lost_within(lease(self), timeout));
                bridge::run(env, call, pending, |_, loss| Ok(loss.as_ref().map(js_loss)))
            }
        }
    };
}

losable!(NativeLease, |this| &this.lease);
losable!(NativeGuard, |this| &this.lease);
losable!(NativeElection, |this| this.election.lease());

/// A lease's state.
#[napi(object, object_from_js = false)]
pub struct JsLeaseState {
    /// `'notHeld'`, `'held'` or `'lost'`.
    pub state: String,
    pub fencing_token: Nullable<String>,
    pub loss: Nullable<JsLoss>,
}

// ---------------------------------------------------------------------------------------------
// Lock

#[napi]
pub struct NativeLock {
    lock: Lock,
    out: Out,
}

#[napi]
impl NativeLock {
    /// Waits until acquired (or the lock's timeout): the guard.
    #[napi(ts_return_type = "NativeGuard | Promise<NativeGuard>", catch_unwind)]
    pub fn lock<'e>(
        &self,
        env: &'e Env,
        call: Call,
        options: Unknown,
    ) -> napi::Result<Returned<'e, NativeGuard>> {
        call_options!(env, options, &[], call);
        self.guard(env, call)
    }

    /// One attempt: the guard, or `null` if someone else holds the lock.
    #[napi(
        ts_return_type = "NativeGuard | null | Promise<NativeGuard | null>",
        catch_unwind
    )]
    pub fn try_lock<'e>(
        &self,
        env: &'e Env,
        call: Call,
        options: Unknown,
    ) -> napi::Result<Returned<'e, Option<NativeGuard>>> {
        call_options!(env, options, &[], call);
        self.try_guard(env, call)
    }

    #[napi(
        ts_return_type = "Buffer | null | Promise<Buffer | null>",
        catch_unwind
    )]
    pub fn holder<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, MaybeBytes>> {
        let pending = spawn(&self.lock, |lock| async move { lock.holder().await });
        optional_bytes(env, call, pending, self.out)
    }

    /// First phase of `update(key, fn, options)`: acquires the lock and reads the key (`fn`,
    /// which the package calls, is only checked here).
    #[napi(ts_return_type = "NativeUpdate | Promise<NativeUpdate>", catch_unwind)]
    pub fn begin_update<'e>(
        &self,
        env: &'e Env,
        call: Call,
        key: Unknown,
        update: Unknown,
        options: Unknown,
    ) -> napi::Result<Returned<'e, NativeUpdate>> {
        let key = args::arg(env, &key, "key").bytes()?;
        args::arg(env, &update, "fn").function()?;
        call_options!(env, options, &[], call);
        let pending = spawn(
            &self.lock,
            |lock| async move { lock.begin_update(key).await },
        );
        let out = self.out;
        bridge::run(env, call, pending, move |_, txn| {
            Ok(NativeUpdate::new(txn, out))
        })
    }

    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> JsBuffer {
        self.out.bytes(self.lock.name())
    }

    /// The time to live of each holding, ms.
    #[napi(getter, catch_unwind)]
    pub fn ttl(&self) -> f64 {
        self.lock.ttl().as_secs_f64() * 1000.0
    }
}

impl NativeLock {
    /// Waits until acquired (or the lock's timeout): the guard.
    fn guard<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, NativeGuard>> {
        let pending = spawn(&self.lock, |lock| async move { lock.lock().await });
        let out = self.out;
        bridge::run(env, call, pending, move |_, guard| {
            Ok(NativeGuard::new(guard, out))
        })
    }

    /// One attempt: the guard, or `null` if someone else holds the lock.
    fn try_guard<'e>(
        &self,
        env: &'e Env,
        call: Call,
    ) -> napi::Result<Returned<'e, Option<NativeGuard>>> {
        let pending = spawn(&self.lock, |lock| async move { lock.try_lock().await });
        let out = self.out;
        bridge::run(env, call, pending, move |_, guard| {
            Ok(guard.map(|guard| NativeGuard::new(guard, out)))
        })
    }
}

/// A held lock. Release it with `release()`; if the object is collected while held, the lock
/// is released in the background.
#[napi]
pub struct NativeGuard {
    guard: Arc<Mutex<Option<LockGuard>>>,
    token: String,
    lease: Lease,
    out: Out,
}

impl NativeGuard {
    fn new(guard: LockGuard, out: Out) -> NativeGuard {
        NativeGuard {
            out,
            token: guard.fencing_token().to_string(),
            lease: guard.lease().clone(),
            guard: Arc::new(Mutex::new(Some(guard))),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<LockGuard>> {
        self.guard.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[napi]
impl NativeGuard {
    #[napi(getter, catch_unwind)]
    pub fn fencing_token(&self) -> String {
        self.token.clone()
    }

    #[napi(getter, catch_unwind)]
    pub fn is_held(&self) -> bool {
        self.held().is_some() && self.lease.is_held()
    }

    #[napi(getter, catch_unwind)]
    pub fn holder_name(&self) -> JsBuffer {
        self.out.bytes(self.lease.holder_name())
    }

    /// The lock's name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> JsBuffer {
        self.out.bytes(self.lease.key())
    }

    /// Releases the lock (once; later calls do nothing).
    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn release<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        let guard = self.held().take();
        let pending = Pending::spawn(async move {
            match guard {
                Some(guard) => guard.release().await,
                None => Ok(()),
            }
        });
        unit(env, call, pending)
    }

    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn renew<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        let pending = if self.held().is_none() {
            Pending::ready(Err(Error::NotHeld("the lock was released".into())))
        } else {
            spawn(&self.lease, |lease| async move { lease.renew().await })
        };
        unit(env, call, pending)
    }

    /// A stream with one `lost` event if the lock is lost while held.
    #[napi(catch_unwind)]
    pub fn loss_events(&self, env: &Env) -> NativeEvents {
        NativeEvents::new(env, EventStream::from_lease_loss(&self.lease), self.out)
    }
}

/// An update in progress: the lock is held and the key's old value read; `commit` writes the
/// new value with the fencing token and releases, `abort` releases without writing.
#[napi]
pub struct NativeUpdate {
    txn: Arc<Mutex<Option<UpdateTxn>>>,
    old: Option<Bytes>,
    token: String,
    /// Open while the caller's update function runs (on the JavaScript thread).
    callback: std::cell::RefCell<Option<statestore::lease::CallbackScope>>,
    out: Out,
}

impl NativeUpdate {
    fn new(txn: UpdateTxn, out: Out) -> NativeUpdate {
        NativeUpdate {
            out,
            old: txn.old_value().cloned(),
            token: txn.fencing_token().to_string(),
            callback: std::cell::RefCell::new(None),
            txn: Arc::new(Mutex::new(Some(txn))),
        }
    }

    /// Runs `finish` on the transaction, which only one commit or abort may take.
    fn finish<T, F>(&self, finish: impl FnOnce(UpdateTxn) -> F) -> Pending<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = statestore::Result<T>> + Send + 'static,
    {
        match self.txn.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(txn) => Pending::spawn(finish(txn)),
            None => Pending::ready(Err(Error::InvalidArgument(
                "this update was already committed or aborted".into(),
            ))),
        }
    }
}

#[napi]
impl NativeUpdate {
    #[napi(getter, catch_unwind)]
    pub fn old_value(&self) -> Option<JsBuffer> {
        self.old.as_ref().map(|old| self.out.bytes(old))
    }

    #[napi(getter, catch_unwind)]
    pub fn fencing_token(&self) -> String {
        self.token.clone()
    }

    /// Writes `value` (`null`: deletes the key) with the fencing token, then releases: what
    /// was written.
    #[napi(
        ts_return_type = "Buffer | null | Promise<Buffer | null>",
        catch_unwind
    )]
    pub fn commit<'e>(
        &self,
        env: &'e Env,
        call: Call,
        value: Unknown,
    ) -> napi::Result<Returned<'e, MaybeBytes>> {
        let value = args::arg(env, &value, "the value returned by fn");
        let value = if value.is_absent()? {
            None
        } else {
            Some(value.bytes()?)
        };
        optional_bytes(env, call, self.finish(|txn| txn.commit(value)), self.out)
    }

    /// The caller's update function runs from now until `exitCallback()`: meanwhile a
    /// blocking wait for this same lock on this thread fails at once instead of waiting for
    /// itself forever.
    #[napi(catch_unwind)]
    pub fn enter_callback(&self) {
        let scope = self
            .txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(UpdateTxn::enter_callback);
        *self.callback.borrow_mut() = scope;
    }

    /// The update function has returned (or thrown).
    #[napi(catch_unwind)]
    pub fn exit_callback(&self) {
        self.callback.borrow_mut().take();
    }

    /// Releases without writing.
    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn abort<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        unit(env, call, self.finish(|txn| txn.abort()))
    }
}

// ---------------------------------------------------------------------------------------------
// Election

#[napi]
pub struct NativeElection {
    election: Election,
    out: Out,
}

#[napi]
impl NativeElection {
    /// Waits until elected (or `timeout` ms): the fencing token.
    #[napi(ts_return_type = "string | Promise<string>", catch_unwind)]
    pub fn campaign<'e>(
        &self,
        env: &'e Env,
        call: Call,
        options: Unknown,
    ) -> napi::Result<Returned<'e, String>> {
        let timeout =
            call_options!(env, options, TIMEOUT, call).read("timeout", Named::duration)?;
        let pending = spawn(&self.election, |election| async move {
            let token = match timeout {
                Some(limit) => election.campaign_timeout(limit).await?,
                None => election.campaign().await?,
            };
            Ok(token.to_string())
        });
        plain(env, call, pending)
    }

    #[napi(ts_return_type = "JsAcquire | Promise<JsAcquire>", catch_unwind)]
    pub fn try_campaign<'e>(
        &self,
        env: &'e Env,
        call: Call,
        options: Unknown,
    ) -> napi::Result<Returned<'e, JsAcquire>> {
        call_options!(env, options, &[], call);
        let pending = spawn(&self.election, |e| async move { e.try_campaign().await });
        attempt(env, call, pending, self.out)
    }

    #[napi(ts_return_type = "void | Promise<void>", catch_unwind)]
    pub fn resign<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        let pending = spawn(&self.election, |e| async move { e.resign().await });
        unit(env, call, pending)
    }

    #[napi(
        ts_return_type = "Buffer | null | Promise<Buffer | null>",
        catch_unwind
    )]
    pub fn leader<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, MaybeBytes>> {
        let pending = spawn(&self.election, |e| async move { e.leader().await });
        optional_bytes(env, call, pending, self.out)
    }

    /// Leadership changes: `elected` (with `holder`) and `vacant` events.
    #[napi(ts_return_type = "NativeEvents | Promise<NativeEvents>", catch_unwind)]
    pub fn observe<'e>(
        &self,
        env: &'e Env,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeEvents>> {
        let pending = spawn(&self.election, |election| async move {
            let key = election.name().clone();
            Ok(EventStream::from_leader(election.observe().await?, key))
        });
        let out = self.out;
        bridge::run(env, call, pending, move |env, stream| {
            Ok(NativeEvents::new(env, stream, out))
        })
    }

    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> JsBuffer {
        self.out.bytes(self.election.name())
    }

    #[napi(getter, catch_unwind)]
    pub fn candidate(&self) -> JsBuffer {
        self.out.bytes(self.election.candidate())
    }

    #[napi(getter, catch_unwind)]
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    #[napi(getter, catch_unwind)]
    pub fn fencing_token(&self) -> Option<String> {
        self.election.fencing_token().map(|t| t.to_string())
    }

    /// A stream with one `lost` event if the leadership is lost (not on resign).
    #[napi(catch_unwind)]
    pub fn loss_events(&self, env: &Env) -> NativeEvents {
        NativeEvents::new(
            env,
            EventStream::from_lease_loss(self.election.lease()),
            self.out,
        )
    }
}
