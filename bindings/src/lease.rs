//! Locks (with guards and `update`), leases and leader elections.

use std::ffi::{c_char, c_void, CString};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use statestore_core::bindings::EventStream;
use statestore_core::lease::{AcquireOutcome, Election, Lease, Lock, LockGuard, UpdateTxn};
use statestore_core::{Error, Hlc, Result};

use crate::client::{
    statestore_client, statestore_done_cb, statestore_value, value_of, OwnedValue, CLIENTS,
};
use crate::client_state::ClientState;
use crate::observe::{new_observation, statestore_observation};
use crate::reply::{PreparedCall, Reply};
use crate::status::{c_string, entry, statestore_status};
use crate::util::{self, null, Handles, Out, UserData};

/// A lock on the state store (one key, mutual exclusion between processes). Create with
/// `statestore_lock_new()`, acquire with `statestore_lock_acquire()` (or `_try_acquire()`,
/// `_acquire_async()`), which give a `statestore_lock_guard`; free with
/// `statestore_lock_free()`.
pub struct statestore_lock {
    _private: [u8; 0],
}

/// A held lock. Protect writes with its fencing token; release it with
/// `statestore_lock_guard_release()`; freeing it releases in the background.
pub struct statestore_lock_guard {
    _private: [u8; 0],
}

/// A named lease with a holder name: acquire, renew (automatically by default), release,
/// fencing token, loss.
pub struct statestore_lease {
    _private: [u8; 0],
}

/// A candidate in a leader election.
pub struct statestore_election {
    _private: [u8; 0],
}

pub(crate) struct LockState {
    client: Arc<ClientState>,
    lock: Mutex<Lock>,
}

pub(crate) struct GuardState {
    client: Arc<ClientState>,
    guard: Mutex<Option<LockGuard>>,
    token: CString,
    lease: Lease,
}

pub(crate) struct LeaseState {
    client: Arc<ClientState>,
    lease: Lease,
}

pub(crate) struct ElectionState {
    client: Arc<ClientState>,
    election: Election,
}

pub(crate) static LOCKS: Handles<LockState> = Handles::new(4, "statestore_lock");
pub(crate) static GUARDS: Handles<GuardState> = Handles::new(5, "statestore_lock_guard");
pub(crate) static LEASES: Handles<LeaseState> = Handles::new(6, "statestore_lease");
pub(crate) static ELECTIONS: Handles<ElectionState> = Handles::new(7, "statestore_election");
/// The buffers of the update functions running now: a handle lives only for its call.
static BUFFERS: Handles<Mutex<Bytes>> = Handles::new(8, "statestore_buffer");

/// Completion of the acquisitions that give a fencing token: `fencing_token` is borrowed
/// for the callback (NULL on failure).
pub type statestore_token_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        fencing_token: *const c_char,
    ),
>;

/// Completion of `statestore_lock_acquire_async()`: on success the callback owns `guard`
/// (free it with `statestore_lock_guard_free()`); NULL on failure.
pub type statestore_guard_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        guard: *mut statestore_lock_guard,
    ),
>;

fn token_text(token: &Hlc) -> CString {
    c_string(token.to_string())
}

fn token_string(token: &Hlc) -> *mut c_char {
    token_text(token).into_raw()
}

/// `timeout_ms` < 0: no limit.
fn limit(timeout_ms: i64) -> Option<Duration> {
    u64::try_from(timeout_ms).ok().map(Duration::from_millis)
}

fn ttl(ttl_ms: u64) -> Result<Duration> {
    util::positive_millis(ttl_ms, "ttl_ms")
}

// ---------------------------------------------------------------------------------------
// Locks

/// A lock on the key `name` whose holdings last `ttl_ms` (renewed automatically while held).
///
/// # Safety
/// `name` points to `name_len` readable bytes; `lock` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_new(
    client: *const statestore_client,
    name: *const u8,
    name_len: usize,
    ttl_ms: u64,
    lock: *mut *mut statestore_lock,
) -> statestore_status {
    // SAFETY: `lock` is NULL or writable during this call (this function's contract).
    let lock = unsafe { Out::new(lock) };
    entry(|| {
        lock.clear("lock")?;
        let state = CLIENTS.get(client, "client")?;
        // SAFETY: `name` points to `name_len` readable bytes, or is NULL (this function's
        // contract).
        let name = unsafe { util::key(name, name_len, "name") }?;
        let created = Lock::new(&state.client, name, ttl(ttl_ms)?)?;
        lock.set(LOCKS.insert(Arc::new(LockState {
            client: state,
            lock: Mutex::new(created),
        })));
        Ok(())
    })
}

/// Whether guards renew the lock automatically (default: yes). Without renewal a holding
/// ends after its TTL.
#[no_mangle]
pub extern "C" fn statestore_lock_set_auto_renew(
    lock: *const statestore_lock,
    auto_renew: bool,
) -> statestore_status {
    entry(|| {
        let state = LOCKS.get(lock, "lock")?;
        let mut current = state.lock.lock().unwrap_or_else(|e| e.into_inner());
        *current = current.clone().auto_renew(auto_renew);
        Ok(())
    })
}

/// Frees a lock. NULL does nothing. Guards taken from it stay valid.
#[no_mangle]
pub extern "C" fn statestore_lock_free(lock: *mut statestore_lock) -> statestore_status {
    entry(|| LOCKS.remove(lock, "lock").map(drop))
}

fn lock_of(lock: *const statestore_lock) -> Result<(Arc<ClientState>, Lock)> {
    let state = LOCKS.get(lock, "lock")?;
    let current = state.lock.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok((state.client.clone(), current))
}

fn new_guard(client: &Arc<ClientState>, guard: LockGuard) -> *mut statestore_lock_guard {
    let token = c_string(guard.fencing_token().to_string());
    let lease = guard.lease().clone();
    GUARDS.insert(Arc::new(GuardState {
        client: client.clone(),
        guard: Mutex::new(Some(guard)),
        token,
        lease,
    }))
}

