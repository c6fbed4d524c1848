//! Translation between core results and JavaScript: promises settled from core's runtime,
//! blocking twins, errors with a stable `code`, bytes in and out.

use std::ptr;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;

use napi::bindgen_prelude::{Either, Null, Object, ToNapiValue, TypeName, ValueType};
use napi::sys;
use napi::{Env, JsValue};
use napi_derive::napi;
use statestore::bindings::{Canceller, Pending, Started};
use statestore::Hlc;
pub use statestore_node_convert::check;
pub use statestore_node_convert::errors::{error_object, js_error, throw};

/// A field that is `null` in JavaScript when absent (an `Option` field would be left out).
#[napi]
pub type Nullable<T> = Either<T, Null>;

/// [`Nullable`] of an `Option`.
pub fn nullable<T>(value: Option<T>) -> Nullable<T> {
    match value {
        Some(value) => Either::A(value),
        None => Either::B(Null),
    }
}

/// A version or fencing token in its text form (`wallMs:counter:node`).
pub fn version(hlc: Option<Hlc>) -> Option<String> {
    hlc.map(|v| v.to_string())
}

/// Bytes for JavaScript: a Buffer whose memory belongs to the JavaScript engine
/// (`napi_create_buffer_copy`), copied once when it is handed over on the JavaScript thread;
/// or, for a client connected with `returnStrings` (see [`Out`]), a string.
///
/// Not an external buffer over Rust memory (`Buffer::from(Vec)`): Node releases external
/// memory through finalizers it runs on the event loop, so a synchronous loop of `getSync`
/// that never yields kept every value it had read (+228 MiB over a million calls). The
/// engine frees its own copies at garbage collection, yielding or not.
pub struct JsBuffer {
    bytes: Bytes,
    text: bool,
}

/// How an object hands bytes (values, keys, names) to JavaScript: Buffers, or strings for a
/// client connected with `returnStrings` (UTF-8 read as `buffer.toString()` reads it: an
/// invalid sequence becomes U+FFFD). Everything made from a client keeps the client's choice.
#[derive(Clone, Copy)]
pub struct Out {
    text: bool,
}

impl Out {
    /// Buffers.
    pub const BUFFERS: Out = Out { text: false };

    /// Strings when `text`, otherwise Buffers.
    pub fn strings(text: bool) -> Out {
        Out { text }
    }

    /// [`JsBuffer`] of `bytes` (a reference count, not a copy: the copy is made for
    /// JavaScript).
    pub fn bytes(self, bytes: &Bytes) -> JsBuffer {
        JsBuffer {
            bytes: bytes.clone(),
            text: self.text,
        }
    }
}

/// A Buffer of `bytes`, whatever the client's choice (a loss's holder).
pub fn buffer(bytes: &Bytes) -> JsBuffer {
    Out::BUFFERS.bytes(bytes)
}

impl TypeName for JsBuffer {
    fn type_name() -> &'static str {
        "Buffer"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for JsBuffer {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        let mut made = ptr::null_mut();
        let (data, len) = (value.bytes.as_ptr(), value.bytes.len());
        let status = if value.text {
            // SAFETY: `env` is the live environment napi-rs converts on (this trait's contract);
            // `data` points at `len` bytes of UTF-8 that `value` keeps alive for the call, which
            // copies them into a string of the engine; `made` is a local it writes.
            unsafe { sys::napi_create_string_utf8(env, data.cast(), len as isize, &mut made) }
        } else {
            // SAFETY: as above; the bytes are copied into a Buffer the engine owns, and the
            // null `result_data` asks for no pointer into it.
            unsafe {
                sys::napi_create_buffer_copy(env, len, data.cast(), ptr::null_mut(), &mut made)
            }
        };
        check(status)?;
        Ok(made)
    }
}

/// How often a blocking `…Sync` call looks whether its environment is being torn down.
pub const STOP_CHECK: Duration = Duration::from_millis(50);

