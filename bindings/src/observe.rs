//! Notifications: observations (key changes, leadership changes, lease loss) consumed either
//! by pulling events with a timeout or through a callback per event.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore_core::bindings::{Event, EventStream};
use statestore_core::{Client, ConnectionState, Error, Observation, Result};

use crate::callbacks::run_callback;
use crate::client::{key_op, statestore_client, statestore_done_cb, CLIENTS};
use crate::reply::{Owned, PreparedCall, Reply};
use crate::status::{entry, statestore_status};
use crate::util::{self, null, CText, Handles, Out, UserData};

/// A stream of events: the changes of an observed key (`statestore_observe()`), of an
/// election's leader (`statestore_election_observe()`), or the loss of a lease, lock or
/// leadership (`statestore_lease_watch_loss()`...). Consume it in one of two styles: pull
/// with `statestore_observation_next()`, or push with `statestore_observation_set_callback()`.
/// Free it with `statestore_observation_free()`.
pub struct statestore_observation {
    _private: [u8; 0],
}

pub(crate) static OBSERVATIONS: Handles<EventStream> = Handles::new(3, "statestore_observation");

pub(crate) fn new_observation(stream: EventStream) -> *mut statestore_observation {
    OBSERVATIONS.insert(Arc::new(stream))
}

/// What an event says.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_event_kind {
    /// The key was set: `value` is the new value.
    STATESTORE_EVENT_SET = 1,
    /// The key was deleted or expired.
    STATESTORE_EVENT_DELETE = 2,
    /// The connection came back and the observation was registered again; changes while
    /// disconnected were not notified. `has_value`/`value` give the key's current state.
    STATESTORE_EVENT_RESYNCED = 3,
    /// An election has a (new) leader: `holder` is its name.
    STATESTORE_EVENT_ELECTED = 4,
    /// An election has no leader.
    STATESTORE_EVENT_VACANT = 5,
    /// A lease, lock or leadership was lost: `loss_reason` says why, `loss_message` says more.
    STATESTORE_EVENT_LOST = 6,
    /// The client's connection state changed (from `statestore_connection_events()`):
    /// `connection_state`, `connection_reason`, `connection_attempt`, `connection_delay_ms`,
    /// `session_lost`. The key is empty.
    STATESTORE_EVENT_CONNECTION = 7,
}

/// A client's connection state (`statestore_connection_state()`,
/// `statestore_event.connection_state`); `statestore_connection_state_name()` gives its name.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_connection_state_code {
    /// Not a connection event.
    STATESTORE_CONNECTION_NONE = 0,
    /// The first connection is being made.
    STATESTORE_CONNECTION_CONNECTING = 1,
    /// Connected: calls go out.
    STATESTORE_CONNECTION_CONNECTED = 2,
    /// The connection was lost; reconnection attempts are under way (calls wait).
    STATESTORE_CONNECTION_RECONNECTING = 3,
    /// Reconnecting gave up (options `reconnect_max_attempts`, `reconnect_max_elapsed`):
    /// calls fail at once with `STATESTORE_ERR_CONNECTION` naming the reason, observations
    /// have ended. Final until the client is closed.
    STATESTORE_CONNECTION_GAVE_UP = 4,
    /// The client was closed. Final.
    STATESTORE_CONNECTION_CLOSED = 5,
}

/// Why a holding was lost (`statestore_event.loss_reason`).
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_loss_reason {
    /// Not a loss event.
    STATESTORE_LOSS_NONE = 0,
    /// No renewal succeeded within the TTL: the holding may have expired on the service.
    STATESTORE_LOSS_EXPIRED = 1,
    /// Another holder has the key.
    STATESTORE_LOSS_TAKEN_OVER = 2,
    /// The client was closed.
    STATESTORE_LOSS_CLIENT_CLOSED = 3,
}