async fn acquire(lock: Lock, timeout: Option<Duration>) -> Result<LockGuard> {
    match timeout {
        Some(timeout) if timeout.is_zero() => match lock.try_lock().await? {
            Some(guard) => Ok(guard),
            None => Err(Error::Timeout(timeout)),
        },
        Some(timeout) => lock.timeout(timeout).lock().await,
        None => lock.lock().await,
    }
}

fn acquire_op(
    lock: *const statestore_lock,
    timeout_ms: i64,
) -> Result<PreparedCall<LockGuard, *mut statestore_lock_guard>> {
    let (client, lock) = lock_of(lock)?;
    let owner = client.clone();
    Ok(PreparedCall::new(
        &client,
        acquire(lock, limit(timeout_ms)),
        move |held| new_guard(&owner, held),
    ))
}

/// Acquires the lock, waiting up to `timeout_ms` (< 0: no limit; 0: one attempt) while
/// another holder has it: `STATESTORE_ERR_TIMEOUT` if it did not come free in time. On
/// success `*guard` is the holding (free it with `statestore_lock_guard_free()`).
///
/// # Safety
/// `guard` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_acquire(
    lock: *const statestore_lock,
    timeout_ms: i64,
    guard: *mut *mut statestore_lock_guard,
) -> statestore_status {
    // SAFETY: `guard` is NULL or writable during this call (this function's contract).
    let guard = unsafe { Out::new(guard) };
    Reply::required(guard, "guard").run(|| acquire_op(lock, timeout_ms))
}

/// One attempt: `*guard` is the holding, or NULL if another holder has the lock (status OK).
///
/// # Safety
/// `guard` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_try_acquire(
    lock: *const statestore_lock,
    guard: *mut *mut statestore_lock_guard,
) -> statestore_status {
    // SAFETY: `guard` is NULL or writable during this call (this function's contract).
    let guard = unsafe { Out::new(guard) };
    Reply::required(guard, "guard").run(|| {
        let (client, lock) = lock_of(lock)?;
        let owner = client.clone();
        Ok(PreparedCall::new(
            &client,
            async move { lock.try_lock().await },
            move |held: Option<LockGuard>| held.map(|held| new_guard(&owner, held)),
        ))
    })
}

/// `statestore_lock_acquire()` without blocking: `callback` runs once with the guard (which
/// it then owns) or the error.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_acquire_async(
    lock: *const statestore_lock,
    timeout_ms: i64,
    callback: statestore_guard_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| acquire_op(lock, timeout_ms))
}

/// What an update function decided.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_update_action {
    /// Write the bytes given to `statestore_buffer_set()` (empty if it was not called).
    STATESTORE_UPDATE_WRITE = 0,
    /// Delete the key.
    STATESTORE_UPDATE_DELETE = 1,
    /// Write nothing; the update fails with `STATESTORE_ERR_CANCELLED`.
    STATESTORE_UPDATE_ABORT = 2,
}

/// Where an update function puts the new value: a handle valid only during that call (any
/// other pointer, or one kept from an earlier call, is refused with
/// `STATESTORE_ERR_INVALID_ARGUMENT`).
pub struct statestore_buffer {
    _private: [u8; 0],
}

/// Copies `len` bytes at `data` into `buffer` as the value to write (NULL allowed when `len`
/// is 0). Call it from an update function only.
///
/// # Safety
/// `data` points to `len` readable bytes (NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn statestore_buffer_set(
    buffer: *mut statestore_buffer,
    data: *const u8,
    len: usize,
) -> statestore_status {
    entry(|| {
        let slot = BUFFERS.get(buffer, "buffer")?;
        // SAFETY: `data` points to `len` readable bytes, or is NULL (this function's
        // contract).
        let value = unsafe { util::bytes(data, len, "data") }?;
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = value;
        Ok(())
    })
}

/// An update function: gets the key's current value (`old` NULL: the key does not exist;
/// borrowed for the call) and returns a `statestore_update_action`. It runs with the lock
/// held: for `statestore_lock_update()` on the calling thread, for
/// `statestore_lock_update_async()` on the library's dispatcher thread.
pub type statestore_update_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        old: *const statestore_value,
        out: *mut statestore_buffer,
    ) -> i32,
>;

type UpdateFn =
    unsafe extern "C" fn(*mut c_void, *const statestore_value, *mut statestore_buffer) -> i32;

/// The first phase of an update (acquire the lock, read the key), from the C arguments.
///
/// # Safety
/// `key` points to `key_len` readable bytes, or is NULL (as for [`util::key`]).
unsafe fn begin_update_op(
    lock: *const statestore_lock,
    key: *const u8,
    key_len: usize,
    timeout_ms: i64,
) -> Result<(
    Arc<ClientState>,
    impl Future<Output = Result<UpdateTxn>> + Send + 'static,
)> {
    // SAFETY: `key` points to `key_len` readable bytes, or is NULL (this function's contract).
    let key = unsafe { util::key(key, key_len, "key") }?;
    let (client, mut lock) = lock_of(lock)?;
    lock.check_update_key(&key)?;
    if let Some(timeout) = limit(timeout_ms) {
        lock = lock.timeout(timeout);
    }
    Ok((client, async move { lock.begin_update(key).await }))
}