/// Whether `env` can still run JavaScript; fails once its teardown has begun (a worker's
/// `terminate()`, `process.exit()`). Node stops a worker by telling its thread to stop and then
/// joining it, so a `…Sync` call blocked on that thread must notice and return, or the
/// terminating thread (and `process.exit`) waits for it forever. Called on the environment's
/// own thread, inside the blocking call.
///
/// Node-API has no query for this, but every call that may run JavaScript refuses to start
/// once the environment stops; coercing `undefined` to a boolean is such a call that runs
/// none.
pub fn alive(env: &Env) -> statestore::Result<()> {
    let raw = env.raw();
    let mut scope = ptr::null_mut();
    // SAFETY: `raw` is the environment of the JavaScript call running on this thread (the
    // caller's contract: called inside the blocking call); `scope` is a local it writes.
    let opened = unsafe { sys::napi_open_handle_scope(raw, &mut scope) };
    let status = if opened != sys::Status::napi_ok {
        // Not an answer either way: keep waiting, and look again next time.
        sys::Status::napi_ok
    } else {
        let mut undefined = ptr::null_mut();
        let mut coerced = ptr::null_mut();
        // SAFETY: the same environment, on its thread, inside the scope just opened (which
        // owns the handle written to the local `undefined`).
        let mut status = unsafe { sys::napi_get_undefined(raw, &mut undefined) };
        if status == sys::Status::napi_ok {
            // SAFETY: as above; `undefined` is a handle of the open scope.
            status = unsafe { sys::napi_coerce_to_bool(raw, undefined, &mut coerced) };
        }
        // SAFETY: `scope` was opened above on this environment and thread, and is closed once;
        // no handle made in it is used after this.
        unsafe { sys::napi_close_handle_scope(raw, scope) };
        status
    };
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(statestore::Error::Runtime(
            "this thread's JavaScript environment is shutting down (worker terminated or \
             process exiting): the blocking call was abandoned"
                .into(),
        ))
    }
}

/// A JavaScript error for a core error, thrown from a synchronous call ([`throw`]: return it
/// at once).
pub fn sync<T>(env: &Env, result: statestore::Result<T>) -> napi::Result<T> {
    result.map_err(|error| throw(env, &error))
}

/// How JavaScript wants one call's result: the first argument of every native operation, so
/// that each operation is written once for its Promise method and its `…Sync` twin.
///
/// Absent: a Promise. The package's one blocking instance (`new NativeCall(true)`): the result
/// itself, the JavaScript thread blocked until it comes. Any other instance (one per call): a
/// Promise whose call `cancel()` cancels (an `AbortSignal`'s abort), through core's
/// [`Canceller`].
#[napi]
pub struct NativeCall {
    blocking: bool,
    cancel: Mutex<Cancel>,
}

#[derive(Default)]
struct Cancel {
    cancelled: bool,
    canceller: Option<Canceller>,
}

#[napi]
impl NativeCall {
    #[napi(constructor, catch_unwind)]
    pub fn new(blocking: bool) -> NativeCall {
        NativeCall {
            blocking,
            cancel: Mutex::default(),
        }
    }

    /// Cancels the call (now, or as soon as it starts): its Promise rejects with
    /// `STATESTORE_CANCELLED` unless it already settled. Idempotent.
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        let canceller = {
            let mut cancel = self.cancel.lock().unwrap_or_else(|e| e.into_inner());
            cancel.cancelled = true;
            cancel.canceller.take()
        };
        if let Some(canceller) = canceller {
            canceller.cancel();
        }
    }
}

impl NativeCall {
    fn attach(&self, canceller: Canceller) {
        let mut cancel = self.cancel.lock().unwrap_or_else(|e| e.into_inner());
        if cancel.cancelled {
            drop(cancel);
            canceller.cancel();
        } else {
            cancel.canceller = Some(canceller);
        }
    }
}

/// The first argument of every native operation (see [`NativeCall`]).
#[napi]
pub type Call<'a> = Option<&'a NativeCall>;

/// Whether `call` asks for the result itself (a `…Sync` twin).
pub fn blocking(call: Call) -> bool {
    call.is_some_and(|call| call.blocking)
}