/// One event. Byte strings are not NUL-terminated; pointers of absent parts are NULL.
#[repr(C)]
pub struct statestore_event {
    /// A `statestore_event_kind` value.
    pub kind: i32,
    /// The observed key (the election's or lease's key for leadership and loss events).
    pub key: *const u8,
    /// Length of `key`.
    pub key_len: usize,
    /// Whether `value` is present (SET: always; RESYNCED: if the key exists).
    pub has_value: bool,
    /// The value (NULL when absent).
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
    /// The key's version if known, or NULL.
    pub version: *const c_char,
    /// Whether `holder` is present (ELECTED: the leader; LOST: the new holder if known).
    pub has_holder: bool,
    /// The holder's name (NULL when absent).
    pub holder: *const u8,
    /// Length of `holder`.
    pub holder_len: usize,
    /// A `statestore_loss_reason` value (LOST events), else `STATESTORE_LOSS_NONE`.
    pub loss_reason: i32,
    /// A sentence on the loss (LOST events), else NULL.
    pub loss_message: *const c_char,
    /// A `statestore_connection_state_code` value (CONNECTION events), else
    /// `STATESTORE_CONNECTION_NONE`.
    pub connection_state: i32,
    /// CONNECTION events: why the connection dropped, why the last attempt failed, or why
    /// reconnecting gave up (names the broker's host:port); else NULL.
    pub connection_reason: *const c_char,
    /// RECONNECTING: the number of the next attempt (1 for the first); GAVE_UP: the attempts
    /// made; else 0.
    pub connection_attempt: u32,
    /// RECONNECTING: milliseconds before the next attempt; else -1.
    pub connection_delay_ms: i64,
    /// CONNECTED after a reconnect: the broker had lost the session (requests in flight may
    /// have been lost).
    pub session_lost: bool,
}

type Keep = (
    Bytes,
    Option<Bytes>,
    Option<CText>,
    Option<Bytes>,
    Option<CText>,
    Option<CText>,
);
pub(crate) type OwnedEvent = Owned<statestore_event, Keep>;

fn parts(data: &Option<Bytes>) -> (bool, *const u8, usize) {
    match data {
        Some(d) if d.is_empty() => (true, b"".as_ptr(), 0),
        Some(d) => (true, d.as_ptr(), d.len()),
        None => (false, std::ptr::null(), 0),
    }
}

pub(crate) fn owned_event(event: Event) -> OwnedEvent {
    let version = util::version_string(event.version.as_ref());
    let loss_message = event.loss.as_ref().map(|l| CText::new(l.to_string()));
    let loss_reason = event.loss.as_ref().map_or(0, |l| l.reason as i32);
    let (has_value, value, value_len) = parts(&event.value);
    let (has_holder, holder, holder_len) = parts(&event.holder);
    let connection = event.connection.as_ref();
    let reason = connection.and_then(|c| c.reason.as_deref()).map(CText::new);
    let key = event.key;
    Owned {
        view: statestore_event {
            kind: event.kind as i32,
            key: key.as_ptr(),
            key_len: key.len(),
            has_value,
            value,
            value_len,
            version: CText::ptr(&version),
            has_holder,
            holder,
            holder_len,
            loss_reason,
            loss_message: CText::ptr(&loss_message),
            connection_state: connection.map_or(0, |c| c.state as i32),
            connection_reason: CText::ptr(&reason),
            connection_attempt: connection.map_or(0, |c| c.attempt),
            connection_delay_ms: connection
                .and_then(|c| c.delay)
                .map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            session_lost: connection.is_some_and(|c| c.session_lost),
        },
        keep: (
            key,
            event.value,
            version,
            event.holder,
            loss_message,
            reason,
        ),
    }
}

/// The client's connection state now, in `*state` (a `statestore_connection_state_code`
/// value).
///
/// # Safety
/// `state` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_connection_state(
    client: *const statestore_client,
    state: *mut i32,
) -> statestore_status {
    // SAFETY: `state` is NULL or writable during this call (this function's contract).
    let state = unsafe { Out::new(state) };
    entry(|| {
        let client = CLIENTS.get(client, "client")?;
        state.put("state", client.client.connection_state() as i32)
    })
}

/// The name of a connection state (`"connecting"`, `"connected"`, `"reconnecting"`,
/// `"gave_up"`, `"closed"`; `"none"` for `STATESTORE_CONNECTION_NONE`), or NULL for a value
/// that is none of them. Static: never free it.
#[no_mangle]
pub extern "C" fn statestore_connection_state_name(state: i32) -> *const c_char {
    CONNECTION_STATE_NAMES
        .iter()
        .find(|(code, _)| *code == state)
        .map_or(std::ptr::null(), |(_, name)| name.as_ptr())
}

/// Each state's code and name (core's table, and "none"), NUL-terminated once.
static CONNECTION_STATE_NAMES: std::sync::LazyLock<Vec<(i32, std::ffi::CString)>> =
    std::sync::LazyLock::new(|| {
        ConnectionState::ALL
            .iter()
            .map(|s| (*s as i32, s.name()))
            .chain([(0, "none")])
            .map(|(code, name)| (code, crate::status::c_string(name)))
            .collect()
    });