/// Both forms of the update: the first phase (`begin`) as a call of its own, then the update
/// function and the second phase (`decide`).
///
/// # Safety
/// `update` is NULL or may be called with `user_data` on this thread (`reply` blocking) or on
/// the dispatcher thread (`reply` a callback).
unsafe fn lock_update<F>(
    reply: Reply<Option<OwnedValue>>,
    update: statestore_update_fn,
    user_data: *mut c_void,
    begin: impl FnOnce() -> Result<(Arc<ClientState>, F)>,
) -> statestore_status
where
    F: Future<Output = Result<UpdateTxn>> + Send + 'static,
{
    entry(|| {
        let reply = reply.accepted()?;
        let update = update.ok_or_else(|| null("update"))?;
        let (client, begin) = begin()?;
        let user = UserData(user_data);
        match reply {
            Reply::Callback(callback) => {
                let owner = client.clone();
                // The first phase's completion runs on the dispatcher (also for a client with
                // inline callbacks): the update function may block there without stalling
                // the runtime.
                let next = move |txn| match txn {
                    // SAFETY: this runs on the dispatcher thread, where the caller of
                    // `lock_update` promised `update` may be called with `user_data`.
                    Ok(txn) => unsafe { decide(&owner, update, user, txn) }.spawn(callback),
                    Err(error) => callback.deliver::<Option<OwnedValue>>(Err(error)),
                };
                // Never inline: the update function may block.
                client.call_async_on(begin, next, false);
                Ok(())
            }
            reply => {
                let txn = client.call(begin)?;
                // SAFETY: a blocking reply: this is the calling thread, where the caller of
                // `lock_update` promised `update` may be called with `user_data`.
                unsafe { decide(&client, update, user, txn) }.finish(reply)
            }
        }
    })
}

/// Calls the update function with the key's old value (on the calling thread) and makes the
/// second phase of the update from its answer: write or delete with the fencing token, or
/// release the lock without writing.
///
/// # Safety
/// `update` may be called with `user.get()` on this thread.
unsafe fn decide(
    client: &Arc<ClientState>,
    update: UpdateFn,
    user: UserData,
    txn: UpdateTxn,
) -> PreparedCall<Option<Bytes>, Option<OwnedValue>> {
    let old = txn.old_value().map(|v| value_of(v.clone(), None::<&Hlc>));
    let old_view = old
        .as_ref()
        .map_or(std::ptr::null(), |o| &o.view as *const _);
    let slot = Arc::new(Mutex::new(Bytes::new()));
    let buffer: *mut statestore_buffer = BUFFERS.insert(slot.clone());
    let action = txn.run_callback(|| {
        // SAFETY: `update` may be called with `user_data` here (this function's contract);
        // `old_view` is NULL or points into `old`, which outlives the call; `buffer` is a
        // handle, never dereferenced.
        unsafe { update(user.get(), old_view, buffer) }
    });
    // The handle ends with the call: a buffer pointer kept for later is refused from now on.
    let _ = BUFFERS.remove(buffer, "buffer");
    let written = std::mem::take(&mut *slot.lock().unwrap_or_else(|e| e.into_inner()));
    let decision = match action {
        0 => Ok(Some(written)),
        1 => Ok(None),
        2 => Err(Error::Cancelled),
        other => Err(Error::InvalidArgument(format!(
            "the update function returned {other}, not a statestore_update_action"
        ))),
    };
    PreparedCall::new(
        client,
        async move {
            match decision {
                Ok(new_value) => txn.commit(new_value).await,
                Err(error) => {
                    txn.abort().await?;
                    Err(error)
                }
            }
        },
        |written| written.map(|value| value_of(value, None)),
    )
}

/// Updates `key` under the lock: acquires it (waiting up to `timeout_ms`, < 0: no limit),
/// reads `key`, calls `update`, writes its result with the lock's fencing token (or deletes,
/// or writes nothing), and releases the lock. Every writer of `key` must go through the
/// lock. `key` may not be the lock's own key. If the lock is lost before the write, nothing
/// is written and the call fails with `STATESTORE_ERR_NOT_HELD`. `*written` (if `written`
/// is not NULL) receives the value written (free with `statestore_value_free()`), NULL if
/// the key was deleted. While `update` runs, a blocking wait for the same lock from it (a
/// nested `statestore_lock_update()` or `statestore_lock_acquire()` of the same name on the
/// same client) fails at once with `STATESTORE_ERR_INVALID_ARGUMENT` instead of waiting for
/// itself.
///
/// # Safety
/// `key` points to `key_len` readable bytes; `update` may be called with `user_data` on the
/// calling thread; `written` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_update(
    lock: *const statestore_lock,
    key: *const u8,
    key_len: usize,
    timeout_ms: i64,
    update: statestore_update_fn,
    user_data: *mut c_void,
    written: *mut *mut statestore_value,
) -> statestore_status {
    // SAFETY: `written` is NULL or writable during this call (this function's contract).
    let reply = Reply::optional(unsafe { Out::new(written) });
    let begin = || {
        // SAFETY: `key` points to `key_len` readable bytes (this function's contract), read
        // before `lock_update` returns.
        unsafe { begin_update_op(lock, key, key_len, timeout_ms) }
    };
    // SAFETY: a blocking reply, and `update` may be called with `user_data` on the calling
    // thread (this function's contract).
    unsafe { lock_update(reply, update, user_data, begin) }
}

/// Completion of `statestore_lock_update_async()`: `written` is the value written, borrowed
/// for the callback; NULL when the update deleted the key, or on failure.
pub type statestore_update_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        written: *const statestore_value,
    ),
>;

/// `statestore_lock_update()` without blocking. Once the lock is held and `key` read, `update`
/// runs on the library's dispatcher thread (the thread of the callbacks, one at a time: it
/// may call blocking functions of this library, and delays the other callbacks while it
/// runs); then `callback` runs exactly once, on that thread too (for a client with
/// `STATESTORE_CALLBACKS_INLINE`, where the write completed), with the outcome: the value
/// written (`STATESTORE_OK`), `STATESTORE_ERR_CANCELLED` if `update` returned
/// `STATESTORE_UPDATE_ABORT`, `STATESTORE_ERR_NOT_HELD` or a fencing error if the lock was
/// lost before the write, `STATESTORE_ERR_CLOSED` if the client closed first. Both get
/// `user_data`. `update` runs at most once, always before `callback`, and not at all when
/// the lock could not be taken (or the client closed while waiting for it).
///
/// # Safety
/// `key` points to `key_len` readable bytes; `update` and `callback` may be called with
/// `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_update_async(
    lock: *const statestore_lock,
    key: *const u8,
    key_len: usize,
    timeout_ms: i64,
    update: statestore_update_fn,
    callback: statestore_update_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    let begin = || {
        // SAFETY: `key` points to `key_len` readable bytes (this function's contract), copied
        // before `lock_update` returns.
        unsafe { begin_update_op(lock, key, key_len, timeout_ms) }
    };
    // SAFETY: `update` may be called with `user_data` on the dispatcher thread (this
    // function's contract).
    unsafe { lock_update(reply, update, user_data, begin) }
}

