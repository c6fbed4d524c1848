//! [`Event`] and [`EventStream`]: key notifications, leadership changes and lease losses as one
//! flat event type, consumed by pulling (blocking or async) or pushed to a sink.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::dispatch::dispatch;
use super::pending::Pending;
use crate::client::{ConnectionEvent, ConnectionEvents, KeyEvent, Observation};
use crate::lease::{LeaderEvent, LeaderObservation, Lease, Loss};
use crate::protocol::Hlc;
use crate::{runtime, Error, Result};

/// What an [`Event`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum EventKind {
    /// The key was set ([`Event::value`], [`Event::version`]).
    Set = 1,
    /// The key was deleted or expired.
    Delete = 2,
    /// The observation was re-registered after a reconnect; [`Event::value`] is the key's
    /// current value (`None`: absent). Changes while disconnected were not notified.
    Resynced = 3,
    /// An election has a leader ([`Event::holder`]).
    Elected = 4,
    /// An election has no leader.
    Vacant = 5,
    /// A lease, lock or leadership was lost ([`Event::loss`]).
    Lost = 6,
    /// The client's connection state changed ([`Event::connection`]).
    Connection = 7,
}

impl EventKind {
    /// Every kind, in the order of their codes: the list hosts offer listeners for.
    pub const ALL: [EventKind; 7] = [
        Self::Set,
        Self::Delete,
        Self::Resynced,
        Self::Elected,
        Self::Vacant,
        Self::Lost,
        Self::Connection,
    ];

    /// Lower-case name: `"set"`, `"delete"`, `"resynced"`, `"elected"`, `"vacant"`, `"lost"`,
    /// `"connection"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Set => "set",
            Self::Delete => "delete",
            Self::Resynced => "resynced",
            Self::Elected => "elected",
            Self::Vacant => "vacant",
            Self::Lost => "lost",
            Self::Connection => "connection",
        }
    }
}

/// One event of an [`EventStream`], as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The observed key (the election's key, the lease's key).
    pub key: Bytes,
    /// [`EventKind::Set`]: the new value; [`EventKind::Resynced`]: the current value.
    pub value: Option<Bytes>,
    /// The key's version, when the service reported one.
    pub version: Option<Hlc>,
    /// [`EventKind::Elected`]: the leader; [`EventKind::Lost`]: the new holder, if known.
    pub holder: Option<Bytes>,
    /// [`EventKind::Lost`]: why.
    pub loss: Option<Loss>,
    /// [`EventKind::Connection`]: the new state, with its reason, attempt and delay.
    pub connection: Option<ConnectionEvent>,
}

impl Event {
    fn new(kind: EventKind, key: Bytes) -> Self {
        Self {
            kind,
            key,
            value: None,
            version: None,
            holder: None,
            loss: None,
            connection: None,
        }
    }

    /// The flat form of a connection change (its key is empty).
    pub fn from_connection_event(event: ConnectionEvent) -> Self {
        Self {
            connection: Some(event),
            ..Self::new(EventKind::Connection, Bytes::new())
        }
    }

    /// The flat form of a key notification.
    pub fn from_key_event(key: Bytes, event: KeyEvent) -> Self {
        match event {
            KeyEvent::Set { value, version } => Self {
                value: Some(value),
                version,
                ..Self::new(EventKind::Set, key)
            },
            KeyEvent::Delete { version } => Self {
                version,
                ..Self::new(EventKind::Delete, key)
            },
            KeyEvent::Resynced { value } => {
                let (value, version) = match value {
                    Some(v) => (Some(v.value), v.version),
                    None => (None, None),
                };
                Self {
                    value,
                    version,
                    ..Self::new(EventKind::Resynced, key)
                }
            }
        }
    }

    /// The flat form of a leadership change.
    pub fn from_leader_event(key: Bytes, event: LeaderEvent) -> Self {
        match event {
            LeaderEvent::Elected { leader } => Self {
                holder: Some(leader),
                ..Self::new(EventKind::Elected, key)
            },
            LeaderEvent::Vacant => Self::new(EventKind::Vacant, key),
        }
    }

    /// The flat form of a loss.
    pub fn from_loss(key: Bytes, loss: Loss) -> Self {
        Self {
            holder: loss.holder.clone(),
            loss: Some(loss),
            ..Self::new(EventKind::Lost, key)
        }
    }
}

