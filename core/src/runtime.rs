//! The library's internal tokio runtime: one per process, shared by the blocking API and the
//! language bindings.
//!
//! A forked child inherits the parent's runtime object but none of its worker threads, so the
//! runtime is keyed by process id: the first use in a new process builds a fresh runtime and
//! leaks the inherited one (dropping it would wait for threads that do not exist). Its threads
//! park with the standard library's locks, whose state lives in each lock: tokio's
//! `parking_lot` feature would have them queue in one process-wide table, which a child
//! inherits with the parent's parked threads in it (third_party/README.md).
//!
//! # Where blocking calls may run
//!
//! [`block_on`] polls the future on the calling thread (the runtime's timers and sockets are
//! driven by its own threads), so it never nests one runtime inside another and works on any
//! plain thread, including a `tokio::task::spawn_blocking` thread of another runtime. It
//! refuses with [`Error::Runtime`] where blocking would stall an executor: on a thread that is
//! running a runtime's `block_on` (the body of `#[tokio::main]`) and on the library's own
//! runtime threads. Inside a task spawned on another runtime's worker thread the call cannot be
//! told apart from `spawn_blocking` (tokio offers no way to ask), so it blocks that worker until
//! it completes; it cannot deadlock, since the work runs on the internal runtime.

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Handle, Runtime};

use crate::{Error, Result};

/// A runtime, the process it was built in, and the count of its threads.
type Owned = (u32, Arc<Runtime>, Arc<ThreadCount>);

/// How many threads of one runtime are running, so that [`shutdown`] can wait for the ones
/// tokio does not join: a blocking-pool thread that ends after its job detaches itself.
#[derive(Default)]
struct ThreadCount {
    running: Mutex<usize>,
    changed: Condvar,
}

impl ThreadCount {
    fn add(&self, delta: isize) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running = running.saturating_add_signed(delta);
        self.changed.notify_all();
    }

    /// Waits until no thread is running, for at most `grace`; whether none is.
    fn wait_none(&self, grace: std::time::Duration) -> bool {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let (running, _) = self
            .changed
            .wait_timeout_while(running, grace, |running| *running > 0)
            .unwrap_or_else(|e| e.into_inner());
        *running == 0
    }
}

static RUNTIME: Lazy<Mutex<Option<Owned>>> = Lazy::new(|| Mutex::new(None));

/// Worker threads of the internal runtime: one. Request handling is light, and with two,
/// tokio wakes the idle worker whenever the other finds work (so that one keeps looking): a
/// call made from outside the runtime cost about two thread switches more (the bindings
/// benchmark's `ctx_switches_per_op`: 6 to 8 with two, 4 with one), with no throughput gained
/// at 64 in flight. Blocking work never runs on it (`spawn_blocking`, and blocking calls are
/// refused there).
const WORKER_THREADS: usize = 1;

