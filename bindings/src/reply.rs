//! How a call's result reaches C: written through out-parameters by a blocking entry point,
//! passed to the callback of an `_async` one. Each operation converts its arguments and its
//! result once (a [`PreparedCall`]); its two entry points differ only in the [`Reply`] they pass.

use std::ffi::{c_char, c_void, CString};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use statestore_core::bindings::{ErrorInfo, Pending};
use statestore_core::{Error, Result};

use crate::callbacks::run_callback;
use crate::client_state::ClientState;
use crate::status::{c_string, entry, statestore_status};
use crate::util::{null, Out, UserData};

/// The value of an out-parameter or a callback argument when there is no result.
pub(crate) trait Blank {
    fn blank() -> Self;
}

impl<T> Blank for *mut T {
    fn blank() -> Self {
        std::ptr::null_mut()
    }
}

impl<T> Blank for *const T {
    fn blank() -> Self {
        std::ptr::null()
    }
}

impl Blank for bool {
    fn blank() -> Self {
        false
    }
}

impl Blank for () {
    fn blank() -> Self {}
}

/// A result in its C form.
pub(crate) trait ToC {
    /// What a blocking call writes through its out-parameter (then owned by the caller).
    type Out: Blank;
    /// What an `_async` call passes to its callback.
    type Arg: Blank + 'static;
    /// Hands the result to the caller of a blocking call.
    fn into_out(self) -> Self::Out;
    /// Calls `f` with the result as a callback argument: borrowed for the call (a struct, a
    /// string) or given away (a new handle).
    fn lend(self, f: impl FnOnce(Self::Arg));
}

/// A result the library allocated: the C view first, then what it points into. The view's
/// pointers point into `keep`'s heap memory (`Bytes`, `Vec`, [`CText`](crate::util::CText)), never into the
/// struct itself, so they stay valid when the `Owned` moves.
#[repr(C)]
pub(crate) struct Owned<C, K> {
    pub(crate) view: C,
    pub(crate) keep: K,
}

impl<C, K> Owned<C, K> {
    /// The result on the heap, as the pointer C gets: its view, the struct's first field
    /// (`repr(C)`), so the pointer is also that of the whole `Owned`.
    pub(crate) fn into_raw(self) -> *mut C {
        Box::into_raw(Box::new(self)).cast()
    }

    /// Frees a result given to C by [`Owned::into_raw`].
    ///
    /// # Safety
    /// `view` is NULL or was returned by `into_raw` of the same `Owned<C, K>` type and not
    /// freed since. In C terms: NULL, or a result of this library's matching type, freed once.
    pub(crate) unsafe fn free(view: *mut C) {
        if !view.is_null() {
            // SAFETY: `view` came from `Box::into_raw` of an `Owned<C, K>` (this function's
            // contract); the cast only undoes `into_raw`'s, and the box is freed once.
            drop(unsafe { Box::from_raw(view.cast::<Owned<C, K>>()) });
        }
    }
}

/// A result struct: the caller frees it; a callback borrows it.
impl<C: 'static, K> ToC for Owned<C, K> {
    type Out = *mut C;
    type Arg = *const C;
    fn into_out(self) -> *mut C {
        self.into_raw()
    }
    fn lend(self, f: impl FnOnce(*const C)) {
        f(&self.view)
    }
}

/// An absent result (a missing key): NULL.
impl<R: ToC> ToC for Option<R> {
    type Out = R::Out;
    type Arg = R::Arg;
    fn into_out(self) -> R::Out {
        self.map_or_else(Blank::blank, ToC::into_out)
    }
    fn lend(self, f: impl FnOnce(R::Arg)) {
        match self {
            Some(result) => result.lend(f),
            None => f(Blank::blank()),
        }
    }
}

/// A new handle: owned by the caller, or by the callback that receives it.
impl<P: 'static> ToC for *mut P {
    type Out = *mut P;
    type Arg = *mut P;
    fn into_out(self) -> *mut P {
        self
    }
    fn lend(self, f: impl FnOnce(*mut P)) {
        f(self)
    }
}