/// The changes of the client's connection state from now on, as an observation of
/// `STATESTORE_EVENT_CONNECTION` events, pulled with `statestore_observation_next()` or pushed
/// with `statestore_observation_set_callback()`. It ends after the CLOSED event (the client
/// closed); it does not keep the client open. Free it with `statestore_observation_free()`.
///
/// # Safety
/// `observation` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_connection_events(
    client: *const statestore_client,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    // SAFETY: `observation` is NULL or writable during this call (this function's contract).
    let observation = unsafe { Out::new(observation) };
    entry(|| {
        observation.clear("observation")?;
        let client = CLIENTS.get(client, "client")?;
        let stream = EventStream::from_connection(client.client.connection_events());
        observation.set(new_observation(stream));
        Ok(())
    })
}

/// Frees an event returned by `statestore_observation_next()`. NULL does nothing.
///
/// # Safety
/// `event` is NULL or an event from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_event_free(event: *mut statestore_event) {
    // SAFETY: the library makes every `statestore_event` as an `OwnedEvent`; `event` is NULL
    // or one not yet freed (this function's contract).
    unsafe { OwnedEvent::free(event) }
}

/// An observation of a key from its C arguments.
///
/// # Safety
/// As [`key_op`].
unsafe fn observe_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
) -> Result<PreparedCall<Observation, *mut statestore_observation>> {
    let observe = |client: Client, key| async move { client.observe(key).await };
    let convert = |observed| new_observation(EventStream::from_observation(observed));
    // SAFETY: `key` as `key_op` requires (this function's contract).
    unsafe { key_op(client, key, key_len, "key", observe, convert) }
}

/// The end of a key's observations from the C arguments.
///
/// # Safety
/// As [`key_op`].
unsafe fn unobserve_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
) -> Result<PreparedCall<(), ()>> {
    let unobserve = |client: Client, key| async move { client.unobserve(key).await };
    // SAFETY: `key` as `key_op` requires (this function's contract).
    unsafe { key_op(client, key, key_len, "key", unobserve, |()| ()) }
}

/// Starts observing `key` (KEYNOTIFY) and waits for the service to confirm. Free
/// `*observation` with `statestore_observation_free()`.
///
/// # Safety
/// `key` points to `key_len` readable bytes; `observation` is NULL or points to writable
/// storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_observe(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    // SAFETY: `observation` is NULL or writable during this call (this function's contract).
    let observation = unsafe { Out::new(observation) };
    Reply::required(observation, "observation").run(|| {
        // SAFETY: `key` is as `observe_op` requires (this function's contract), and it reads
        // it before `run` returns.
        unsafe { observe_op(client, key, key_len) }
    })
}

/// Completion of `statestore_observe_async()`: on success the callback owns `observation`
/// (free it with `statestore_observation_free()`); NULL on failure.
pub type statestore_observe_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: statestore_status,
        message: *const c_char,
        observation: *mut statestore_observation,
    ),
>;

/// `statestore_observe()` without blocking.
///
/// # Safety
/// `key` as for `statestore_observe()`; `callback` may be called with `user_data` on a
/// library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_observe_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    callback: statestore_observe_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::callback(callback, user_data) };
    reply.run(|| {
        // SAFETY: `key` is as `observe_op` requires (this function's contract), and it copies
        // it before `run` returns.
        unsafe { observe_op(client, key, key_len) }
    })
}

/// Stops every observation of `key` on this client (KEYNOTIFY STOP) and waits for the
/// service: their pull waiters get `STATESTORE_ERR_CLOSED` and their callbacks their final
/// call. The observation handles must still be freed.
///
/// # Safety
/// `key` points to `key_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn statestore_unobserve(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
) -> statestore_status {
    Reply::status_only().run(|| {
        // SAFETY: `key` is as `unobserve_op` requires (this function's contract), and it reads
        // it before `run` returns.
        unsafe { unobserve_op(client, key, key_len) }
    })
}

/// `statestore_unobserve()` without blocking.
///
/// # Safety
/// `key` as for `statestore_unobserve()`; `callback` may be called with `user_data` on a
/// library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_unobserve_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    callback: statestore_done_cb,
    user_data: *mut c_void,
) -> statestore_status {
    // SAFETY: `callback` may be called with `user_data` on a library thread (this function's
    // contract).
    let reply = unsafe { Reply::status(callback, user_data) };
    reply.run(|| {
        // SAFETY: `key` is as `unobserve_op` requires (this function's contract), and it
        // copies it before `run` returns.
        unsafe { unobserve_op(client, key, key_len) }
    })
}