/// Reads who holds the lock now: `*holder` is the holder name written in the lock's key (a
/// value without version; free with `statestore_value_free()`), NULL when free.
///
/// # Safety
/// `holder` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_holder(
    lock: *const statestore_lock,
    holder: *mut *mut statestore_value,
) -> statestore_status {
    // SAFETY: `holder` is NULL or writable during this call (this function's contract).
    let holder = unsafe { Out::new(holder) };
    Reply::required(holder, "holder").run(|| {
        let (client, lock) = lock_of(lock)?;
        Ok(holder_call(&client, async move { lock.holder().await }))
    })
}

// ---------------------------------------------------------------------------------------
// Guards

/// The fencing token of this holding: pass it in `statestore_set_options.fencing_token`
/// to write the keys the lock protects. Borrowed until the guard is freed.
///
/// # Safety
/// `token` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_guard_fencing_token(
    guard: *const statestore_lock_guard,
    token: *mut *const c_char,
) -> statestore_status {
    // SAFETY: `token` is NULL or writable during this call (this function's contract).
    let token = unsafe { Out::new(token) };
    entry(|| {
        let state = GUARDS.get(guard, "guard")?;
        // The CString lives in the handle's state, which lives until the handle is freed.
        token.put("token", state.token.as_ptr())
    })
}

/// Whether the lock is still held by this guard (false once released or lost).
///
/// # Safety
/// `held` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_guard_is_held(
    guard: *const statestore_lock_guard,
    held: *mut bool,
) -> statestore_status {
    // SAFETY: `held` is NULL or writable during this call (this function's contract).
    let held = unsafe { Out::new(held) };
    entry(|| {
        let state = GUARDS.get(guard, "guard")?;
        held.put("held", state.lease.is_held())
    })
}

/// The loss of this holding as an observation that delivers one `STATESTORE_EVENT_LOST`
/// event (pull it with `statestore_observation_next()` or set a callback), then ends; it
/// ends without an event when the lock is released.
///
/// # Safety
/// `observation` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_guard_watch_loss(
    guard: *const statestore_lock_guard,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    // SAFETY: `observation` is NULL or writable during this call (this function's contract).
    let observation = unsafe { Out::new(observation) };
    entry(|| {
        observation.clear("observation")?;
        let state = GUARDS.get(guard, "guard")?;
        observation.set(new_observation(EventStream::from_lease_loss(&state.lease)));
        Ok(())
    })
}

fn take_guard(guard: *const statestore_lock_guard) -> Result<(Arc<ClientState>, LockGuard)> {
    let state = GUARDS.get(guard, "guard")?;
    let held = state
        .guard
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or_else(|| Error::NotHeld("this guard was already released".into()))?;
    Ok((state.client.clone(), held))
}

fn release_op(guard: *const statestore_lock_guard) -> Result<PreparedCall<(), ()>> {
    let (client, held) = take_guard(guard)?;
    Ok(PreparedCall::status(&client, async move {
        held.release().await
    }))
}

/// Releases the lock and waits for the service's answer. The guard must still be freed.
#[no_mangle]
pub extern "C" fn statestore_lock_guard_release(
    guard: *const statestore_lock_guard,
) -> statestore_status {
    Reply::status_only().run(|| release_op(guard))
}

/// `statestore_lock_guard_release()` without blocking.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_lock_guard_release_async(
    guard: *const statestore_lock_guard,
    callback: statestore_done_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::status(callback, user_data) };
    reply.run(|| release_op(guard))
}

/// Frees a guard, releasing the lock in the background if it is still held (release it
/// explicitly before closing the client: a background release queued at close is never
/// sent, and the lock then stays taken until its TTL passes). NULL does nothing.
#[no_mangle]
pub extern "C" fn statestore_lock_guard_free(
    guard: *mut statestore_lock_guard,
) -> statestore_status {
    entry(|| GUARDS.remove(guard, "guard").map(drop))
}

// ---------------------------------------------------------------------------------------
// Leases

/// A lease on `key` for the holder name `holder` (unique per holder), renewed automatically
/// while held.
///
/// # Safety
/// `key` points to `key_len` readable bytes and `holder` to `holder_len`; `lease` is NULL or
/// points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_new(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    holder: *const u8,
    holder_len: usize,
    lease: *mut *mut statestore_lease,
) -> statestore_status {
    // SAFETY: `lease` is NULL or writable during this call (this function's contract).
    let lease = unsafe { Out::new(lease) };
    entry(|| {
        lease.clear("lease")?;
        let state = CLIENTS.get(client, "client")?;
        // SAFETY: `key` points to `key_len` readable bytes, or is NULL (this function's
        // contract).
        let key = unsafe { util::key(key, key_len, "key") }?;
        // SAFETY: `holder` points to `holder_len` readable bytes, or is NULL (as for `key`).
        let holder = unsafe { util::key(holder, holder_len, "holder") }?;
        let created = Lease::new(&state.client, key, holder)?.auto_renew(true);
        lease.set(LEASES.insert(Arc::new(LeaseState {
            client: state,
            lease: created,
        })));
        Ok(())
    })
}