type Sink = Arc<dyn Fn(Event) + Send + Sync>;
type EndCallback = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    events: VecDeque<Event>,
    ended: bool,
    sink: Option<Sink>,
    on_end: Vec<EndCallback>,
}

struct Inner {
    key: Bytes,
    queue: Mutex<Queue>,
    /// Wakes blocking waiters.
    ready: Condvar,
    /// Wakes async waiters.
    notify: Notify,
    pump: Mutex<Option<AbortHandle>>,
    pid: u32,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Every update leaves the queue consistent: a poisoned lock is usable.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, event: Event) {
        let mut queue = self.lock();
        if queue.ended {
            return;
        }
        if let Some(sink) = queue.sink.clone() {
            drop(queue);
            dispatch(Box::new(move || sink(event)));
            return;
        }
        queue.events.push_back(event);
        drop(queue);
        self.wake();
    }

    /// Ends the stream; `discard` drops the events not yet consumed (a close by the consumer).
    fn end(&self, discard: bool) {
        let mut queue = self.lock();
        if discard {
            queue.events.clear();
        }
        if queue.ended {
            return;
        }
        queue.ended = true;
        queue.sink = None;
        let callbacks = std::mem::take(&mut queue.on_end);
        drop(queue);
        for callback in callbacks {
            dispatch(callback);
        }
        self.wake();
    }

    fn wake(&self) {
        self.ready.notify_all();
        self.notify.notify_waiters();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(pump) = self.pump.get_mut().ok().and_then(Option::take) {
            pump.abort();
        }
    }
}

/// A stream of [`Event`]s fed by a task on the internal runtime: an observation of a key, of
/// an election, or the loss of a lease.
///
/// Cheap to clone (clones share the stream) and usable from any thread. Consume it by pulling
/// ([`EventStream::next_timeout`], [`EventStream::next`], [`EventStream::next_pending`]) or by
/// pushing to a sink ([`EventStream::set_sink`]). It ends when its source ends (unobserved,
/// client closed) or on [`EventStream::close`]; dropping the last clone closes it, which stops
/// the observation behind it.
#[derive(Clone)]
pub struct EventStream {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("key", &self.inner.key)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl EventStream {
    /// Starts a stream fed by `source`, a future that pushes events until its source ends.
    fn start<F, Fut>(key: Bytes, source: F) -> EventStream
    where
        F: FnOnce(Feed) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let inner = Arc::new(Inner {
            key,
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            notify: Notify::new(),
            pump: Mutex::new(None),
            pid: crate::runtime::current_pid(),
        });
        let feed = Feed(Arc::downgrade(&inner));
        let ender = Feed(Arc::downgrade(&inner));
        let source = source(feed);
        match runtime::handle() {
            Ok(handle) => {
                let task = handle.spawn(async move {
                    source.await;
                    ender.end();
                });
                *inner.pump.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
            }
            Err(error) => {
                tracing::error!(%error, "cannot start an event stream");
                inner.end(false);
            }
        }
        EventStream { inner }
    }

    /// The notifications of a key.
    pub fn from_observation(mut observation: Observation) -> EventStream {
        let key = observation.key().clone();
        Self::start(key.clone(), move |feed| async move {
            while let Some(event) = observation.next().await {
                if !feed.push(Event::from_key_event(key.clone(), event)) {
                    break;
                }
            }
        })
    }

    /// The leadership changes of an election whose key is `key`.
    pub fn from_leader(mut observation: LeaderObservation, key: Bytes) -> EventStream {
        Self::start(key.clone(), move |feed| async move {
            while let Some(event) = observation.next().await {
                if !feed.push(Event::from_leader_event(key.clone(), event)) {
                    break;
                }
            }
        })
    }

    /// The connection changes of a client, as [`EventKind::Connection`] events; ends after
    /// the client is closed. It does not keep the client open.
    pub fn from_connection(mut events: ConnectionEvents) -> EventStream {
        Self::start(Bytes::new(), move |feed| async move {
            while let Some(event) = events.next().await {
                if !feed.push(Event::from_connection_event(event)) {
                    break;
                }
            }
        })
    }