thread_local! {
    /// Set on the internal runtime's threads: a blocking wait there could starve the very
    /// tasks it waits for.
    static INTERNAL_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// This process's id, refreshed in a forked child.
static PID: AtomicU32 = AtomicU32::new(0);

/// The id of the calling process, without a system call: the library checks it on every call
/// (to refuse work inherited across `fork`), and glibc does not cache `getpid`, so asking the
/// kernel each time would cost several system calls per operation. A `pthread_atfork` child handler
/// keeps the cached value right in a child made by `fork()`; a child made by a raw `clone` or
/// `vfork` system call must `exec` or `_exit` before it calls into the library, as POSIX requires
/// of such children anyway.
pub fn current_pid() -> u32 {
    let cached = PID.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // Not a `Once`: a fork while another thread ran it would leave it locked in the child. The
    // value is cached only once the handler is in place, so no child can inherit a stale one.
    let pid = std::process::id();
    if !ATFORK_REGISTERING.swap(true, Ordering::AcqRel) {
        #[cfg(unix)]
        // SAFETY: the handler only stores into an atomic and calls getpid, both allowed in a
        // forked child of a multi-threaded process.
        unsafe {
            libc::pthread_atfork(None, None, Some(refresh_pid_in_child));
        }
        PID.store(pid, Ordering::Release);
    }
    pid
}

/// Set by the one thread that registers the fork handler.
static ATFORK_REGISTERING: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn refresh_pid_in_child() {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    PID.store(pid as u32, Ordering::Relaxed);
}

/// Fails with [`Error::Runtime`] in a process forked after the `what` was created in process
/// `pid`: its connection stayed with the parent, so a call would wait for nothing.
pub(crate) fn ensure_created_here(pid: u32, what: &str) -> Result<()> {
    if pid != current_pid() {
        return Err(Error::Runtime(format!(
            "this {what} was created before fork and its connection belongs to the parent \
             process: create a new client in the child"
        )));
    }
    Ok(())
}

/// The internal runtime of this process, built on first use (and again after `fork`).
pub fn runtime() -> Result<Arc<Runtime>> {
    let pid = current_pid();
    // The guarded value is replaced whole, never left half-written: a poisoned lock is usable.
    let lock = || RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match lock().as_ref() {
        Some((owner, runtime, _)) if *owner == pid => return Ok(runtime.clone()),
        _ => {}
    }
    let threads = Arc::new(ThreadCount::default());
    let (started, stopped) = (threads.clone(), threads.clone());
    // Built without the lock held: building spawns threads (the long part), and a fork by
    // another thread meanwhile would leave the lock held for good in the child.
    let runtime = Arc::new(
        Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            // Blocking jobs are rare (host name lookups, certificate and token reads at connect)
            // and their threads end as soon as they are done: glibc keeps a thread's resolver
            // state until the thread ends, and a leak checker reports it as lost for a thread
            // still idling when the program exits.
            .thread_keep_alive(std::time::Duration::ZERO)
            .thread_name("statestore-rt")
            .on_thread_start(move || {
                started.add(1);
                INTERNAL_THREAD.with(|flag| flag.set(true));
                ignore_sigpipe_here();
            })
            .on_thread_stop(move || stopped.add(-1))
            .enable_all()
            .build()
            .map_err(|e| Error::Runtime(format!("cannot start the internal runtime: {e}")))?,
    );
    let mut slot = lock();
    if let Some((_, winner, _)) = slot.as_ref().filter(|(owner, _, _)| *owner == pid) {
        // Another thread built one first: use it, and let ours go (without waiting for its
        // threads, which is not allowed if the caller is async).
        let winner = winner.clone();
        drop(slot);
        if let Ok(ours) = Arc::try_unwrap(runtime) {
            ours.shutdown_background();
        }
        return Ok(winner);
    }
    if let Some(inherited) = slot.replace((pid, runtime.clone(), threads)) {
        // Built by the parent before fork: its threads are gone, so it cannot be shut down.
        std::mem::forget(inherited);
    }
    Ok(runtime)
}

/// Shuts the internal runtime of this process down: its tasks are dropped, blocking jobs get
/// up to `grace` to finish, and it waits (up to `grace` again) until each of its threads has
/// left the runtime. The next use builds a new runtime.
///
/// For hosts that must leave no thread behind (a C program checked with valgrind). Fails with
/// [`Error::Runtime`] where blocking is not allowed ([`ensure_blocking_allowed`]) and while
/// another thread holds the runtime itself (the runtime is then left running); the host makes
/// sure no call is running, since one would lose its tasks.
pub fn shutdown(grace: std::time::Duration) -> Result<()> {
    ensure_blocking_allowed()?;
    let pid = current_pid();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((owner, runtime, threads)) = slot.take() else {
        return Ok(());
    };
    if owner != pid {
        // The parent's, whose threads are not in this process (see `runtime`).
        std::mem::forget(runtime);
        return Ok(());
    }
    match Arc::try_unwrap(runtime) {
        Ok(runtime) => {
            drop(slot);
            runtime.shutdown_timeout(grace);
            if threads.wait_none(grace) {
                Ok(())
            } else {
                Err(Error::Runtime(format!(
                    "the library's runtime was shut down, but some of its threads were still \
                     running {grace:?} later (a blocking job such as a name lookup that does \
                     not end)"
                )))
            }
        }
        Err(shared) => {
            *slot = Some((owner, shared, threads));
            Err(Error::Runtime(
                "the library's runtime is in use by another thread: shut down after every call \
                 has returned"
                    .into(),
            ))
        }
    }
}

/// Blocks SIGPIPE on the calling thread (one of the library's own): a write to a connection the
/// peer closed then fails with `EPIPE`, which the client handles as a lost connection, instead
/// of the signal killing the host process. Rust programs ignore SIGPIPE already; C programs
/// (and others that link the library) usually do not, and the library must not change their
/// process-wide disposition.
pub(crate) fn ignore_sigpipe_here() {
    #[cfg(unix)]
    // SAFETY: a sigset on the stack, initialised by sigemptyset before use; pthread_sigmask
    // only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A handle to the internal runtime.
pub fn handle() -> Result<Handle> {
    Ok(runtime()?.handle().clone())
}

/// Runs `future` to completion, blocking the calling thread; the future may use the internal
/// runtime's timers, sockets and `spawn`.
///
/// Fails with [`Error::Runtime`] instead of blocking where that would stall an executor (see
/// the [module documentation](self)).
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    ensure_blocking_allowed()?;
    let handle = handle()?;
    let _context = handle.enter();
    Ok(poll_until_done(future))
}

/// Wakes the thread in [`poll_until_done`]: a flag and a condition variable. Parking the thread
/// instead (as `pollster` and `futures::executor` do) makes the standard library keep a handle
/// of the caller's thread in its thread-local storage for the rest of the thread's life; for a
/// C program's main thread that block is never freed, and valgrind reports it as "possibly
/// lost" at exit even after `statestore_shutdown()`.
#[derive(Default)]
struct Signal {
    woken: Mutex<bool>,
    condvar: Condvar,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // A flag under a mutex: a poisoned lock still holds a valid bool.
        *self.woken.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.condvar.notify_one();
    }
}

