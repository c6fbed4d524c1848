//! [`Pending`]: a core future on the internal runtime, completed exactly once, that a host can
//! block on, be called back by, await, or cancel.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::AbortHandle;

use super::dispatch::dispatch;
use crate::{runtime, Error, Result};

type Callback<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// How a registered callback is run.
#[derive(Clone, Copy)]
enum Delivery {
    Dispatcher,
    Inline,
}

enum State<T> {
    /// Not complete; an async waiter's waker, if one is polling.
    Running(Option<Waker>),
    /// Not complete; the callback to run on completion.
    Callback(Callback<T>, Delivery),
    /// Complete, result not yet taken.
    Done(Result<T>),
    /// Complete, result handed out.
    Taken,
}

/// The completion slot shared by the task and the [`Pending`].
struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
}

impl<T: Send + 'static> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // States are replaced whole: a poisoned lock holds a consistent value.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the result unless one already was (a cancellation can race the completion).
    fn complete(&self, result: Result<T>) {
        let mut state = self.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Running(waker) => {
                *state = State::Done(result);
                drop(state);
                self.done.notify_all();
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
            State::Callback(callback, delivery) => {
                drop(state);
                deliver(callback, result, delivery);
            }
            done @ (State::Done(_) | State::Taken) => *state = done,
        }
    }

    fn take(state: &mut State<T>) -> Option<Result<T>> {
        match std::mem::replace(state, State::Taken) {
            State::Done(result) => Some(result),
            State::Taken => Some(Err(Error::Internal(
                "the result of this call was already taken".into(),
            ))),
            other => {
                *state = other;
                None
            }
        }
    }
}

fn deliver<T: Send + 'static>(callback: Callback<T>, result: Result<T>, delivery: Delivery) {
    match delivery {
        Delivery::Inline => callback(result),
        Delivery::Dispatcher => dispatch(Box::new(move || callback(result))),
    }
}

/// Completes the slot when the task ends without a result: cancelled (its future dropped) or
/// panicked.
struct CompleteOnDrop<T: Send + 'static>(Arc<Slot<T>>);

impl<T: Send + 'static> Drop for CompleteOnDrop<T> {
    fn drop(&mut self) {
        let error = if std::thread::panicking() {
            Error::Internal("the call panicked".into())
        } else {
            Error::Cancelled
        };
        self.0.complete(Err(error));
    }
}

/// A call running on the library's internal runtime, completed exactly once with its result,
/// [`Error::Cancelled`] or [`Error::Internal`] (a panic).
///
/// Consume it in one of these ways: [`Pending::wait`] (block), [`Pending::wait_timeout`]
/// (block in slices, e.g. to check for Ctrl-C between them), [`Pending::on_complete`] (a
/// callback on the dispatcher thread), [`Pending::on_complete_inline`], or `.await`
/// ([`IntoFuture`]). Dropping it without consuming it lets the call run to its end unobserved.
///
/// ```no_run
/// use statestore::bindings::Pending;
/// # fn demo(client: statestore::Client) {
/// let pending = Pending::spawn(async move { client.get("color").await });
/// let canceller = pending.canceller();
/// pending.on_complete(|result| println!("{result:?}"));
/// canceller.cancel(); // the callback still runs, exactly once
/// # }
/// ```
pub struct Pending<T: Send + 'static> {
    slot: Arc<Slot<T>>,
    abort: Option<AbortHandle>,
    /// The process that started the call: after fork its task does not exist in the child.
    pid: u32,
}