/// A string (a fencing token): the caller frees it with `statestore_string_free()`; a
/// callback borrows it.
impl ToC for CString {
    type Out = *mut c_char;
    type Arg = *const c_char;
    fn into_out(self) -> *mut c_char {
        self.into_raw()
    }
    fn lend(self, f: impl FnOnce(*const c_char)) {
        f(self.as_ptr())
    }
}

impl ToC for bool {
    type Out = bool;
    type Arg = bool;
    fn into_out(self) -> bool {
        self
    }
    fn lend(self, f: impl FnOnce(bool)) {
        f(self)
    }
}

impl ToC for () {
    type Out = ();
    type Arg = ();
    fn into_out(self) {}
    fn lend(self, f: impl FnOnce(())) {
        f(())
    }
}

/// An `_async` call's C callback and its user data, as one closure of status, message and
/// result. Only [`Callback::deliver`] calls the closure (the field is private to this
/// module), with a message and a result that stay valid during the call.
pub(crate) struct Callback<A>(Box<dyn FnOnce(statestore_status, *const c_char, A) + Send>);

impl<A: Blank> Callback<A> {
    /// Calls the C callback with `result` (borrowed for the call) or the error.
    pub(crate) fn deliver<R: ToC<Arg = A>>(self, result: Result<R>) {
        let call = self.0;
        match result {
            Ok(value) => {
                value.lend(|arg| call(statestore_status::STATESTORE_OK, std::ptr::null(), arg))
            }
            Err(error) => {
                let info = ErrorInfo::from(&error);
                let message = c_string(info.message);
                call(
                    statestore_status::from_code(info.code),
                    message.as_ptr(),
                    A::blank(),
                )
            }
        }
    }
}

/// How an entry point reports a result: through an out-parameter once the call is done
/// (blocking), or to a callback on a library thread (`_async`).
pub(crate) enum Reply<R: ToC> {
    /// Block; write the result through the out-parameter unless it is NULL.
    Wait(Out<R::Out>),
    /// Return at once; the callback gets the result.
    Callback(Callback<R::Arg>),
    /// An argument of the reply itself was refused (a NULL callback or out-parameter).
    Refused(Error),
}

/// A C callback of an `_async` call: user data, status, message, result.
pub(crate) type CCallback<A> =
    Option<unsafe extern "C" fn(*mut c_void, statestore_status, *const c_char, A)>;

/// A C callback that gets only the status (`statestore_done_cb`).
pub(crate) type CStatusCallback =
    Option<unsafe extern "C" fn(*mut c_void, statestore_status, *const c_char)>;

impl<R: ToC> Reply<R> {
    /// Blocking; `out` may be NULL (the result is then dropped). Cleared first, so that a
    /// failed call leaves NULL behind.
    pub(crate) fn optional(out: Out<R::Out>) -> Self {
        out.set(Blank::blank());
        Self::Wait(out)
    }

    /// Blocking; `out` (the argument `name`) may not be NULL.
    pub(crate) fn required(out: Out<R::Out>, name: &str) -> Self {
        if out.is_null() {
            return Self::Refused(null(name));
        }
        Self::optional(out)
    }

    /// Blocking, for calls whose only result is their status.
    pub(crate) fn status_only() -> Self {
        Self::Wait(Out::none())
    }

    /// `_async`: `callback` gets the status, the message and the result.
    ///
    /// # Safety
    /// `callback` is NULL, or may be called once with `user_data` from a library thread (the
    /// contract every `_async` function passes on to C).
    pub(crate) unsafe fn callback(callback: CCallback<R::Arg>, user_data: *mut c_void) -> Self {
        let Some(callback) = callback else {
            return Self::Refused(null("callback"));
        };
        let user = UserData(user_data);
        Self::Callback(Callback(Box::new(move |status, message, arg| {
            // SAFETY: the caller of `Reply::callback` promised that `callback` may be called
            // with `user_data` from this thread; `deliver` keeps `message` and `arg` valid.
            unsafe { callback(user.get(), status, message, arg) }
        })))
    }

    /// `_async`: `callback` gets the status and the message only.
    ///
    /// # Safety
    /// As [`Reply::callback`].
    pub(crate) unsafe fn status(callback: CStatusCallback, user_data: *mut c_void) -> Self {
        let Some(callback) = callback else {
            return Self::Refused(null("callback"));
        };
        let user = UserData(user_data);
        Self::Callback(Callback(Box::new(move |status, message, _| {
            // SAFETY: the caller of `Reply::status` promised that `callback` may be called
            // with `user_data` from this thread; `deliver` keeps `message` valid.
            unsafe { callback(user.get(), status, message) }
        })))
    }