    /// One [`EventKind::Lost`] event when `lease` (or the lock guard or candidacy it backs) is
    /// lost; the stream ends without an event if it is released instead.
    pub fn from_lease_loss(lease: &Lease) -> EventStream {
        let lease = lease.clone();
        let key = lease.key().clone();
        let state = lease.state();
        if !state.is_held() {
            // Decided already (never held, released or lost): the stream is complete before it
            // is returned, so a wait with no time (`lost(timeout=0)`) finds the answer instead
            // of racing the task that would.
            let stream = Self::start(key.clone(), |_| async {});
            let feed = Feed(Arc::downgrade(&stream.inner));
            if let Some(loss) = state.loss() {
                feed.push(Event::from_loss(key, loss.clone()));
            }
            feed.end();
            return stream;
        }
        Self::start(key.clone(), move |feed| async move {
            if let Some(loss) = lease.lost().await {
                feed.push(Event::from_loss(key, loss));
            }
        })
    }

    /// The observed key.
    pub fn key(&self) -> &Bytes {
        &self.inner.key
    }

    /// Blocks for the next event: `Ok(Some(event))`; `Ok(None)` if none came within `timeout`
    /// (`None`: wait as long as it takes); [`Error::Closed`] once the stream has ended and its
    /// events are consumed; [`Error::Runtime`] where blocking is refused (see
    /// [`crate::runtime`]) or in a forked child.
    pub fn next_timeout(&self, timeout: Option<Duration>) -> Result<Option<Event>> {
        if self.inner.pid != crate::runtime::current_pid() {
            return Err(Error::Runtime(
                "this stream was created before fork and is fed in the parent process".into(),
            ));
        }
        runtime::ensure_blocking_allowed()?;
        let deadline = timeout.and_then(super::duration::deadline);
        let mut queue = self.inner.lock();
        loop {
            if let Some(event) = queue.events.pop_front() {
                return Ok(Some(event));
            }
            if queue.ended {
                return Err(Error::Closed);
            }
            queue = match deadline {
                None => self
                    .inner
                    .ready
                    .wait(queue)
                    .unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    self.inner
                        .ready
                        .wait_timeout(queue, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }

    /// [`EventStream::next_timeout`] that calls `check` on the waiting thread every `every`
    /// while it waits: if `check` fails, the wait ends with that error (the stream stays as it
    /// was). For hosts whose waiting thread must notice something only it can see.
    pub fn next_checked(
        &self,
        timeout: Option<Duration>,
        every: Duration,
        check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Event>> {
        let deadline = timeout.and_then(super::duration::deadline);
        loop {
            let slice = match deadline {
                Some(deadline) => every.min(deadline.saturating_duration_since(Instant::now())),
                None => every,
            };
            if let Some(event) = self.next_timeout(Some(slice))? {
                return Ok(Some(event));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            check()?;
        }
    }

    /// The next event; `None` once the stream has ended and its events are consumed.
    pub async fn next(&self) -> Option<Event> {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registered before looking, so a push between the look and the wait is not missed.
            notified.as_mut().enable();
            {
                let mut queue = self.inner.lock();
                if let Some(event) = queue.events.pop_front() {
                    return Some(event);
                }
                if queue.ended {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// [`EventStream::next`] as a [`Pending`] call (for async iterators of the hosts).
    pub fn next_pending(&self) -> Pending<Option<Event>> {
        let stream = self.clone();
        Pending::spawn(async move { Ok(stream.next().await) })
    }

    /// Ends the stream from any thread: waiters wake up (`None` / [`Error::Closed`]), queued
    /// events are dropped, the sink is dropped, and the observation behind it stops.
    pub fn close(&self) {
        self.inner.end(true);
        if let Some(pump) = self
            .inner
            .pump
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            pump.abort();
        }
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().ended
    }

    /// Pushes every event to `sink` on the library's dispatcher thread, in order, the events
    /// already queued first; pulling then returns nothing new. The sink is dropped when the
    /// stream ends.
    pub fn set_sink(&self, sink: impl Fn(Event) + Send + Sync + 'static) {
        let sink: Sink = Arc::new(sink);
        let mut queue = self.inner.lock();
        for event in queue.events.drain(..) {
            let sink = sink.clone();
            dispatch(Box::new(move || sink(event)));
        }
        if !queue.ended {
            queue.sink = Some(sink);
        }
    }

    /// Calls `callback` once on the dispatcher thread when the stream ends (at once if it has),
    /// after every event pushed to the sink.
    pub fn on_end(&self, callback: impl FnOnce() + Send + 'static) {
        let mut queue = self.inner.lock();
        if queue.ended {
            drop(queue);
            dispatch(Box::new(callback));
        } else {
            queue.on_end.push(Box::new(callback));
        }
    }
}

/// The source task's side of a stream; weak, so an abandoned stream is dropped (and its source
/// aborted) even while the source waits.
struct Feed(Weak<Inner>);

impl Feed {
    /// Queues an event; false once nobody holds the stream.
    fn push(&self, event: Event) -> bool {
        match self.0.upgrade() {
            Some(inner) => {
                inner.push(event);
                true
            }
            None => false,
        }
    }

    fn end(&self) {
        if let Some(inner) = self.0.upgrade() {
            inner.end(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scripted(events: Vec<Event>, then_end: bool) -> EventStream {
        EventStream::start(Bytes::from_static(b"k"), move |feed| async move {
            for event in events {
                feed.push(event);
            }
            if !then_end {
                std::future::pending::<()>().await;
            }
        })
    }

    #[test]
    fn next_checked_returns_events_and_gives_up_when_the_check_fails() {
        let stream = scripted(
            vec![Event::new(EventKind::Set, Bytes::from_static(b"k"))],
            false,
        );
        let mut ok = || Ok(());
        let event = stream
            .next_checked(None, Duration::from_millis(1), &mut ok)
            .unwrap();
        assert_eq!(event.map(|e| e.kind), Some(EventKind::Set));
        // Nothing more comes: a limit gives None, a failing check its error.
        let none = stream.next_checked(
            Some(Duration::from_millis(5)),
            Duration::from_millis(1),
            &mut ok,
        );
        assert!(matches!(none, Ok(None)), "{none:?}");
        let mut checks = 0;
        let stopped = stream.next_checked(None, Duration::from_millis(1), &mut || {
            checks += 1;
            if checks < 3 {
                Ok(())
            } else {
                Err(Error::Runtime("stopping".into()))
            }
        });
        assert!(matches!(stopped, Err(Error::Runtime(_))), "{stopped:?}");
        assert!(!stream.is_closed(), "the stream stays open");
    }

    fn set(value: &'static str) -> Event {
        Event::from_key_event(
            Bytes::from_static(b"k"),
            KeyEvent::Set {
                value: Bytes::from_static(value.as_bytes()),
                version: None,
            },
        )
    }

    #[test]
    fn pulls_in_order_then_reports_the_end() {
        let stream = scripted(vec![set("a"), set("b")], true);
        let first = stream.next_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(first.unwrap().value.as_deref(), Some(&b"a"[..]));
        let second = stream.next_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(second.unwrap().kind, EventKind::Set);
        assert!(matches!(
            stream.next_timeout(Some(Duration::from_secs(5))),
            Err(Error::Closed)
        ));
    }

    #[test]
    fn times_out_then_close_from_another_thread_wakes_the_waiter() {
        let stream = scripted(vec![], false);
        assert_eq!(
            stream.next_timeout(Some(Duration::from_millis(5))).unwrap(),
            None
        );
        let closer = stream.clone();
        let waiter = std::thread::spawn(move || stream.next_timeout(None));
        closer.close();
        assert!(matches!(waiter.join().unwrap(), Err(Error::Closed)));
        assert!(closer.is_closed());
        assert!(matches!(closer.next_pending().wait(), Ok(None)));
    }

    #[test]
    fn sink_gets_queued_and_later_events_then_the_end() {
        let (sender, received) = std::sync::mpsc::channel();
        let (gate_tx, gate) = tokio::sync::oneshot::channel::<()>();
        let stream = EventStream::start(Bytes::from_static(b"k"), move |feed| async move {
            feed.push(set("queued"));
            gate.await.ok();
            feed.push(set("pushed"));
        });
        let events = sender.clone();
        stream.set_sink(move |event| events.send(Some(event.value)).unwrap());
        stream.on_end(move || sender.send(None).unwrap());
        gate_tx.send(()).unwrap();
        let mut seen = Vec::new();
        while let Ok(item) = received.recv_timeout(Duration::from_secs(5)) {
            let end = item.is_none();
            seen.push(item);
            if end {
                break;
            }
        }
        assert_eq!(seen.last(), Some(&None), "the end comes last: {seen:?}");
        // Whether "queued" was queued before the sink came or not, the sink gets it, in order.
        assert_eq!(
            seen,
            vec![
                Some(Some(Bytes::from_static(b"queued"))),
                Some(Some(Bytes::from_static(b"pushed"))),
                None
            ]
        );
    }
}
