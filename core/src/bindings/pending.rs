//! [`Pending`]: a core future completed exactly once, that a host can block on, be called back
//! by, await, or cancel.
//!
//! A call does not start when the `Pending` is made but when it is consumed: waited for, it
//! runs on the waiting thread (as the blocking client does, with no thread hand-off); called
//! back or awaited, it runs on the internal runtime.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::AbortHandle;

use super::dispatch::{dispatch, CompletionQueue};
use crate::{runtime, Error, Result};

type Callback<T> = Box<dyn FnOnce(Result<T>) + Send>;
/// The future of a call, boxed until it starts.
type CallFuture<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// How a registered callback is run.
enum Delivery {
    Dispatcher,
    Inline,
    /// Inline, on a runtime thread other than this one: a result known inside the host's
    /// call that starts (or registers) the call.
    Runtime,
    Queue(CompletionQueue),
}

enum State<T> {
    /// Not complete; the waker of whoever is waiting (an async waiter, or the thread running
    /// the call), to be woken by a cancellation.
    Running(Option<Waker>),
    /// Not complete; the callback to run on completion.
    Callback(Callback<T>, Delivery),
    /// Complete, result not yet taken.
    Done(Result<T>),
    /// Complete, result handed out.
    Taken,
}

/// The completion slot shared by the call and the [`Pending`].
struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
    /// How many threads wait on `done`, changed and read under the `state` lock: a completion
    /// signals `done` only then (signalling is a system call).
    waiting: AtomicUsize,
    /// The call's task, once it runs on the runtime.
    task: OnceLock<AbortHandle>,
}

impl<T: Send + 'static> Slot<T> {
    fn new(state: State<T>) -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(state),
            done: Condvar::new(),
            waiting: AtomicUsize::new(0),
            task: OnceLock::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // States are replaced whole: a poisoned lock holds a consistent value.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the result unless one already was (a cancellation can race the completion).
    fn complete(&self, result: Result<T>) {
        self.finish(result, false);
    }

    /// [`Slot::complete`] on the thread that started the call, inside the host's call: a
    /// callback registered to run inline runs on a runtime thread instead, since hosts are
    /// promised that no callback runs inside the call that starts it.
    fn complete_here(&self, result: Result<T>) {
        self.finish(result, true);
    }

    fn finish(&self, result: Result<T>, here: bool) {
        let mut state = self.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Running(waker) => {
                *state = State::Done(result);
                let waiting = self.waiting.load(Ordering::Relaxed) > 0;
                drop(state);
                if waiting {
                    self.done.notify_all();
                }
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
            State::Callback(callback, delivery) => {
                drop(state);
                let delivery = if here { delivery.here() } else { delivery };
                deliver(callback, result, delivery);
            }
            done @ (State::Done(_) | State::Taken) => *state = done,
        }
    }

    fn is_complete(&self) -> bool {
        !matches!(*self.lock(), State::Running(_) | State::Callback(..))
    }

    /// Waits on `done` with `state` (this slot's lock), at most `timeout` if given; whether
    /// the timeout passed.
    fn wait_done<'a>(
        &'a self,
        state: MutexGuard<'a, State<T>>,
        timeout: Option<Duration>,
    ) -> (MutexGuard<'a, State<T>>, bool) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let (state, timed_out) = match timeout {
            None => (
                self.done.wait(state).unwrap_or_else(|e| e.into_inner()),
                false,
            ),
            Some(timeout) => {
                let (state, waited) = self
                    .done
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner());
                (state, waited.timed_out())
            }
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        (state, timed_out)
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

    /// The result if complete; otherwise `cx`'s waker is left to be woken on completion.
    fn poll_result(&self, cx: &Context<'_>) -> Poll<Result<T>> {
        let mut state = self.lock();
        if let Some(result) = Slot::take(&mut state) {
            return Poll::Ready(result);
        }
        if let State::Running(waker) = &mut *state {
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
        }
        Poll::Pending
    }

    /// Runs `call`'s first steps on this thread, and the rest (if any) on the internal
    /// runtime; its result completes the slot.
    ///
    /// The first poll here is what makes a call cheap to start: a call refused before
    /// anything is sent (a bad argument) completes without a thread hop, and any other hands
    /// its request to the connection from the caller's thread, so the runtime thread woken
    /// for the connection's I/O is the only one woken. Its waker does nothing: the task
    /// spawned next polls the call again with its own, as any future must accept.
    fn start_on_runtime(self: &Arc<Self>, mut call: CallFuture<T>) {
        if self.is_complete() {
            return; // cancelled before it started
        }
        let handle = match runtime::handle() {
            Ok(handle) => handle,
            Err(error) => return self.complete_here(Err(error)),
        };
        let first = {
            let _context = handle.enter();
            let mut cx = Context::from_waker(Waker::noop());
            super::catch_panic("the call", || call.as_mut().poll(&mut cx))
        };
        match first {
            Ok(Poll::Pending) => {}
            Ok(Poll::Ready(result)) => return self.complete_here(result),
            Err(panicked) => return self.complete_here(Err(panicked)),
        }
        let guard = CompleteOnDrop(self.clone());
        let task = handle.spawn(async move {
            let result = call.await;
            guard.0.complete(result);
        });
        let _ = self.task.set(task.abort_handle());
        if self.is_complete() {
            task.abort(); // a cancellation raced the start
        }
    }

    fn cancel(&self) {
        self.complete(Err(Error::Cancelled));
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }
}