/// What a native operation returns: the value (blocking call) or a Promise of it.
pub type Returned<'env, D> = Either<D, Object<'env>>;

/// Delivers `pending`'s result as `call` asks ([`NativeCall`]); `convert` builds the
/// JavaScript value on the JavaScript thread, and a core error becomes [`js_error`].
pub fn run<'env, T, D, C>(
    env: &'env Env,
    call: Call,
    pending: Pending<T>,
    convert: C,
) -> napi::Result<Returned<'env, D>>
where
    T: Send + 'static,
    D: ToNapiValue + 'static,
    C: FnOnce(&Env, T) -> napi::Result<D> + Send + 'static,
{
    match call {
        Some(call) if call.blocking => {
            let value = sync(env, pending.wait_checked(STOP_CHECK, &mut || alive(env)))?;
            convert(env, value).map(Either::A)
        }
        Some(call) => {
            call.attach(pending.canceller());
            promise(env, pending, convert).map(Either::B)
        }
        None => promise(env, pending, convert).map(Either::B),
    }
}

/// Returns a Promise settled when `pending` completes: `convert` builds the JavaScript value
/// on the JavaScript thread; a core error rejects with [`js_error`].
///
/// The call starts here ([`Pending::start`]): one that completes in its first steps (refused
/// before sending) is settled before this returns. Any other's result is handed over from
/// whichever runtime thread completes it (`on_complete_inline`: no extra thread hop) to the
/// environment's one settling queue ([`settle`]).
pub fn promise<'env, T, D, C>(
    env: &'env Env,
    pending: Pending<T>,
    convert: C,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    D: ToNapiValue + 'static,
    C: FnOnce(&Env, T) -> napi::Result<D> + Send + 'static,
{
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: `env` is the environment of the JavaScript call running on this thread (a `&Env`
    // is only handed out there); `deferred` and `promise` are locals it writes.
    check(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) })?;
    let deferred = settle::Deferred(deferred);
    let promise = Object::from_raw(env.raw(), promise);
    let pending = match pending.start() {
        Started::Done(result) => {
            // SAFETY: on the JavaScript thread of the live `env` this call runs in.
            unsafe { settle_with(env.raw(), deferred, result, convert) };
            return Ok(promise);
        }
        Started::Running(pending) => pending,
    };
    let queue = settle::queue(env)?;
    queue.begin(env);
    pending.on_complete_inline(move |result| {
        queue.send(Box::new(move |raw: sys::napi_env| {
            // SAFETY: the queue runs each job on the environment's JavaScript thread with its
            // live `raw` env (`settle::call_js` drops jobs once it is gone).
            unsafe { settle_with(raw, deferred, result, convert) };
        }))
    });
    Ok(promise)
}

/// Settles `deferred` with `result`, converted by `convert` (a core error: [`js_error`]).
///
/// # Safety
/// `raw` is the promise's live environment and this runs on its JavaScript thread.
unsafe fn settle_with<T, D, C>(
    raw: sys::napi_env,
    deferred: settle::Deferred,
    result: statestore::Result<T>,
    convert: C,
) where
    D: ToNapiValue,
    C: FnOnce(&Env, T) -> napi::Result<D>,
{
    let env = Env::from_raw(raw);
    let value = match result {
        Ok(value) => convert(&env, value)
            .and_then(|data| {
                // SAFETY: `raw` is live on this thread (this function's contract).
                unsafe { D::to_napi_value(raw, data) }
            })
            .map(Ok),
        Err(error) => error_object(&env, &error).map(|object| Err(object.raw())),
    };
    // SAFETY: as above; the deferred is consumed, so it is settled exactly once.
    unsafe { deferred.settle(raw, value) };
}

/// Settling promises from runtime threads: one thread-safe function per environment for every
/// call (rather than one per call), so completions that arrive together wake the event loop
/// once. It is referenced only while calls are in flight (a pending call keeps the process
/// alive, an idle client does not), and released at the environment's teardown under the lock
/// that every sender takes, so no runtime thread ever calls into a torn-down environment.
pub mod settle {
    use std::cell::{Cell, RefCell};
    use std::ffi::c_void;
    use std::ptr;
    use std::sync::{Arc, Mutex};