    /// The entry point's body: refuses a bad reply argument first, then runs the call that
    /// `prepare` makes from the C arguments, and reports its result.
    pub(crate) fn run<T>(
        self,
        prepare: impl FnOnce() -> Result<PreparedCall<T, R>>,
    ) -> statestore_status
    where
        T: Send + 'static,
        R: 'static,
    {
        entry(|| {
            let reply = self.accepted()?;
            prepare()?.finish(reply)
        })
    }

    /// The reply, or the error of its own argument.
    pub(crate) fn accepted(self) -> Result<Self> {
        match self {
            Self::Refused(error) => Err(error),
            reply => Ok(reply),
        }
    }
}

/// Where a call runs.
pub(crate) enum Runner {
    /// Tracked by its client: `statestore_close()` cancels it and waits for its callback.
    Client(Arc<ClientState>),
    /// On its own (a connect, which has no client yet).
    Detached,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// A call prepared from C arguments: where it runs, its future, and the conversion of its
/// result into its C form, applied where the result is delivered (a handle made for a result that a cancellation then
/// discarded would never be freed).
pub(crate) struct PreparedCall<T, R> {
    runner: Runner,
    future: BoxFuture<T>,
    convert: Box<dyn FnOnce(T) -> R + Send>,
}

impl PreparedCall<(), ()> {
    /// A call of `client` whose only result is its status.
    pub(crate) fn status(
        client: &Arc<ClientState>,
        future: impl Future<Output = Result<()>> + Send + 'static,
    ) -> Self {
        Self::new(client, future, |()| ())
    }
}

impl<T: Send + 'static, R: ToC + 'static> PreparedCall<T, R> {
    /// A call of `client`.
    pub(crate) fn new(
        client: &Arc<ClientState>,
        future: impl Future<Output = Result<T>> + Send + 'static,
        convert: impl FnOnce(T) -> R + Send + 'static,
    ) -> Self {
        Self {
            runner: Runner::Client(client.clone()),
            future: Box::pin(future),
            convert: Box::new(convert),
        }
    }

    /// A call that no client tracks.
    pub(crate) fn detached(
        future: impl Future<Output = Result<T>> + Send + 'static,
        convert: impl FnOnce(T) -> R + Send + 'static,
    ) -> Self {
        Self {
            runner: Runner::Detached,
            future: Box::pin(future),
            convert: Box::new(convert),
        }
    }

    /// Runs the call and reports its result as `reply` says.
    pub(crate) fn finish(self, reply: Reply<R>) -> Result<()> {
        match reply {
            Reply::Wait(out) => {
                let result = match self.runner {
                    Runner::Client(client) => client.call(self.future),
                    Runner::Detached => Pending::spawn(self.future).wait(),
                }?;
                let value = (self.convert)(result);
                // Converted to its C form only for a caller who takes it, so that a result
                // nobody asked for is dropped, not leaked.
                if !out.is_null() {
                    out.set(value.into_out());
                }
                Ok(())
            }
            Reply::Callback(callback) => {
                self.spawn(callback);
                Ok(())
            }
            Reply::Refused(error) => Err(error),
        }
    }