impl Delivery {
    /// This delivery for a result known on the thread registering the callback or starting
    /// the call, inside the host's call: no callback runs inside the call that starts it, so
    /// an inline one runs on a runtime thread instead, where it would have run had the result
    /// come a moment later (and where blocking calls are refused, as hosts are told).
    fn here(self) -> Delivery {
        match self {
            Delivery::Inline => Delivery::Runtime,
            other => other,
        }
    }
}

fn deliver<T: Send + 'static>(callback: Callback<T>, result: Result<T>, delivery: Delivery) {
    match delivery {
        Delivery::Inline => callback(result),
        Delivery::Runtime => {
            // Exactly once: a task the runtime drops unrun (shutting down) hands the callback
            // to the dispatcher.
            let mut unrun = OnDispatcherIfUnrun(Some((callback, result)));
            if let Ok(handle) = runtime::handle() {
                handle.spawn(async move {
                    if let Some((callback, result)) = unrun.0.take() {
                        callback(result);
                    }
                });
            }
        }
        Delivery::Dispatcher => dispatch(Box::new(move || callback(result))),
        Delivery::Queue(queue) => queue.push(Box::new(move || callback(result))),
    }
}

/// A callback and its result, run on the dispatcher thread if dropped before they ran.
struct OnDispatcherIfUnrun<T: Send + 'static>(Option<(Callback<T>, Result<T>)>);

impl<T: Send + 'static> Drop for OnDispatcherIfUnrun<T> {
    fn drop(&mut self) {
        if let Some((callback, result)) = self.0.take() {
            dispatch(Box::new(move || callback(result)));
        }
    }
}

/// Completes the slot when the task ends without a result: cancelled (its future dropped) or
/// panicked.
struct CompleteOnDrop<T: Send + 'static>(Arc<Slot<T>>);

impl<T: Send + 'static> Drop for CompleteOnDrop<T> {
    fn drop(&mut self) {
        let error = if std::thread::panicking() {
            panicked()
        } else {
            Error::Cancelled
        };
        self.0.complete(Err(error));
    }
}

fn panicked() -> Error {
    Error::Internal("the call panicked".into())
}

