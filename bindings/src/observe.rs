//! Notifications: observations (key changes, leadership changes, lease loss) consumed either
//! by pulling events with a timeout or through a callback per event.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use statestore_core::bindings::{Event, EventStream};
use statestore_core::{Client, Error, Observation, Result};

use crate::client::{key_op, run_callback, statestore_client, statestore_done_cb, Owned};
use crate::reply::{Call, Reply};
use crate::status::{c_string, entry, statestore_status};
use crate::util::{self, c_ptr, null, Handles, UserData};

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
}

type Keep = (
    Bytes,
    Option<Bytes>,
    Option<CString>,
    Option<Bytes>,
    Option<CString>,
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
    let loss_message = event.loss.as_ref().map(|l| c_string(l.to_string()));
    let loss_reason = event.loss.as_ref().map_or(0, |l| l.reason as i32);
    let (has_value, value, value_len) = parts(&event.value);
    let (has_holder, holder, holder_len) = parts(&event.holder);
    let key = event.key;
    Owned {
        view: statestore_event {
            kind: event.kind as i32,
            key: key.as_ptr(),
            key_len: key.len(),
            has_value,
            value,
            value_len,
            version: c_ptr(&version),
            has_holder,
            holder,
            holder_len,
            loss_reason,
            loss_message: c_ptr(&loss_message),
        },
        keep: (key, event.value, version, event.holder, loss_message),
    }
}

/// Frees an event returned by `statestore_observation_next()`. NULL does nothing.
///
/// # Safety
/// `event` must be NULL or an event from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn statestore_event_free(event: *mut statestore_event) {
    unsafe { OwnedEvent::free(event) }
}

unsafe fn observe_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
) -> Result<Call<Observation, *mut statestore_observation>> {
    let observe = |client: Client, key| async move { client.observe(key).await };
    let convert = |observed| new_observation(EventStream::from_observation(observed));
    unsafe { key_op(client, key, key_len, "key", observe, convert) }
}

unsafe fn unobserve_op(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
) -> Result<Call<(), ()>> {
    let unobserve = |client: Client, key| async move { client.unobserve(key).await };
    unsafe { key_op(client, key, key_len, "key", unobserve, |()| ()) }
}

/// Starts observing `key` (KEYNOTIFY) and waits for the service to confirm. Free
/// `*observation` with `statestore_observation_free()`.
///
/// # Safety
/// `key` valid for `key_len` bytes, `observation` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn statestore_observe(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    observation: *mut *mut statestore_observation,
) -> statestore_status {
    unsafe { Reply::required(observation, "observation") }
        .run(|| unsafe { observe_op(client, key, key_len) })
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
/// As `statestore_observe()`.
#[no_mangle]
pub unsafe extern "C" fn statestore_observe_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    callback: statestore_observe_cb,
    user_data: *mut c_void,
) -> statestore_status {
    Reply::callback(callback, user_data).run(|| unsafe { observe_op(client, key, key_len) })
}

/// Stops every observation of `key` on this client (KEYNOTIFY STOP) and waits for the
/// service: their pull waiters get `STATESTORE_ERR_CLOSED` and their callbacks their final
/// call. The observation handles must still be freed.
///
/// # Safety
/// `key` valid for `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn statestore_unobserve(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
) -> statestore_status {
    Reply::status_only().run(|| unsafe { unobserve_op(client, key, key_len) })
}

/// `statestore_unobserve()` without blocking.
///
/// # Safety
/// As `statestore_unobserve()`.
#[no_mangle]
pub unsafe extern "C" fn statestore_unobserve_async(
    client: *const statestore_client,
    key: *const u8,
    key_len: usize,
    callback: statestore_done_cb,
    user_data: *mut c_void,
) -> statestore_status {
    Reply::status(callback, user_data).run(|| unsafe { unobserve_op(client, key, key_len) })
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
/// `event` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_next(
    observation: *const statestore_observation,
    timeout_ms: i64,
    event: *mut *mut statestore_event,
) -> statestore_status {
    entry(|| {
        unsafe { util::out_ptr(event, "event") }?;
        let stream = OBSERVATIONS.get(observation, "observation")?;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        match stream.next_timeout(timeout)? {
            Some(next) => {
                unsafe { event.write(owned_event(next).into_raw()) };
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

/// Calls the C callback with NULL when the stream drops its sink: the end, exactly once.
struct Sink {
    callback: unsafe extern "C" fn(*mut c_void, *const statestore_event),
    user: UserData,
}

impl Drop for Sink {
    fn drop(&mut self) {
        let (callback, user) = (self.callback, self.user);
        run_callback(|| unsafe { callback(user.get(), std::ptr::null()) });
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
/// `callback` must be safe to call from another thread with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_set_callback(
    observation: *const statestore_observation,
    callback: statestore_event_cb,
    user_data: *mut c_void,
) -> statestore_status {
    entry(|| {
        let callback = callback.ok_or_else(|| null("callback"))?;
        let stream = OBSERVATIONS.get(observation, "observation")?;
        let sink = Sink {
            callback,
            user: UserData(user_data),
        };
        set_sink(&stream, sink)
    })
}

fn set_sink(stream: &EventStream, sink: Sink) -> Result<()> {
    stream.set_sink(move |event| {
        let sink = &sink;
        let owned = owned_event(event);
        run_callback(|| unsafe { (sink.callback)(sink.user.get(), &owned.view) });
    });
    Ok(())
}

/// The observed key, borrowed until the observation is freed.
///
/// # Safety
/// `key` and `key_len` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_key(
    observation: *const statestore_observation,
    key: *mut *const u8,
    key_len: *mut usize,
) -> statestore_status {
    entry(|| {
        let stream = OBSERVATIONS.get(observation, "observation")?;
        if key.is_null() {
            return Err(null("key"));
        }
        // The stream lives as long as the handle, so its key does too.
        let bytes: &Bytes = stream.key();
        let pointer = bytes.as_ptr();
        unsafe { util::put(key_len, "key_len", bytes.len()) }?;
        unsafe { key.write(pointer) };
        Ok(())
    })
}

/// Ends the observation: waiters get `STATESTORE_ERR_CLOSED`, the callback its final NULL
/// call; the service is told to stop notifying once no observation of the key remains.
/// The handle stays valid until `statestore_observation_free()`.
///
/// # Safety
/// No pointer is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_close(
    observation: *const statestore_observation,
) -> statestore_status {
    entry(|| {
        OBSERVATIONS.get(observation, "observation")?.close();
        Ok(())
    })
}

/// Ends the observation (see `statestore_observation_close()`) and frees the handle. NULL
/// does nothing.
///
/// # Safety
/// No pointer is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn statestore_observation_free(
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

    /// Makes the event's C form, reads every part of it as C does, and frees it.
    fn round_trip(event: Event) -> (i32, Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>, i32, bool) {
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