    use napi::{sys, Env};

    /// Work to run on the JavaScript thread (settling one promise); `None` env: torn down.
    pub type Job = Box<dyn FnOnce(sys::napi_env) + Send>;

    /// A promise's deferred, settled exactly once on its environment's thread.
    pub struct Deferred(pub sys::napi_deferred);
    // SAFETY: a deferred may only be used on its environment's thread; it crosses threads
    // inside a job that the queue runs there, and is used by that job alone.
    unsafe impl Send for Deferred {}

    impl Deferred {
        /// Resolves the promise with `Ok(Ok(value))`, rejects it with `Ok(Err(reason))`, or
        /// with the error of a conversion that failed.
        ///
        /// # Safety
        /// `env` is the promise's live environment and this runs on its thread (where the
        /// queue runs jobs).
        pub unsafe fn settle(
            self,
            env: sys::napi_env,
            outcome: napi::Result<Result<sys::napi_value, sys::napi_value>>,
        ) {
            let reason = match outcome {
                Ok(Ok(value)) => {
                    // SAFETY: `env` is live on this thread (this method's contract) and the
                    // deferred, consumed with `self`, is settled exactly once.
                    unsafe { sys::napi_resolve_deferred(env, self.0, value) };
                    return;
                }
                Ok(Err(reason)) => reason,
                Err(error) => {
                    // SAFETY: `env` is live on this thread (this method's contract).
                    unsafe { napi::bindgen_prelude::ToNapiValue::to_napi_value(env, error) }
                        .unwrap_or(ptr::null_mut())
                }
            };
            // SAFETY: as for resolving: live `env`, a deferred settled exactly once.
            unsafe { sys::napi_reject_deferred(env, self.0, reason) };
        }
    }

    struct Tsfn(sys::napi_threadsafe_function);
    // SAFETY: Node-API lets `napi_call_threadsafe_function` be called from any thread; the
    // calls that must run on the environment's thread (ref, unref, release) are made there.
    unsafe impl Send for Tsfn {}

    /// The sending side, shared with runtime threads.
    pub struct Queue {
        tsfn: Mutex<Option<Tsfn>>,
    }

    impl Queue {
        /// Queues `job` for the JavaScript thread; dropped if the environment is gone.
        pub fn send(&self, job: Job) {
            let tsfn = self.tsfn.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(tsfn) = tsfn.as_ref() {
                let data = Box::into_raw(Box::new(job)).cast::<c_void>();
                // SAFETY: the function is not released while `tsfn` is held: `teardown` takes
                // it out under this lock before releasing it. `data` is handed to `call_js`.
                let status = unsafe {
                    sys::napi_call_threadsafe_function(
                        tsfn.0,
                        data,
                        sys::ThreadsafeFunctionCallMode::nonblocking,
                    )
                };
                if status != sys::Status::napi_ok {
                    // Closing: the job is not queued, so it is ours to drop.
                    // SAFETY: `data` came from `Box::into_raw` above and was not queued, so
                    // nothing else owns it.
                    drop(unsafe { Box::from_raw(data.cast::<Job>()) });
                }
            }
        }

        /// A call is in flight (JavaScript thread).
        pub fn begin(&self, env: &Env) {
            LOCAL.with(|local| {
                if let Some(local) = local.borrow().iter().find(|l| l.env == env.raw() as usize) {
                    let n = local.in_flight.get();
                    local.in_flight.set(n + 1);
                    if n == 0 {
                        self.reference(env.raw(), true);
                    }
                }
            });
        }