/// Turns automatic renewal on or off (default: on).
#[no_mangle]
pub extern "C" fn statestore_lease_set_auto_renew(
    lease: *const statestore_lease,
    auto_renew: bool,
) -> statestore_status {
    entry(|| {
        LEASES.get(lease, "lease")?.lease.set_auto_renew(auto_renew);
        Ok(())
    })
}

fn lease_of(lease: *const statestore_lease) -> Result<(Arc<ClientState>, Lease)> {
    let state = LEASES.get(lease, "lease")?;
    Ok((state.client.clone(), state.lease.clone()))
}

async fn acquire_lease(lease: Lease, ttl: Duration, timeout: Option<Duration>) -> Result<Hlc> {
    match timeout {
        Some(timeout) if timeout.is_zero() => match lease.try_acquire(ttl).await? {
            AcquireOutcome::Acquired { token } => Ok(token),
            _ => Err(Error::Timeout(timeout)),
        },
        Some(timeout) => lease.acquire_timeout(ttl, timeout).await,
        None => lease.acquire(ttl).await,
    }
}

fn lease_acquire_op(
    lease: *const statestore_lease,
    ttl_ms: u64,
    timeout_ms: i64,
) -> Result<PreparedCall<Hlc, CString>> {
    let (client, lease) = lease_of(lease)?;
    let future = acquire_lease(lease, ttl(ttl_ms)?, limit(timeout_ms));
    Ok(PreparedCall::new(&client, future, |token| {
        token_text(&token)
    }))
}

/// Acquires the lease for `ttl_ms`, waiting up to `timeout_ms` (< 0: no limit; 0: one
/// attempt). `*fencing_token` (if not NULL) receives the token; free it with
/// `statestore_string_free()`.
///
/// # Safety
/// `fencing_token` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_acquire(
    lease: *const statestore_lease,
    ttl_ms: u64,
    timeout_ms: i64,
    fencing_token: *mut *mut c_char,
) -> statestore_status {
    // SAFETY: `fencing_token` is NULL or writable during this call (this function's contract).
    let fencing_token = unsafe { Out::new(fencing_token) };
    Reply::optional(fencing_token).run(|| lease_acquire_op(lease, ttl_ms, timeout_ms))
}

/// `statestore_lease_acquire()` without blocking.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_acquire_async(
    lease: *const statestore_lease,
    ttl_ms: u64,
    timeout_ms: i64,
    callback: statestore_token_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| lease_acquire_op(lease, ttl_ms, timeout_ms))
}

/// The out-parameters of an acquisition attempt: whether it acquired (`name`, required),
/// the fencing token and the other holder's name (both optional).
struct Attempt {
    acquired: Out<bool>,
    fencing_token: Out<*mut c_char>,
    holder: Out<*mut statestore_value>,
}

impl Attempt {
    /// Checks and clears the out-parameters before the attempt.
    fn clear(&self, name: &str) -> Result<()> {
        self.acquired.put(name, false)?;
        self.fencing_token.set(std::ptr::null_mut());
        self.holder.set(std::ptr::null_mut());
        Ok(())
    }

    /// Writes the attempt's outcome; a token or a name nobody asked for is not made.
    fn write(&self, outcome: AcquireOutcome) {
        match outcome {
            AcquireOutcome::Acquired { token } => {
                self.acquired.set(true);
                if !self.fencing_token.is_null() {
                    self.fencing_token.set(token_string(&token));
                }
            }
            AcquireOutcome::HeldBy { holder: other } => {
                if let (Some(name), false) = (other, self.holder.is_null()) {
                    self.holder.set(value_of(name, None).into_raw());
                }
            }
        }
    }
}

/// One attempt: `*acquired` says whether the lease is now held. If it is and
/// `fencing_token` is not NULL, `*fencing_token` receives the token (free with
/// `statestore_string_free()`); if another holder has it and `holder` is not NULL,
/// `*holder` receives that holder's name when known (free with `statestore_value_free()`).
///
/// # Safety
/// `acquired`, `fencing_token` and `holder` are NULL or point to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_try_acquire(
    lease: *const statestore_lease,
    ttl_ms: u64,
    acquired: *mut bool,
    fencing_token: *mut *mut c_char,
    holder: *mut *mut statestore_value,
) -> statestore_status {
    let attempt = Attempt {
        // SAFETY: `acquired` is NULL or writable during this call (this function's contract).
        acquired: unsafe { Out::new(acquired) },
        // SAFETY: `fencing_token` is NULL or writable during this call (as `acquired`).
        fencing_token: unsafe { Out::new(fencing_token) },
        // SAFETY: `holder` is NULL or writable during this call (as `acquired`).
        holder: unsafe { Out::new(holder) },
    };
    entry(|| {
        attempt.clear("acquired")?;
        let (client, lease) = lease_of(lease)?;
        let ttl = ttl(ttl_ms)?;
        let outcome = client.call(async move { lease.try_acquire(ttl).await })?;
        attempt.write(outcome);
        Ok(())
    })
}

/// What a lease (or a candidate's leadership) is doing.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_lease_state {
    /// Never acquired, or released.
    STATESTORE_LEASE_NOT_HELD = 0,
    /// Held.
    STATESTORE_LEASE_HELD = 1,
    /// Was held, and was lost (see the loss reason).
    STATESTORE_LEASE_LOST = 2,
}