    /// Starts the call; `callback` gets its result exactly once, on the dispatcher thread.
    pub(crate) fn spawn(self, callback: Callback<R::Arg>) {
        let convert = self.convert;
        let done = move |result: Result<T>| callback.deliver(result.map(convert));
        match self.runner {
            Runner::Client(client) => client.call_async(self.future, done),
            Runner::Detached => {
                Pending::spawn(self.future).on_complete(move |result| run_callback(|| done(result)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;
    use std::time::Duration;

    use bytes::Bytes;

    use super::*;
    use crate::client::{statestore_value, statestore_value_free, value_of, OwnedValue};

    /// What a C callback saw.
    #[derive(Debug, Default, PartialEq)]
    struct Seen {
        calls: u32,
        status: i32,
        message: Option<String>,
        value: Option<Vec<u8>>,
    }

    /// A C callback that copies what it is given into the `Seen` behind `user`.
    unsafe extern "C" fn record(
        user: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        value: *const statestore_value,
    ) {
        // SAFETY: the tests pass a live `Seen` as user data, used by nothing else meanwhile.
        let seen = unsafe { &mut *user.cast::<Seen>() };
        seen.calls += 1;
        seen.status = status as i32;
        seen.message = (!message.is_null()).then(|| {
            // SAFETY: not NULL, so a NUL-terminated message borrowed for this call.
            let text = unsafe { CStr::from_ptr(message) };
            text.to_string_lossy().into_owned()
        });
        // SAFETY: NULL or a value borrowed for this call.
        seen.value = unsafe { value.as_ref() }.map(|value| {
            // SAFETY: a value's `data` points to its `len` bytes.
            unsafe { std::slice::from_raw_parts(value.data, value.len) }.to_vec()
        });
    }

    fn delivered(result: Result<Option<OwnedValue>>) -> Seen {
        let mut seen = Seen::default();
        let user: *mut Seen = &mut seen;
        // SAFETY: `record` may be called with this user data on this thread, where
        // `deliver` calls it.
        let reply = unsafe { Reply::<Option<OwnedValue>>::callback(Some(record), user.cast()) };
        let Reply::Callback(callback) = reply else {
            panic!("a callback reply");
        };
        callback.deliver(result);
        seen
    }

    #[test]
    fn a_callback_borrows_the_result_for_its_call() {
        let value = value_of(Bytes::from_static(b"blue"), None);
        let ok = delivered(Ok(Some(value)));
        assert_eq!(
            (ok.calls, ok.status, ok.message, ok.value.as_deref()),
            (1, 0, None, Some(&b"blue"[..]))
        );
        let absent = delivered(Ok(None));
        assert_eq!((absent.calls, absent.status, absent.value), (1, 0, None));
        let failed = delivered(Err(Error::Timeout(Duration::from_millis(5))));
        assert_eq!(failed.calls, 1);
        assert_eq!(
            failed.status,
            statestore_status::STATESTORE_ERR_TIMEOUT as i32
        );
        assert!(failed.message.is_some_and(|m| !m.is_empty()) && failed.value.is_none());
    }

    #[test]
    fn reply_arguments_are_checked_and_out_parameters_cleared() {
        let mut out: *mut statestore_value = std::ptr::NonNull::dangling().as_ptr();
        // SAFETY: a local that nothing else touches while `reply` is used.
        let reply = Reply::<Option<OwnedValue>>::optional(unsafe { Out::new(&mut out) });
        assert!(out.is_null(), "cleared, so that a failed call leaves NULL");
        assert!(matches!(reply, Reply::Wait(_)));
        let refused = Reply::<Option<OwnedValue>>::required(Out::none(), "value");
        let error = refused.accepted().err().unwrap().to_string();
        assert!(error.contains("value is NULL"), "{error}");
        // SAFETY: NULL, which is refused.
        let refused = unsafe { Reply::<Option<OwnedValue>>::callback(None, std::ptr::null_mut()) };
        let error = refused.accepted().err().unwrap().to_string();
        assert!(error.contains("callback is NULL"), "{error}");
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "runs on the library's runtime, whose threads set their signal mask through \
                  libc calls that Miri cannot run"
    )]
    fn a_blocking_call_writes_its_result_through_the_out_parameter() {
        let mut out: *mut statestore_value = std::ptr::NonNull::dangling().as_ptr();
        // SAFETY: a local that nothing else touches while `reply` is used.
        let reply = Reply::<Option<OwnedValue>>::optional(unsafe { Out::new(&mut out) });
        let call = PreparedCall::detached(async { Ok(Bytes::from_static(b"red")) }, |value| {
            Some(value_of(value, None))
        });
        call.finish(reply).unwrap();
        // SAFETY: the value the call wrote, not yet freed.
        let value = unsafe { &*out };
        // SAFETY: a value's `data` points to its `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(value.data, value.len) };
        assert_eq!(bytes, b"red");
        // SAFETY: the library's value, freed once.
        unsafe { statestore_value_free(out) };
    }
}
