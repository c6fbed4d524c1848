//! The dispatcher thread: where completion callbacks and pushed events run.
//!
//! Callbacks must not run on a tokio worker: a host callback may block (a C function calling a
//! blocking API, Python waiting for the GIL) and would stall the runtime that completes every
//! other call. One thread keeps callbacks in completion order; like the runtime it is keyed by
//! process id, so a forked child starts its own.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use once_cell::sync::Lazy;

/// Work for the dispatcher thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The dispatcher's queue and the process it was started in, and its thread (to join it at
/// [`stop`]).
type Owned = (u32, Sender<Job>, Option<JoinHandle<()>>);

thread_local! {
    /// Set on the dispatcher thread, which cannot wait for its own end.
    static ON_DISPATCHER: Cell<bool> = const { Cell::new(false) };
}

static DISPATCHER: Lazy<Mutex<Option<Owned>>> = Lazy::new(|| Mutex::new(None));

/// Runs `job` on the dispatcher thread, after the jobs dispatched before it.
pub(crate) fn dispatch(job: Job) {
    let pid = crate::runtime::current_pid();
    let mut slot = DISPATCHER.lock().unwrap_or_else(|e| e.into_inner());
    let job = match slot.as_ref() {
        Some((owner, sender, _)) if *owner == pid => match sender.send(job) {
            Ok(()) => return,
            // The thread is gone (it never exits on its own): start another.
            Err(returned) => returned.0,
        },
        _ => job,
    };
    let (sender, receiver) = channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("statestore-cb".into())
        .spawn(move || {
            ON_DISPATCHER.with(|flag| flag.set(true));
            crate::runtime::ignore_sigpipe_here();
            while let Ok(job) = receiver.recv() {
                // A panicking callback must not take the others down with it.
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!("a completion callback panicked");
                }
            }
        });
    match spawned {
        Ok(thread) => {
            // The receiver lives in the thread just started: the send cannot fail.
            let _ = sender.send(job);
            if let Some((owner, inherited, _)) = slot.replace((pid, sender, Some(thread))) {
                if owner != pid {
                    // The parent's queue, whose thread is not in this process: dropping it
                    // would wake that thread through locks it may have held at the fork.
                    std::mem::forget(inherited);
                }
            }
        }
        Err(error) => {
            // No thread can be had: run it here rather than lose it.
            tracing::error!(%error, "cannot start the callback thread");
            drop(slot);
            job();
        }
    }
}

/// Ends the dispatcher thread of this process after the jobs already queued, and joins it. The
/// next [`dispatch`] starts a new one. Not on the dispatcher thread ([`on_dispatcher`]), which
/// would wait for its own end.
pub(crate) fn stop() {
    let pid = crate::runtime::current_pid();
    let taken = {
        let mut slot = DISPATCHER.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some((owner, _, _)) if *owner == pid => slot.take(),
            _ => None,
        }
    };
    if let Some((_, sender, thread)) = taken {
        // The thread's loop ends once its queue is empty and the sender gone.
        drop(sender);
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

/// Whether this is the dispatcher thread.
pub(crate) fn on_dispatcher() -> bool {
    ON_DISPATCHER.with(Cell::get)
}

/// Callbacks that a host runs on a thread of its own, from its own event loop, instead of on
/// the dispatcher thread: a queue with a file descriptor (one end of a socket pair) that is
/// readable while callbacks wait. The host watches [`CompletionQueue::fd`] (poll, epoll, libuv, ...) and
/// calls [`CompletionQueue::run_ready`] when it is readable. Used by
/// [`Pending::on_complete_in`](super::Pending::on_complete_in).
///
/// Clones share the queue. The descriptor is closed when the last clone is dropped.
#[derive(Clone)]
pub struct CompletionQueue {
    inner: Arc<QueueInner>,
}

struct QueueInner {
    jobs: Mutex<Jobs>,
    /// Signalled on a push while a thread waits without the descriptor
    /// ([`CompletionQueue::wait_nonempty`]).
    pushed: Condvar,
    /// Readable while `jobs` is not empty: a byte is written to `wake` after the push that
    /// makes the queue non-empty, and read by the run that empties it.
    reader: UnixStream,
    wake: UnixStream,
}

/// The queued callbacks, and how many threads wait in [`CompletionQueue::wait_nonempty`]
/// (a push signals the condition variable only then: signalling is a system call).
#[derive(Default)]
struct Jobs {
    queued: VecDeque<Job>,
    waiting: usize,
}

impl std::fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("fd", &self.fd())
            .field("ready", &self.len())
            .finish()
    }
}

impl CompletionQueue {
    /// A new, empty queue with its own descriptor (close-on-exec, non-blocking).
    pub fn new() -> crate::Result<Self> {
        let (reader, wake) = UnixStream::pair()
            .and_then(|(reader, wake)| {
                reader.set_nonblocking(true)?;
                wake.set_nonblocking(true)?;
                Ok((reader, wake))
            })
            .map_err(|error| {
                crate::Error::Runtime(format!(
                    "cannot make the completion queue's socket pair: {error}; the process may \
                     be out of file descriptors (ulimit -n)"
                ))
            })?;
        Ok(Self {
            inner: Arc::new(QueueInner {
                jobs: Mutex::new(Jobs::default()),
                pushed: Condvar::new(),
                reader,
                wake,
            }),
        })
    }

    /// The descriptor to watch for reading: readable while callbacks wait to be run (and, at
    /// times, once with none left: [`CompletionQueue::run_ready`] then runs none and drains
    /// it). Only `run_ready` reads it; the host must not read, write or close it.
    pub fn fd(&self) -> RawFd {
        self.inner.reader.as_raw_fd()
    }