/// The lease's state as this holder sees it: `*state` is a `statestore_lease_state`; when
/// held and `fencing_token` is not NULL, `*fencing_token` is the token (free with
/// `statestore_string_free()`); when lost and `loss_reason` is not NULL, `*loss_reason` is a
/// `statestore_loss_reason` (else `STATESTORE_LOSS_NONE`).
///
/// # Safety
/// `state`, `fencing_token` and `loss_reason` are NULL or point to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_get_state(
    lease: *const statestore_lease,
    state: *mut i32,
    fencing_token: *mut *mut c_char,
    loss_reason: *mut i32,
) -> statestore_status {
    use statestore_core::lease::LeaseState as Core;
    // SAFETY: `state` is NULL or writable during this call (this function's contract).
    let state = unsafe { Out::new(state) };
    // SAFETY: `fencing_token` is NULL or writable during this call (as `state`).
    let fencing_token = unsafe { Out::new(fencing_token) };
    // SAFETY: `loss_reason` is NULL or writable during this call (as `state`).
    let loss_reason = unsafe { Out::new(loss_reason) };
    entry(|| {
        state.put(
            "state",
            statestore_lease_state::STATESTORE_LEASE_NOT_HELD as i32,
        )?;
        fencing_token.set(std::ptr::null_mut());
        loss_reason.set(0);
        let current = LEASES.get(lease, "lease")?.lease.state();
        match current {
            Core::NotHeld => {}
            Core::Held { token } => {
                state.set(statestore_lease_state::STATESTORE_LEASE_HELD as i32);
                if !fencing_token.is_null() {
                    fencing_token.set(token_string(&token));
                }
            }
            Core::Lost(loss) => {
                state.set(statestore_lease_state::STATESTORE_LEASE_LOST as i32);
                loss_reason.set(loss.reason as i32);
            }
        }
        Ok(())
    })
}

/// Renews the lease now (only needed without automatic renewal).
#[no_mangle]
pub extern "C" fn statestore_lease_renew(lease: *const statestore_lease) -> statestore_status {
    entry(|| {
        let (client, lease) = lease_of(lease)?;
        client.call(async move { lease.renew().await })
    })
}

fn lease_release_op(lease: *const statestore_lease) -> Result<PreparedCall<bool, bool>> {
    let (client, lease) = lease_of(lease)?;
    Ok(PreparedCall::new(
        &client,
        async move { lease.release().await },
        |was_held| was_held,
    ))
}

/// Releases the lease (deletes the key only if it holds this holder's name).
/// `*released` (if not NULL) says whether it was held.
///
/// # Safety
/// `released` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_release(
    lease: *const statestore_lease,
    released: *mut bool,
) -> statestore_status {
    // SAFETY: `released` is NULL or writable during this call (this function's contract).
    let released = unsafe { Out::new(released) };
    Reply::optional(released).run(|| lease_release_op(lease))
}

/// `statestore_lease_release()` without blocking.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_release_async(
    lease: *const statestore_lease,
    callback: statestore_done_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::status(callback, user_data) };
    reply.run(|| lease_release_op(lease))
}

/// Writes `token` (or NULL) to the required out-parameter `fencing_token`.
fn optional_token(token: Option<Hlc>, out: &Out<*mut c_char>) -> Result<()> {
    out.clear("fencing_token")?;
    if let Some(token) = token {
        out.set(token_string(&token));
    }
    Ok(())
}

/// The fencing token of the current holding, or NULL when not held. Free it with
/// `statestore_string_free()`.
///
/// # Safety
/// `fencing_token` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_fencing_token(
    lease: *const statestore_lease,
    fencing_token: *mut *mut c_char,
) -> statestore_status {
    // SAFETY: `fencing_token` is NULL or writable during this call (this function's contract).
    let fencing_token = unsafe { Out::new(fencing_token) };
    entry(|| {
        optional_token(
            LEASES.get(lease, "lease")?.lease.fencing_token(),
            &fencing_token,
        )
    })
}

/// Whether the lease is held (as this holder sees it).
///
/// # Safety
/// `held` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_is_held(
    lease: *const statestore_lease,
    held: *mut bool,
) -> statestore_status {
    // SAFETY: `held` is NULL or writable during this call (this function's contract).
    let held = unsafe { Out::new(held) };
    entry(|| held.put("held", LEASES.get(lease, "lease")?.lease.is_held()))
}

/// A read of who holds a key: a name as a value without version, NULL when nobody does.
fn holder_call(
    client: &Arc<ClientState>,
    read: impl Future<Output = Result<Option<Bytes>>> + Send + 'static,
) -> PreparedCall<Option<Bytes>, Option<OwnedValue>> {
    PreparedCall::new(client, read, |holder| {
        holder.map(|name| value_of(name, None))
    })
}

/// Reads who holds the lease's key now: `*holder` is the holder's name (a value without
/// version; free with `statestore_value_free()`) or NULL if nobody holds it.
///
/// # Safety
/// `holder` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_holder(
    lease: *const statestore_lease,
    holder: *mut *mut statestore_value,
) -> statestore_status {
    // SAFETY: `holder` is NULL or writable during this call (this function's contract).
    let holder = unsafe { Out::new(holder) };
    Reply::required(holder, "holder").run(|| {
        let (client, lease) = lease_of(lease)?;
        Ok(holder_call(&client, async move { lease.holder().await }))
    })
}

/// The loss of the current holding as an observation: one `STATESTORE_EVENT_LOST` event,
/// then the end (no event if the lease is released instead).
///
/// # Safety
/// `observation` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_lease_watch_loss(
    lease: *const statestore_lease,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    // SAFETY: `observation` is NULL or writable during this call (this function's contract).
    let observation = unsafe { Out::new(observation) };
    entry(|| {
        observation.clear("observation")?;
        let state = LEASES.get(lease, "lease")?;
        observation.set(new_observation(EventStream::from_lease_loss(&state.lease)));
        Ok(())
    })
}

/// Frees a lease handle. A lease still held stops renewing and is released in the
/// background (call `statestore_lease_release()` first to know the outcome). NULL does
/// nothing.
#[no_mangle]
pub extern "C" fn statestore_lease_free(lease: *mut statestore_lease) -> statestore_status {
    entry(|| LEASES.remove(lease, "lease").map(drop))
}

// ---------------------------------------------------------------------------------------
// Elections