impl<T: Send + 'static> std::fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("complete", &self.is_complete())
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static> Pending<T> {
    /// Starts `future` on the internal runtime.
    pub fn spawn<F>(future: F) -> Pending<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let handle = match runtime::handle() {
            Ok(handle) => handle,
            Err(error) => return Self::ready(Err(error)),
        };
        let slot = Arc::new(Slot {
            state: Mutex::new(State::Running(None)),
            done: Condvar::new(),
        });
        let guard = CompleteOnDrop(slot.clone());
        let task = handle.spawn(async move {
            let result = future.await;
            guard.0.complete(result);
        });
        Pending {
            slot,
            abort: Some(task.abort_handle()),
            pid: crate::runtime::current_pid(),
        }
    }

    /// A call already complete with `result` (for instance an argument rejected before
    /// anything was sent).
    pub fn ready(result: Result<T>) -> Pending<T> {
        Pending {
            slot: Arc::new(Slot {
                state: Mutex::new(State::Done(result)),
                done: Condvar::new(),
            }),
            abort: None,
            pid: crate::runtime::current_pid(),
        }
    }

    /// Whether the call has completed.
    pub fn is_complete(&self) -> bool {
        !matches!(*self.slot.lock(), State::Running(_) | State::Callback(..))
    }

    fn check_waitable(&self) -> Result<()> {
        if self.pid != crate::runtime::current_pid() {
            return Err(Error::Runtime(
                "this call was started before fork and runs in the parent process".into(),
            ));
        }
        runtime::ensure_blocking_allowed()
    }

    /// Blocks the calling thread until the call completes.
    ///
    /// Fails with [`Error::Runtime`] where blocking is refused (see [`crate::runtime`]) and in
    /// a forked child for a call of the parent.
    pub fn wait(self) -> Result<T> {
        self.check_waitable()?;
        let mut state = self.slot.lock();
        loop {
            if let Some(result) = Slot::take(&mut state) {
                return result;
            }
            state = self
                .slot
                .done
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks for at most `timeout`: `Some(result)` once complete, `None` if still running
    /// (call again). The call itself keeps its own timeout.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<T>> {
        if let Err(error) = self.check_waitable() {
            return Some(Err(error));
        }
        let deadline = Instant::now() + timeout;
        let mut state = self.slot.lock();
        loop {
            if let Some(result) = Slot::take(&mut state) {
                return Some(result);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            state = self
                .slot
                .done
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Calls `callback` exactly once with the result, on the library's dispatcher thread
    /// (never a runtime worker, so it may block or call blocking functions; callbacks run one
    /// at a time, in completion order). Runs it at once (on that thread) if already complete.
    pub fn on_complete(self, callback: impl FnOnce(Result<T>) + Send + 'static) {
        self.register(Box::new(callback), Delivery::Dispatcher);
    }

    /// Calls `callback` exactly once with the result on whatever thread completes the call (a
    /// runtime worker, or this thread if already complete). Only for callbacks that hand the
    /// result on without blocking (a channel, a thread-safe function queue).
    pub fn on_complete_inline(self, callback: impl FnOnce(Result<T>) + Send + 'static) {
        self.register(Box::new(callback), Delivery::Inline);
    }

    fn register(self, callback: Callback<T>, delivery: Delivery) {
        let mut state = self.slot.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Running(_) => *state = State::Callback(callback, delivery),
            State::Done(result) => {
                drop(state);
                deliver(callback, result, delivery);
            }
            State::Taken | State::Callback(..) => {
                drop(state);
                deliver(
                    callback,
                    Err(Error::Internal(
                        "the result of this call was already taken".into(),
                    )),
                    delivery,
                );
            }
        }
    }

    /// A handle that cancels this call from anywhere.
    pub fn canceller(&self) -> Canceller {
        let slot = self.slot.clone();
        Canceller {
            cancel: Arc::new(move || slot.complete(Err(Error::Cancelled))),
            abort: self.abort.clone(),
        }
    }

    /// Cancels the call: it completes with [`Error::Cancelled`] (unless already complete) and
    /// its future is dropped. For a write the outcome is unknown.
    pub fn cancel(&self) {
        self.canceller().cancel();
    }
}

/// Cancels a [`Pending`] call; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Canceller {
    cancel: Arc<dyn Fn() + Send + Sync>,
    abort: Option<AbortHandle>,
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceller").finish_non_exhaustive()
    }
}