/// Waits up to `timeout_ms` for the next event (`timeout_ms` < 0: without limit; 0: only
/// take one already queued). On `STATESTORE_OK`, `*event` is the event (free it with
/// `statestore_event_free()`); on `STATESTORE_ERR_TIMEOUT` none came in time; on
/// `STATESTORE_ERR_CLOSED` the observation has ended (closed, unobserved, client closed,
/// or its single loss event already taken). In the callback style, events go to the
/// callback and this returns nothing new. Several threads may wait at once; each event goes
/// to one of them.
///
/// # Safety
/// `event` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_next(
    observation: *const statestore_observation,
    timeout_ms: i64,
    event: *mut *mut statestore_event,
) -> statestore_status {
    // SAFETY: `event` is NULL or writable during this call (this function's contract).
    let event = unsafe { Out::new(event) };
    entry(|| {
        event.clear("event")?;
        let stream = OBSERVATIONS.get(observation, "observation")?;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        match stream.next_timeout(timeout)? {
            Some(next) => {
                event.set(owned_event(next).into_raw());
                Ok(())
            }
            None => Err(Error::Timeout(timeout.unwrap_or_default())),
        }
    })
}

/// An event callback: `event` is borrowed for the duration of the call. After the last
/// event it is called once more with `event` NULL: the observation has ended, the callback
/// will never be called again, and `user_data` may be released.
pub type statestore_event_cb =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const statestore_event)>;

/// An observation's C callback: gets each event, then NULL when the stream drops its sink
/// (the end, exactly once).
struct Sink {
    callback: unsafe extern "C" fn(*mut c_void, *const statestore_event),
    user: UserData,
}

impl Sink {
    /// # Safety
    /// `callback` may be called with `user_data` on any library thread, one call at a time
    /// (the contract of `statestore_observation_set_callback()`).
    unsafe fn new(
        callback: unsafe extern "C" fn(*mut c_void, *const statestore_event),
        user_data: *mut c_void,
    ) -> Self {
        Self {
            callback,
            user: UserData(user_data),
        }
    }

    /// Calls the callback with `event` (NULL: the end).
    fn call(&self, event: *const statestore_event) {
        let (callback, user) = (self.callback, self.user);
        run_callback(|| {
            // SAFETY: `Sink::new`'s caller promised that `callback` may be called with
            // `user_data` here; `event` is NULL or borrowed from the caller for this call,
            // which the stream makes one at a time.
            unsafe { callback(user.get(), event) }
        });
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.call(std::ptr::null());
    }
}

/// Switches the observation to the callback style: every event (those already queued first)
/// goes to `callback` on a library thread, in order, one at a time. Setting another
/// callback replaces this one, which then gets its final NULL call. The final NULL call
/// comes when the observation ends; it may run on the thread that ends it (the one calling
/// `statestore_observation_close()`, `_free()`, `statestore_unobserve()` or
/// `statestore_close()`); it must not call functions on this observation other than
/// `statestore_observation_free()`.
///
/// # Safety
/// `callback` may be called with `user_data` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_set_callback(
    observation: *const statestore_observation,
    callback: statestore_event_cb,
    user_data: *mut c_void,
) -> statestore_status {
    entry(|| {
        let callback = callback.ok_or_else(|| null("callback"))?;
        let stream = OBSERVATIONS.get(observation, "observation")?;
        // SAFETY: `callback` may be called with `user_data` on a library thread (this
        // function's contract).
        let sink = unsafe { Sink::new(callback, user_data) };
        stream.set_sink(move |event| {
            let owned = owned_event(event);
            sink.call(&owned.view);
        });
        Ok(())
    })
}

/// The observed key, borrowed until the observation is freed.
///
/// # Safety
/// `key` and `key_len` are NULL or point to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_key(
    observation: *const statestore_observation,
    key: *mut *const u8,
    key_len: *mut usize,
) -> statestore_status {
    // SAFETY: `key` is NULL or writable during this call (this function's contract).
    let key = unsafe { Out::new(key) };
    // SAFETY: `key_len` is NULL or writable during this call (this function's contract).
    let key_len = unsafe { Out::new(key_len) };
    entry(|| {
        let stream = OBSERVATIONS.get(observation, "observation")?;
        if key.is_null() {
            return Err(null("key"));
        }
        // The stream lives as long as the handle, so its key does too.
        let bytes: &Bytes = stream.key();
        key_len.put("key_len", bytes.len())?;
        key.set(bytes.as_ptr());
        Ok(())
    })
}