        fn reference(&self, env: sys::napi_env, on: bool) {
            if let Some(tsfn) = self.tsfn.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                if on {
                    // SAFETY: called on the environment's thread with its live `env` (from
                    // `begin` and `call_js`); the function is not released while the lock is
                    // held.
                    unsafe { sys::napi_ref_threadsafe_function(env, tsfn.0) };
                } else {
                    // SAFETY: as for `ref`.
                    unsafe { sys::napi_unref_threadsafe_function(env, tsfn.0) };
                }
            }
        }
    }

    /// The JavaScript thread's side of each of its environments.
    struct Local {
        env: usize,
        queue: Arc<Queue>,
        in_flight: Cell<usize>,
    }

    thread_local! {
        static LOCAL: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
    }

    /// The thread-safe function's call: runs one queued job on the JavaScript thread.
    ///
    /// # Safety
    /// Called by Node-API only, with `data` from `Queue::send` (a boxed [`Job`], passed once)
    /// and `env` the live environment or null when it is torn down.
    unsafe extern "C" fn call_js(
        env: sys::napi_env,
        _callback: sys::napi_value,
        _context: *mut c_void,
        data: *mut c_void,
    ) {
        // SAFETY: `data` is the `Box<Job>` that `Queue::send` leaked for this one call
        // (this function's contract), so it is reclaimed exactly once.
        let job = unsafe { Box::from_raw(data.cast::<Job>()) };
        if env.is_null() {
            return; // torn down: drop the job
        }
        job(env);
        LOCAL.with(|local| {
            if let Some(local) = local.borrow().iter().find(|l| l.env == env as usize) {
                let n = local.in_flight.get().saturating_sub(1);
                local.in_flight.set(n);
                if n == 0 {
                    local.queue.reference(env, false);
                }
            }
        });
    }

    /// The environment's queue, created on first use.
    pub fn queue(env: &Env) -> napi::Result<Arc<Queue>> {
        let id = env.raw() as usize;
        if let Some(queue) = LOCAL.with(|local| {
            local
                .borrow()
                .iter()
                .find(|l| l.env == id)
                .map(|l| l.queue.clone())
        }) {
            return Ok(queue);
        }
        let mut name = ptr::null_mut();
        let mut tsfn = ptr::null_mut();
        // SAFETY: `env` is the environment of the JavaScript call running on this thread; the
        // name is a static C string of 10 bytes; `name` is a local it writes.
        super::check(unsafe {
            sys::napi_create_string_utf8(env.raw(), c"statestore".as_ptr(), 10, &mut name)
        })?;
        // SAFETY: the same live environment and thread; no JavaScript function (`call_js`
        // does the work), no finalizer or context, a queue without limit and one thread using
        // it; `tsfn` is a local it writes.
        super::check(unsafe {
            sys::napi_create_threadsafe_function(
                env.raw(),
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                Some(call_js),
                &mut tsfn,
            )
        })?;
        // Idle until a call is in flight.
        // SAFETY: `tsfn` was just created on this environment, on its thread.
        unsafe { sys::napi_unref_threadsafe_function(env.raw(), tsfn) };
        let queue = Arc::new(Queue {
            tsfn: Mutex::new(Some(Tsfn(tsfn))),
        });
        LOCAL.with(|local| {
            local.borrow_mut().push(Local {
                env: id,
                queue: queue.clone(),
                in_flight: Cell::new(0),
            })
        });
        Ok(queue)
    }

    /// The environment is being torn down (its cleanup hook, on its thread): no job is sent
    /// after this; queued ones are dropped by Node with a null env.
    pub fn teardown(env_id: usize) {
        let local = LOCAL.with(|local| {
            let mut local = local.borrow_mut();
            let at = local.iter().position(|l| l.env == env_id)?;
            Some(local.swap_remove(at))
        });
        if let Some(local) = local {
            let tsfn = local
                .queue
                .tsfn
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(tsfn) = tsfn {
                // SAFETY: on the environment's thread (its cleanup hook); taken out under the
                // lock every sender holds, so no sender uses it after this release.
                unsafe {
                    sys::napi_release_threadsafe_function(
                        tsfn.0,
                        sys::ThreadsafeFunctionReleaseMode::abort,
                    )
                };
            }
        }
    }
}