    fn lock(&self) -> MutexGuard<'_, Jobs> {
        // Pushes and drains are single operations: a poisoned queue is consistent.
        self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many callbacks wait.
    pub fn len(&self) -> usize {
        self.lock().queued.len()
    }

    /// Whether no callback waits.
    pub fn is_empty(&self) -> bool {
        self.lock().queued.is_empty()
    }

    /// Queues `job`; the descriptor becomes readable if the queue was empty.
    ///
    /// The byte is written after the lock is released: the host's thread, woken by it, then
    /// finds the queue free instead of waiting for the pushing thread to let go of it (a
    /// thread switch each way). A run between the unlock and the byte takes the job without
    /// it, and the byte makes one later wake-up that finds nothing to run; a job is never left
    /// without a byte to come, since the push that made the queue non-empty writes one after
    /// every run that could have drained the socket before it.
    pub(crate) fn push(&self, job: Job) {
        let mut jobs = self.lock();
        let was_empty = jobs.queued.is_empty();
        jobs.queued.push_back(job);
        let waiting = jobs.waiting > 0;
        drop(jobs);
        if was_empty {
            // One byte per empty-to-non-empty change, each read by a run: the socket's buffer
            // never fills.
            let _ = (&self.inner.wake).write(&[1]);
        }
        if waiting {
            self.inner.pushed.notify_all();
        }
    }

    /// Runs every callback waiting now, on this thread, in the order they were queued, and
    /// returns how many ran. Callbacks queued while these run wait for the next call (the
    /// descriptor is readable again then). A panicking callback is logged and the others run.
    pub fn run_ready(&self) -> usize {
        let jobs = {
            let mut jobs = self.lock();
            // Drained under the lock: the next push then writes again.
            let mut bytes = [0u8; 64];
            loop {
                match (&self.inner.reader).read(&mut bytes) {
                    Ok(n) if n == bytes.len() => continue,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    _ => break, // drained (WouldBlock, or fewer bytes than asked)
                }
            }
            std::mem::take(&mut jobs.queued)
        };
        let ran = jobs.len();
        for job in jobs {
            if catch_unwind(AssertUnwindSafe(job)).is_err() {
                tracing::error!("a completion callback panicked");
            }
        }
        ran
    }

    /// Blocks until a callback waits or `timeout` passes; returns whether one waits.
    pub fn wait_nonempty(&self, timeout: Duration) -> bool {
        let mut jobs = self.lock();
        jobs.waiting += 1;
        let (mut jobs, _) = self
            .inner
            .pushed
            .wait_timeout_while(jobs, timeout, |jobs| jobs.queued.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        jobs.waiting -= 1;
        !jobs.queued.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::CompletionQueue;
    use crate::bindings::Pending;

    /// Whether the queue's descriptor is readable now, as a poll loop would see it.
    fn readable(queue: &CompletionQueue) -> bool {
        readable_within(queue, 0)
    }

    /// Whether the queue's descriptor becomes readable within `ms` milliseconds.
    fn readable_within(queue: &CompletionQueue, ms: i32) -> bool {
        let mut watch = libc::pollfd {
            fd: queue.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the length of the call.
        let ready = unsafe { libc::poll(&mut watch, 1, ms) };
        ready == 1 && watch.revents & libc::POLLIN != 0
    }

    #[test]
    fn callbacks_run_on_the_thread_that_runs_the_queue_in_order() {
        let queue = CompletionQueue::new().unwrap();
        assert!(!readable(&queue));
        let (sender, received) = channel();
        for i in 0..3 {
            let sender = sender.clone();
            Pending::ready(Ok(i)).on_complete_in(&queue, move |result| {
                sender
                    .send((result.unwrap(), std::thread::current().id()))
                    .unwrap();
            });
        }
        // Queued, not run: nothing arrives until the queue runs.
        assert!(received.try_recv().is_err());
        assert!(readable(&queue));
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.run_ready(), 3);
        let here = std::thread::current().id();
        let got: Vec<_> = received.try_iter().collect();
        assert_eq!(got, vec![(0, here), (1, here), (2, here)]);
        assert!(
            !readable(&queue),
            "an empty queue's descriptor is not readable"
        );
        assert_eq!(queue.run_ready(), 0);
    }

    #[test]
    fn a_call_completing_on_the_runtime_wakes_the_descriptor() {
        let queue = CompletionQueue::new().unwrap();
        let (sender, received) = channel();
        Pending::spawn(async {
            tokio::task::yield_now().await; // completes on a runtime thread
            Ok(7)
        })
        .on_complete_in(&queue, move |result| {
            sender.send(result.unwrap()).unwrap();
        });
        assert!(queue.wait_nonempty(Duration::from_secs(60)));
        assert!(readable_within(&queue, 60_000));
        assert_eq!(queue.run_ready(), 1);
        assert_eq!(received.try_recv().unwrap(), 7);
    }

    #[test]
    fn a_panicking_callback_does_not_stop_the_others() {
        let queue = CompletionQueue::new().unwrap();
        let (sender, received) = channel();
        Pending::ready(Ok(1)).on_complete_in(&queue, |_| panic!("callback panics"));
        Pending::ready(Ok(2)).on_complete_in(&queue, move |result| {
            sender.send(result.unwrap()).unwrap();
        });
        assert_eq!(queue.run_ready(), 2);
        assert_eq!(received.try_recv().unwrap(), 2);
    }
}