/// A call of the library, completed exactly once with its result, [`Error::Cancelled`] or
/// [`Error::Internal`] (a panic).
///
/// Consume it in one of these ways: [`Pending::wait`] (block; the call runs on the waiting
/// thread), [`Pending::wait_timeout`] (block in slices, e.g. to check for Ctrl-C between them),
/// [`Pending::on_complete`] (a callback on the dispatcher thread),
/// [`Pending::on_complete_inline`], or `.await` ([`IntoFuture`]); the last three run the call on
/// the internal runtime. Dropping it without consuming it starts the call on the runtime, to run
/// to its end unobserved.
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
    /// The call, until it starts.
    call: Option<CallFuture<T>>,
    /// The process that made the call: after fork its state belongs to the parent.
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
    /// A call of `future`, started when the `Pending` is consumed (see the type's
    /// documentation for where it runs).
    pub fn spawn<F>(future: F) -> Pending<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
    {
        Pending {
            slot: Slot::new(State::Running(None)),
            call: Some(Box::pin(future)),
            pid: crate::runtime::current_pid(),
        }
    }

    /// A call already complete with `result` (for instance an argument rejected before
    /// anything was sent).
    pub fn ready(result: Result<T>) -> Pending<T> {
        Pending {
            slot: Slot::new(State::Done(result)),
            call: None,
            pid: crate::runtime::current_pid(),
        }
    }

    /// Whether the call has completed.
    pub fn is_complete(&self) -> bool {
        self.slot.is_complete()
    }

    fn check_waitable(&self) -> Result<()> {
        if self.pid != crate::runtime::current_pid() {
            return Err(Error::Runtime(
                "this call was started before fork and runs in the parent process".into(),
            ));
        }
        runtime::ensure_blocking_allowed()
    }

    fn start_on_runtime(&mut self) {
        if let Some(call) = self.call.take() {
            self.slot.start_on_runtime(call);
        }
    }

    /// Starts the call: its first steps run on this thread, the rest on the internal runtime.
    /// A call that completed in them (one refused before anything was sent, say) comes back
    /// as [`Started::Done`], for a host that can then hand its result over at once instead
    /// of through its event loop; any other as [`Started::Running`], to consume as usual.
    pub fn start(mut self) -> Started<T> {
        self.start_on_runtime();
        let done = Slot::take(&mut self.slot.lock());
        match done {
            Some(result) => Started::Done(result),
            None => Started::Running(self),
        }
    }

    /// Blocks the calling thread until the call completes; a call not yet started runs on
    /// this thread (under the internal runtime's context, as the blocking client's calls do).
    ///
    /// Fails with [`Error::Runtime`] where blocking is refused (see [`crate::runtime`]) and in
    /// a forked child for a call of the parent.
    pub fn wait(self) -> Result<T> {
        self.wait_inner(None)
    }

    /// [`Pending::wait`] that calls `check` on the waiting thread every `every` while the call
    /// runs: if `check` fails, the call is cancelled (its future dropped) and that error is
    /// returned. For hosts whose waiting thread must notice something only it can see (a
    /// signal to handle, its environment being torn down).
    pub fn wait_checked(self, every: Duration, check: &mut dyn FnMut() -> Result<()>) -> Result<T> {
        self.wait_inner(Some((every, check)))
    }

    fn wait_inner(
        mut self,
        check: Option<(Duration, &mut dyn FnMut() -> Result<()>)>,
    ) -> Result<T> {
        self.check_waitable()?;
        let Some(mut call) = self.call.take() else {
            return self.wait_started(check);
        };
        let slot = self.slot.clone();
        let work = std::future::poll_fn(move |cx| {
            // A cancellation from another thread completes the slot and wakes this poll.
            if let Poll::Ready(result) = slot.poll_result(cx) {
                return Poll::Ready(result);
            }
            match super::catch_panic("the call", || call.as_mut().poll(cx)) {
                Ok(Poll::Pending) => Poll::Pending,
                Ok(Poll::Ready(result)) => {
                    slot.complete(result);
                    slot.poll_result(cx)
                }
                Err(panicked) => {
                    slot.complete(Err(panicked));
                    slot.poll_result(cx)
                }
            }
        });
        let Some((every, check)) = check else {
            return runtime::block_on(work)?;
        };
        let outcome = runtime::block_on(async move {
            let mut work = std::pin::pin!(work);
            loop {
                tokio::select! {
                    // The call first: one complete at once never arms the timer.
                    biased;
                    result = &mut work => return Ok(result),
                    () = tokio::time::sleep(every) => check()?,
                }
            }
        })?;
        outcome.unwrap_or_else(|stopped| {
            // The call's future was dropped with the wait: it completes as cancelled.
            self.slot.cancel();
            Err(stopped)
        })
    }

    fn wait_started(
        self,
        mut check: Option<(Duration, &mut dyn FnMut() -> Result<()>)>,
    ) -> Result<T> {
        let mut state = self.slot.lock();
        loop {
            if let Some(result) = Slot::take(&mut state) {
                return result;
            }
            state = match check.as_mut() {
                None => self.slot.wait_done(state, None).0,
                Some((every, check)) => {
                    let (state, timed_out) = self.slot.wait_done(state, Some(*every));
                    if timed_out {
                        if let Err(error) = check() {
                            drop(state);
                            self.slot.cancel();
                            return Err(error);
                        }
                    }
                    state
                }
            };
        }
    }

    /// Blocks for at most `timeout`: `Some(result)` once complete, `None` if still running
    /// (call again); a timeout beyond what the clock can represent waits as long as it takes.
    /// The call runs on the internal runtime and keeps its own timeout.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<T>> {
        if let Err(error) = self.check_waitable() {
            return Some(Err(error));
        }
        self.start_on_runtime();
        let deadline = super::duration::deadline(timeout);
        let mut state = self.slot.lock();
        loop {
            if let Some(result) = Slot::take(&mut state) {
                return Some(result);
            }
            // std's condvar waits without limit for a span the clock cannot represent.
            let left = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return None;
            }
            state = self.slot.wait_done(state, Some(left)).0;
        }
    }

    /// Calls `callback` exactly once with the result, on the library's dispatcher thread
    /// (never a runtime worker, so it may block or call blocking functions; callbacks run one
    /// at a time, in completion order). Runs it at once (on that thread) if already complete.
    pub fn on_complete(self, callback: impl FnOnce(Result<T>) + Send + 'static) {
        self.register(Box::new(callback), Delivery::Dispatcher);
    }

    /// Calls `callback` exactly once with the result on the runtime thread that completes the
    /// call; never on this thread, inside this call (a call already complete, or complete in
    /// its first steps, is handed to a runtime thread). Only for callbacks that hand the result
    /// on without blocking (a channel, a thread-safe function queue).
    pub fn on_complete_inline(self, callback: impl FnOnce(Result<T>) + Send + 'static) {
        self.register(Box::new(callback), Delivery::Inline);
    }

    /// Calls `callback` exactly once with the result, on the thread that next runs `queue`
    /// ([`CompletionQueue::run_ready`]): a host's own event loop, woken by the queue's
    /// descriptor. Queued at once if already complete.
    pub fn on_complete_in(
        self,
        queue: &CompletionQueue,
        callback: impl FnOnce(Result<T>) + Send + 'static,
    ) {
        self.register(Box::new(callback), Delivery::Queue(queue.clone()));
    }

    fn register(mut self, callback: Callback<T>, delivery: Delivery) {
        let mut state = self.slot.lock();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Running(_) => *state = State::Callback(callback, delivery),
            State::Done(result) => {
                drop(state);
                deliver(callback, result, delivery.here());
                return;
            }
            State::Taken | State::Callback(..) => {
                drop(state);
                deliver(
                    callback,
                    Err(Error::Internal(
                        "the result of this call was already taken".into(),
                    )),
                    delivery.here(),
                );
                return;
            }
        }
        drop(state);
        self.start_on_runtime();
    }

    /// A handle that cancels this call from anywhere.
    pub fn canceller(&self) -> Canceller {
        Canceller {
            slot: self.slot.clone(),
        }
    }

    /// Cancels the call: it completes with [`Error::Cancelled`] (unless already complete) and
    /// its future is dropped (a call not yet started never starts). For a write the outcome
    /// is unknown.
    pub fn cancel(&self) {
        self.slot.cancel();
    }
}