impl Canceller {
    /// Completes the call with [`Error::Cancelled`] if it has not completed, and drops its
    /// future. Idempotent.
    pub fn cancel(&self) {
        (self.cancel)();
        if let Some(abort) = &self.abort {
            abort.abort();
        }
    }
}

/// The future of a [`Pending`] call (`pending.await`).
pub struct PendingFuture<T: Send + 'static> {
    pending: Pending<T>,
}

impl<T: Send + 'static> std::fmt::Debug for PendingFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pending.fmt(f)
    }
}

impl<T: Send + 'static> Future for PendingFuture<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let mut state = self.pending.slot.lock();
        if let Some(result) = Slot::take(&mut state) {
            return Poll::Ready(result);
        }
        if let State::Running(waker) = &mut *state {
            *waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<T: Send + 'static> IntoFuture for Pending<T> {
    type Output = Result<T>;
    type IntoFuture = PendingFuture<T>;

    fn into_future(self) -> PendingFuture<T> {
        PendingFuture { pending: self }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn slow(value: u32) -> Pending<u32> {
        Pending::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(value)
        })
    }

    #[test]
    fn wait_returns_the_result() {
        assert_eq!(slow(4).wait().unwrap(), 4);
        assert_eq!(Pending::ready(Ok(5)).wait().unwrap(), 5);
    }

    #[test]
    fn wait_timeout_returns_none_until_complete() {
        let (release, gate) = tokio::sync::oneshot::channel::<()>();
        let mut pending = Pending::spawn(async move {
            gate.await.ok();
            Ok(1)
        });
        assert!(pending.wait_timeout(Duration::from_millis(5)).is_none());
        release.send(()).unwrap();
        let result = loop {
            if let Some(result) = pending.wait_timeout(Duration::from_secs(5)) {
                break result;
            }
        };
        assert_eq!(result.unwrap(), 1);
    }

    #[test]
    fn callbacks_run_once_off_the_runtime_and_may_block() {
        let (sender, results) = mpsc::channel();
        for i in 0..10 {
            let sender = sender.clone();
            slow(i).on_complete(move |result| {
                let name = std::thread::current().name().map(str::to_owned);
                // A blocking call from a callback completes instead of deadlocking.
                let nested = slow(100).wait().unwrap();
                sender.send((result.unwrap(), name, nested)).unwrap();
            });
        }
        let mut seen: Vec<_> = (0..10)
            .map(|_| results.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        seen.sort();
        for (i, (value, thread, nested)) in seen.into_iter().enumerate() {
            assert_eq!(value, i as u32);
            assert_eq!(thread.as_deref(), Some("statestore-cb"));
            assert_eq!(nested, 100);
        }
        assert!(
            results.recv_timeout(Duration::from_millis(50)).is_err(),
            "once each"
        );
    }

    #[test]
    fn cancel_completes_with_cancelled_exactly_once() {
        let (sender, results) = mpsc::channel();
        let pending: Pending<u32> = Pending::spawn(std::future::pending());
        let canceller = pending.canceller();
        pending.on_complete(move |result| sender.send(result).unwrap());
        canceller.cancel();
        canceller.cancel();
        let result = results.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
        assert!(results.recv_timeout(Duration::from_millis(50)).is_err());
    }

    #[test]
    fn a_panicking_call_completes_with_internal() {
        let pending: Pending<u32> = Pending::spawn(async { panic!("boom") });
        assert!(matches!(pending.wait(), Err(Error::Internal(_))));
    }

    #[test]
    fn awaitable_from_another_runtime() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(async { slow(9).await }).unwrap(), 9);
        assert!(matches!(
            rt.block_on(async { slow(9).wait() }),
            Err(Error::Runtime(_))
        ));
    }
}