/// Polls `future` on the calling thread until it is ready, sleeping while it waits.
fn poll_until_done<F: Future>(future: F) -> F::Output {
    let signal = Arc::new(Signal::default());
    let waker = Waker::from(signal.clone());
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        let mut woken = signal.woken.lock().unwrap_or_else(|e| e.into_inner());
        while !*woken {
            woken = signal
                .condvar
                .wait(woken)
                .unwrap_or_else(|e| e.into_inner());
        }
        *woken = false;
    }
}

/// Fails where a blocking wait would stall an executor: on the internal runtime's threads, and
/// on a thread inside a runtime's `block_on` (a runtime context outside any task). A binding
/// whose call changes state before it blocks asks first, so that a refused call changes
/// nothing.
pub fn ensure_blocking_allowed() -> Result<()> {
    if INTERNAL_THREAD.with(Cell::get) {
        return Err(Error::Runtime(
            "a blocking call was made on one of the library's own runtime threads, where it \
             could wait for itself: use the async API there"
                .into(),
        ));
    }
    if Handle::try_current().is_ok() && tokio::task::try_id().is_none() {
        return Err(Error::Runtime(
            "a blocking call was made from inside an async runtime, where it would block a worker \
             thread: use the async `statestore::Client` there, or call from a plain thread \
             (e.g. tokio::task::spawn_blocking)"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_runtime_per_process() {
        let a = runtime().unwrap();
        let b = runtime().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(block_on(async { 7 }).unwrap(), 7);
    }

    #[test]
    fn blocking_inside_a_runtime_is_an_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let result = rt.block_on(async { block_on(async { 1 }) });
        assert!(matches!(result, Err(Error::Runtime(_))), "{result:?}");
    }

    #[test]
    fn blocking_on_a_spawn_blocking_thread_works() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = rt.block_on(async {
            tokio::task::spawn_blocking(|| {
                block_on(async {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    3
                })
            })
            .await
            .unwrap()
        });
        assert_eq!(result.unwrap(), 3);
    }

    #[cfg(unix)]
    #[test]
    fn sigpipe_is_blocked_on_the_library_threads() {
        let blocked = runtime()
            .unwrap()
            .block_on(async {
                tokio::spawn(async {
                    // SAFETY: reads this thread's signal mask into a zeroed set.
                    unsafe {
                        let mut current: libc::sigset_t = std::mem::zeroed();
                        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut current);
                        libc::sigismember(&current, libc::SIGPIPE) == 1
                    }
                })
                .await
            })
            .unwrap();
        assert!(blocked);
    }

    #[cfg(unix)]
    #[test]
    fn the_cached_pid_follows_a_fork() {
        assert_eq!(current_pid(), std::process::id());
        // SAFETY: the child only reads atomics, calls getpid and _exits.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            let right = current_pid() == std::process::id() && current_pid() != 0;
            // SAFETY: ends the child without running the parent's atexit handlers.
            unsafe { libc::_exit(if right { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        let waited = unsafe { libc::waitpid(child, &mut status, 0) };
        assert_eq!(waited, child);
        assert!(libc::WIFEXITED(status), "child status {status}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "the child saw its parent's pid"
        );
        assert_eq!(current_pid(), std::process::id());
    }

    /// Busy work on the internal runtime from several threads: tasks, blocking-pool jobs and
    /// timers, so that every kind of runtime thread parks and wakes many times.
    fn churn() -> bool {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..100).all(|_| {
                        block_on(async {
                            let tasks: Vec<_> = (0..4)
                                .map(|i| {
                                    tokio::spawn(async move {
                                        tokio::time::sleep(std::time::Duration::ZERO).await;
                                        tokio::task::spawn_blocking(move || i).await.unwrap()
                                    })
                                })
                                .collect();
                            let mut sum = 0;
                            for task in tasks {
                                sum += task.await.unwrap();
                            }
                            sum == 6
                        })
                        .unwrap_or(false)
                    })
                })
            })
            .collect();
        threads.into_iter().all(|t| t.join().unwrap_or(false))
    }

    /// Forked while the parent's runtime threads were parked (idle workers, idle blocking-pool
    /// threads), a child runs a runtime of its own. With tokio's "parking_lot" feature (which a
    /// dependency's tokio "full" turned on, see third_party/README.md) the child inherited
    /// parking_lot's table of parked threads, the parent's in it, and crashed on it.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_runs_its_own_runtime() {
        assert!(churn(), "the parent's own work failed");
        for _ in 0..8 {
            // SAFETY: the child only uses the library, whose runtime is rebuilt per process,
            // and ends with _exit.
            let child = unsafe { libc::fork() };
            assert!(child >= 0, "fork failed");
            if child == 0 {
                // The deadline: a child that hangs is killed by SIGALRM.
                // SAFETY: alarm has no preconditions.
                unsafe { libc::alarm(60) };
                let ok = churn();
                // SAFETY: ends the child without running the parent's atexit handlers.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            let waited = unsafe { libc::waitpid(child, &mut status, 0) };
            assert_eq!(waited, child);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "the child failed (crashed, or hung until SIGALRM): wait status {status}"
            );
            assert!(churn(), "the parent's own work failed after the fork");
        }
    }

    #[test]
    fn blocking_on_an_internal_thread_is_an_error() {
        let result = runtime()
            .unwrap()
            .block_on(async { tokio::spawn(async { block_on(async { 1 }) }).await })
            .unwrap();
        assert!(matches!(result, Err(Error::Runtime(_))), "{result:?}");
    }
}