/// Ends the observation: waiters get `STATESTORE_ERR_CLOSED`, the callback its final NULL
/// call; the service is told to stop notifying once no observation of the key remains.
/// The handle stays valid until `statestore_observation_free()`.
#[no_mangle]
pub extern "C" fn statestore_observation_close(
    observation: *const statestore_observation,
) -> statestore_status {
    entry(|| {
        OBSERVATIONS.get(observation, "observation")?.close();
        Ok(())
    })
}

/// Ends the observation (see `statestore_observation_close()`) and frees the handle. NULL
/// does nothing.
#[no_mangle]
pub extern "C" fn statestore_observation_free(
    observation: *mut statestore_observation,
) -> statestore_status {
    entry(|| {
        if let Some(stream) = OBSERVATIONS.remove(observation, "observation")? {
            stream.close();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use statestore_core::lease::{LeaderEvent, Loss, LossReason};
    use statestore_core::{Hlc, KeyEvent};

    use super::*;

    /// `len` bytes at `data`, or `None` for NULL.
    ///
    /// # Safety
    /// `data` is NULL or valid for reads of `len` bytes.
    unsafe fn read(data: *const u8, len: usize) -> Option<Vec<u8>> {
        // SAFETY: the caller's promise.
        (!data.is_null()).then(|| unsafe { std::slice::from_raw_parts(data, len) }.to_vec())
    }

    /// An event as C reads it: kind, key, value, holder, loss reason, whether a loss message
    /// is present.
    type Parts = (i32, Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>, i32, bool);

    /// Makes the event's C form, reads every part of it as C does, and frees it.
    fn round_trip(event: Event) -> Parts {
        let raw = owned_event(event).into_raw();
        // SAFETY: an event the library just made, not yet freed.
        let view = unsafe { &*raw };
        // SAFETY: the view's pointers point into the event.
        let key = unsafe { read(view.key, view.key_len) }.unwrap();
        // SAFETY: as above.
        let value = unsafe { read(view.value, view.value_len) };
        // SAFETY: as above.
        let holder = unsafe { read(view.holder, view.holder_len) };
        assert_eq!(view.has_value, value.is_some());
        assert_eq!(view.has_holder, holder.is_some());
        // SAFETY: NULL or a NUL-terminated string inside the event.
        let has_message = !view.loss_message.is_null()
            && !unsafe { std::ffi::CStr::from_ptr(view.loss_message) }.is_empty();
        if !view.version.is_null() {
            // SAFETY: a NUL-terminated string inside the event.
            let version = unsafe { std::ffi::CStr::from_ptr(view.version) };
            assert!(version.to_str().unwrap().parse::<Hlc>().is_ok());
        }
        let parts = (view.kind, key, value, holder, view.loss_reason, has_message);
        // SAFETY: made by the library, freed once.
        unsafe { statestore_event_free(raw) };
        parts
    }

    #[test]
    fn an_event_points_into_itself_until_freed() {
        let key = Bytes::from_static(b"k");
        let version = Hlc {
            wall_ms: 1_700_000_000_000,
            counter: 0,
            node: "n".into(),
        };
        let set = Event::from_key_event(
            key.clone(),
            KeyEvent::Set {
                value: Bytes::from_static(b"v"),
                version: Some(version),
            },
        );
        assert_eq!(
            round_trip(set),
            (1, b"k".to_vec(), Some(b"v".to_vec()), None, 0, false)
        );
        let empty = Event::from_key_event(
            key.clone(),
            KeyEvent::Set {
                value: Bytes::new(),
                version: None,
            },
        );
        assert_eq!(
            round_trip(empty),
            (1, b"k".to_vec(), Some(Vec::new()), None, 0, false),
            "an empty value is present, with a non-NULL pointer"
        );
        let elected = Event::from_leader_event(
            key.clone(),
            LeaderEvent::Elected {
                leader: Bytes::from_static(b"me"),
            },
        );
        assert_eq!(
            round_trip(elected),
            (4, b"k".to_vec(), None, Some(b"me".to_vec()), 0, false)
        );
        let lost = Event::from_loss(key, Loss::new(LossReason::TakenOver));
        assert_eq!(round_trip(lost), (6, b"k".to_vec(), None, None, 2, true));
        // SAFETY: NULL does nothing.
        unsafe { statestore_event_free(std::ptr::null_mut()) };
    }
}