/// What [`Pending::start`] found after the call's first steps.
#[derive(Debug)]
pub enum Started<T: Send + 'static> {
    /// The call is complete: its result.
    Done(Result<T>),
    /// The call goes on, on the internal runtime.
    Running(Pending<T>),
}

impl<T: Send + 'static> Drop for Pending<T> {
    fn drop(&mut self) {
        // Unconsumed: the call still runs, unobserved (unless it was cancelled).
        self.start_on_runtime();
    }
}

/// What a [`Canceller`] needs of a slot, whatever its result type.
trait Cancel: Send + Sync {
    fn cancel(&self);
}

impl<T: Send + 'static> Cancel for Slot<T> {
    fn cancel(&self) {
        Slot::cancel(self);
    }
}

/// Cancels a [`Pending`] call; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Canceller {
    slot: Arc<dyn Cancel>,
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
        self.slot.cancel();
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
        self.pending.slot.poll_result(cx)
    }
}

impl<T: Send + 'static> IntoFuture for Pending<T> {
    type Output = Result<T>;
    type IntoFuture = PendingFuture<T>;

    fn into_future(mut self) -> PendingFuture<T> {
        self.start_on_runtime();
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
    fn wait_checked_returns_the_result_or_gives_up_when_the_check_fails() {
        let mut checks = 0;
        let result = slow(7).wait_checked(Duration::from_millis(1), &mut || {
            checks += 1;
            Ok(())
        });
        assert_eq!(result.unwrap(), 7);

        // A call that never completes: the wait ends with the check's error, the call is
        // cancelled (its future dropped).
        let (dropped, gone) = mpsc::channel::<()>();
        let never = Pending::<u32>::spawn(async move {
            let _guard = DropSignal(dropped);
            std::future::pending::<()>().await;
            Ok(0)
        });
        let canceller_view = never.canceller();
        let mut checks = 0;
        let result = never.wait_checked(Duration::from_millis(1), &mut || {
            checks += 1;
            if checks < 3 {
                Ok(())
            } else {
                Err(Error::Runtime("stopping".into()))
            }
        });
        assert!(
            matches!(result, Err(Error::Runtime(ref m)) if m == "stopping"),
            "{result:?}"
        );
        assert_eq!(checks, 3);
        gone.recv_timeout(Duration::from_secs(5))
            .expect("the call's future is dropped");
        canceller_view.cancel(); // idempotent on a call already cancelled
    }

    struct DropSignal(mpsc::Sender<()>);

    impl Drop for DropSignal {
        fn drop(&mut self) {
            self.0.send(()).ok();
        }
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
        let result = pending.wait();
        assert!(
            matches!(&result, Err(Error::Internal(m)) if m.contains("boom")),
            "{result:?}"
        );
    }

    /// Sets its flag when dropped: shows whether a call's future was dropped.
    struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waited_call_runs_on_the_waiting_thread() {
        let waiter = std::thread::current().id();
        let ran_on = Pending::spawn(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(std::thread::current().id())
        })
        .wait()
        .unwrap();
        assert_eq!(ran_on, waiter);
        // Called back, its first steps run on the calling thread, the rest on the runtime.
        let (sender, results) = mpsc::channel();
        Pending::spawn(async {
            let first = std::thread::current().id();
            tokio::task::yield_now().await;
            Ok((first, std::thread::current().name().map(str::to_owned)))
        })
        .on_complete_inline(move |result| sender.send(result.unwrap()).unwrap());
        let (first, rest) = results.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(first, waiter);
        assert_eq!(rest.as_deref(), Some("statestore-rt"));
    }

    #[test]
    fn a_call_complete_in_its_first_steps_is_done_when_started() {
        let here = std::thread::current().id();
        let refused: Pending<u32> = Pending::spawn(async { Err(Error::Closed) });
        assert!(matches!(refused.start(), Started::Done(Err(Error::Closed))));
        let ran_on = match Pending::spawn(async { Ok(std::thread::current().id()) }).start() {
            Started::Done(result) => result.unwrap(),
            Started::Running(_) => panic!("a call with nothing to wait for is done at once"),
        };
        assert_eq!(ran_on, here);
        // One that waits goes on on the runtime and completes as usual.
        match slow(3).start() {
            Started::Running(pending) => assert_eq!(pending.wait().unwrap(), 3),
            Started::Done(_) => panic!("a call that sleeps is not done at once"),
        }
        let panicking: Pending<u32> = Pending::spawn(async { panic!("boom") });
        assert!(matches!(
            panicking.start(),
            Started::Done(Err(Error::Internal(m))) if m.contains("boom")
        ));
    }

    #[test]
    fn an_inline_callback_never_runs_inside_the_call_that_registers_it() {
        // Complete in its first steps, on this thread: the callback runs on a runtime thread,
        // as it would have had the call waited.
        let (sender, results) = mpsc::channel();
        Pending::spawn(async { Ok(()) }).on_complete_inline(move |result| {
            result.unwrap();
            sender
                .send(std::thread::current().name().map(str::to_owned))
                .unwrap();
        });
        let name = results.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(name.as_deref(), Some("statestore-rt"));
    }

    #[test]
    fn a_cancel_from_another_thread_ends_a_wait_and_drops_the_call() {
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = DropFlag(dropped.clone());
        let pending: Pending<u32> = Pending::spawn(async move {
            let _flag = flag;
            std::future::pending().await
        });
        let canceller = pending.canceller();
        let waiter = std::thread::spawn(move || pending.wait());
        // Cancelling before or after the waiter starts must both end it.
        canceller.cancel();
        let result = waiter.join().unwrap();
        assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_call_cancelled_before_it_starts_never_runs() {
        let (sender, ran) = mpsc::channel::<()>();
        let pending: Pending<()> = Pending::spawn(async move {
            sender.send(()).ok();
            Ok(())
        });
        pending.cancel();
        assert!(matches!(pending.wait(), Err(Error::Cancelled)));
        assert!(ran.recv_timeout(Duration::from_millis(100)).is_err());
    }

    #[test]
    fn an_unconsumed_call_still_runs() {
        let (sender, ran) = mpsc::channel();
        drop(Pending::spawn(async move {
            sender.send(7).ok();
            Ok(())
        }));
        assert_eq!(ran.recv_timeout(Duration::from_secs(10)).unwrap(), 7);
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