/// A candidate `candidate` (unique per candidate) in the election on key `name`;
/// leadership lasts `ttl_ms` and is renewed automatically.
///
/// # Safety
/// `name` points to `name_len` readable bytes and `candidate` to `candidate_len`; `election`
/// is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_new(
    client: *const statestore_client,
    name: *const u8,
    name_len: usize,
    candidate: *const u8,
    candidate_len: usize,
    ttl_ms: u64,
    election: *mut *mut statestore_election,
) -> statestore_status {
    // SAFETY: `election` is NULL or writable during this call (this function's contract).
    let election = unsafe { Out::new(election) };
    entry(|| {
        election.clear("election")?;
        let state = CLIENTS.get(client, "client")?;
        // SAFETY: `name` points to `name_len` readable bytes, or is NULL (this function's
        // contract).
        let name = unsafe { util::key(name, name_len, "name") }?;
        // SAFETY: `candidate` points to `candidate_len` readable bytes, or is NULL (as for
        // `name`).
        let candidate = unsafe { util::key(candidate, candidate_len, "candidate") }?;
        let created = Election::new(&state.client, name, candidate, ttl(ttl_ms)?)?;
        election.set(ELECTIONS.insert(Arc::new(ElectionState {
            client: state,
            election: created,
        })));
        Ok(())
    })
}

fn election_of(election: *const statestore_election) -> Result<(Arc<ClientState>, Election)> {
    let state = ELECTIONS.get(election, "election")?;
    Ok((state.client.clone(), state.election.clone()))
}

async fn campaign(election: Election, timeout: Option<Duration>) -> Result<Hlc> {
    match timeout {
        Some(timeout) if timeout.is_zero() => match election.try_campaign().await? {
            AcquireOutcome::Acquired { token } => Ok(token),
            _ => Err(Error::Timeout(timeout)),
        },
        Some(timeout) => election.campaign_timeout(timeout).await,
        None => election.campaign().await,
    }
}

fn campaign_op(
    election: *const statestore_election,
    timeout_ms: i64,
) -> Result<PreparedCall<Hlc, CString>> {
    let (client, election) = election_of(election)?;
    let future = campaign(election, limit(timeout_ms));
    Ok(PreparedCall::new(&client, future, |token| {
        token_text(&token)
    }))
}

/// Campaigns until elected, waiting up to `timeout_ms` (< 0: no limit; 0: one attempt).
/// `*fencing_token` (if not NULL) receives the leadership's token (free with
/// `statestore_string_free()`).
///
/// # Safety
/// `fencing_token` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_campaign(
    election: *const statestore_election,
    timeout_ms: i64,
    fencing_token: *mut *mut c_char,
) -> statestore_status {
    // SAFETY: `fencing_token` is NULL or writable during this call (this function's contract).
    let fencing_token = unsafe { Out::new(fencing_token) };
    Reply::optional(fencing_token).run(|| campaign_op(election, timeout_ms))
}

/// `statestore_election_campaign()` without blocking.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_campaign_async(
    election: *const statestore_election,
    timeout_ms: i64,
    callback: statestore_token_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| campaign_op(election, timeout_ms))
}

/// One attempt to become leader: as `statestore_lease_try_acquire()` (`*elected`, the
/// token, and the current leader's name when another candidate leads).
///
/// # Safety
/// `elected`, `fencing_token` and `leader` are NULL or point to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_try_campaign(
    election: *const statestore_election,
    elected: *mut bool,
    fencing_token: *mut *mut c_char,
    leader: *mut *mut statestore_value,
) -> statestore_status {
    let attempt = Attempt {
        // SAFETY: `elected` is NULL or writable during this call (this function's contract).
        acquired: unsafe { Out::new(elected) },
        // SAFETY: `fencing_token` is NULL or writable during this call (as `elected`).
        fencing_token: unsafe { Out::new(fencing_token) },
        // SAFETY: `leader` is NULL or writable during this call (as `elected`).
        holder: unsafe { Out::new(leader) },
    };
    entry(|| {
        attempt.clear("elected")?;
        let (client, election) = election_of(election)?;
        let outcome = client.call(async move { election.try_campaign().await })?;
        attempt.write(outcome);
        Ok(())
    })
}

fn resign_op(election: *const statestore_election) -> Result<PreparedCall<(), ()>> {
    let (client, election) = election_of(election)?;
    Ok(PreparedCall::status(&client, async move {
        election.resign().await
    }))
}

/// Gives up leadership (or stops being a candidate).
#[no_mangle]
pub extern "C" fn statestore_election_resign(
    election: *const statestore_election,
) -> statestore_status {
    Reply::status_only().run(|| resign_op(election))
}

/// `statestore_election_resign()` without blocking.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_resign_async(
    election: *const statestore_election,
    callback: statestore_done_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::status(callback, user_data) };
    reply.run(|| resign_op(election))
}

/// Reads the current leader: `*leader` is its name (free with `statestore_value_free()`) or
/// NULL when there is none.
///
/// # Safety
/// `leader` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_leader(
    election: *const statestore_election,
    leader: *mut *mut statestore_value,
) -> statestore_status {
    // SAFETY: `leader` is NULL or writable during this call (this function's contract).
    let leader = unsafe { Out::new(leader) };
    Reply::required(leader, "leader").run(|| {
        let (client, election) = election_of(election)?;
        Ok(holder_call(&client, async move { election.leader().await }))
    })
}

/// Whether this candidate is the leader (as it sees it).
///
/// # Safety
/// `leader` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_is_leader(
    election: *const statestore_election,
    leader: *mut bool,
) -> statestore_status {
    // SAFETY: `leader` is NULL or writable during this call (this function's contract).
    let leader = unsafe { Out::new(leader) };
    entry(|| {
        let state = ELECTIONS.get(election, "election")?;
        leader.put("leader", state.election.is_leader())
    })
}

/// The fencing token of the current leadership, or NULL when not leader (free with
/// `statestore_string_free()`).
///
/// # Safety
/// `fencing_token` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_fencing_token(
    election: *const statestore_election,
    fencing_token: *mut *mut c_char,
) -> statestore_status {
    // SAFETY: `fencing_token` is NULL or writable during this call (this function's contract).
    let fencing_token = unsafe { Out::new(fencing_token) };
    entry(|| {
        let state = ELECTIONS.get(election, "election")?;
        optional_token(state.election.fencing_token(), &fencing_token)
    })
}

/// Observes the election's leader: `STATESTORE_EVENT_ELECTED` (with the leader's name in
/// `holder`) and `STATESTORE_EVENT_VACANT` events.
///
/// # Safety
/// `observation` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_observe(
    election: *const statestore_election,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    // SAFETY: `observation` is NULL or writable during this call (this function's contract).
    let observation = unsafe { Out::new(observation) };
    entry(|| {
        observation.clear("observation")?;
        let (client, election) = election_of(election)?;
        let key = election.name().clone();
        let observed = client.call(async move { election.observe().await })?;
        observation.set(new_observation(EventStream::from_leader(observed, key)));
        Ok(())
    })
}

/// The loss of the current leadership as an observation (one `STATESTORE_EVENT_LOST` event,
/// then the end; none if it resigns).
///
/// # Safety
/// `observation` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_election_watch_loss(
    election: *const statestore_election,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    // SAFETY: `observation` is NULL or writable during this call (this function's contract).
    let observation = unsafe { Out::new(observation) };
    entry(|| {
        observation.clear("observation")?;
        let state = ELECTIONS.get(election, "election")?;
        observation.set(new_observation(EventStream::from_lease_loss(
            state.election.lease(),
        )));
        Ok(())
    })
}

/// Frees an election handle. A leader stops renewing and its leadership is released in the
/// background (call `statestore_election_resign()` first to know the outcome). NULL does
/// nothing.
#[no_mangle]
pub extern "C" fn statestore_election_free(
    election: *mut statestore_election,
) -> statestore_status {
    entry(|| ELECTIONS.remove(election, "election").map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{statestore_string_free, statestore_value_free};
    use crate::status::last_error;
    use crate::status::statestore_status::{STATESTORE_ERR_INVALID_ARGUMENT, STATESTORE_OK};

    #[test]
    fn an_update_buffer_takes_a_copy_while_its_handle_lives() {
        let slot = Arc::new(Mutex::new(Bytes::new()));
        let buffer: *mut statestore_buffer = BUFFERS.insert(slot.clone());
        let mut data = *b"new";
        // SAFETY: `data` is 3 readable bytes.
        let status = unsafe { statestore_buffer_set(buffer, data.as_ptr(), 3) };
        assert_eq!(status, STATESTORE_OK);
        data[0] = b'x';
        assert_eq!(
            &slot.lock().unwrap()[..],
            b"new",
            "a copy of the caller's bytes"
        );
        // SAFETY: a length of 0 reads nothing.
        let status = unsafe { statestore_buffer_set(buffer, std::ptr::null(), 0) };
        assert_eq!(status, STATESTORE_OK);
        assert!(slot.lock().unwrap().is_empty());
        BUFFERS.remove(buffer, "buffer").unwrap();
        // SAFETY: `data` is 3 readable bytes; the handle is checked first.
        let status = unsafe { statestore_buffer_set(buffer, data.as_ptr(), 3) };
        assert_eq!(status, STATESTORE_ERR_INVALID_ARGUMENT);
        assert!(
            last_error().contains("buffer is not a live"),
            "{}",
            last_error()
        );
    }

    #[test]
    fn an_attempt_writes_only_the_out_parameters_given() {
        let token = Hlc {
            wall_ms: 1_700_000_000_000,
            counter: 2,
            node: "n".into(),
        };
        let mut acquired = true;
        let mut fencing_token: *mut c_char = std::ptr::NonNull::dangling().as_ptr();
        let mut holder: *mut statestore_value = std::ptr::NonNull::dangling().as_ptr();
        let attempt = Attempt {
            // SAFETY: locals that nothing else touches while `attempt` is used.
            acquired: unsafe { Out::new(&mut acquired) },
            // SAFETY: as above.
            fencing_token: unsafe { Out::new(&mut fencing_token) },
            // SAFETY: as above.
            holder: unsafe { Out::new(&mut holder) },
        };
        attempt.clear("acquired").unwrap();
        attempt.write(AcquireOutcome::Acquired {
            token: token.clone(),
        });
        assert!(acquired && holder.is_null());
        // SAFETY: the library's NUL-terminated token.
        let text = unsafe { std::ffi::CStr::from_ptr(fencing_token) };
        assert_eq!(text.to_str().unwrap(), token.to_string());
        // SAFETY: the library's string, freed once.
        unsafe { statestore_string_free(fencing_token) };

        let attempt = Attempt {
            // SAFETY: locals that nothing else touches while `attempt` is used.
            acquired: unsafe { Out::new(&mut acquired) },
            fencing_token: Out::none(),
            // SAFETY: as above.
            holder: unsafe { Out::new(&mut holder) },
        };
        attempt.clear("acquired").unwrap();
        attempt.write(AcquireOutcome::HeldBy {
            holder: Some(Bytes::from_static(b"other")),
        });
        assert!(!acquired);
        // SAFETY: the value the attempt wrote.
        let name = unsafe { &*holder };
        // SAFETY: a value's `data` points to its `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(name.data, name.len) };
        assert_eq!(bytes, b"other");
        // SAFETY: the library's value, freed once.
        unsafe { statestore_value_free(holder) };

        let attempt = Attempt {
            acquired: Out::none(),
            // SAFETY: a local that nothing else touches while `attempt` is used.
            fencing_token: unsafe { Out::new(&mut fencing_token) },
            holder: Out::none(),
        };
        let error = attempt.clear("acquired").unwrap_err().to_string();
        assert!(error.contains("acquired is NULL"), "{error}");
    }
}
