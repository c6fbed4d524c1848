//! `NativeEvents`: one stream of events (key notifications, leader changes, a lease loss),
//! pulled with `next()`/`nextSync()` or pushed to a callback with `setSink()`.

use std::sync::{Arc, Mutex, Weak};

use napi::bindgen_prelude::{Function, Object};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Env;
use napi_derive::napi;

use statestore::bindings::{Event, EventStream};

use crate::args::{self, Named};
use crate::bridge::{self, buffer, nullable, version, JsBuffer, Nullable, Out};
use crate::registry;
use napi::bindgen_prelude::Unknown;

/// Why a lease or lock was lost.
#[napi(object, object_from_js = false)]
pub struct JsLoss {
    /// `'expired'`, `'takenOver'` or `'clientClosed'`.
    pub reason: String,
    pub holder: Option<JsBuffer>,
    pub message: String,
}

/// One event, flat: which fields are set depends on `kind`.
#[napi(object, object_from_js = false)]
pub struct JsEvent {
    /// `'set'`, `'delete'`, `'resynced'`, `'elected'`, `'vacant'`, `'lost'` or `'connection'`.
    pub kind: String,
    pub key: JsBuffer,
    pub value: Nullable<JsBuffer>,
    pub version: Nullable<String>,
    pub holder: Option<JsBuffer>,
    pub loss: Option<JsLoss>,
    /// `'connection'`: the new state (`'connecting'`, `'connected'`, `'reconnecting'`,
    /// `'gave_up'`, `'closed'`).
    pub state: Option<String>,
    /// `'connection'`: why it dropped, an attempt failed or reconnecting gave up, or `null`.
    pub reason: Option<Nullable<String>>,
    /// `'connection'`: the next attempt's number (`'reconnecting'`), the attempts made
    /// (`'gave_up'`), else 0.
    pub attempt: Option<u32>,
    /// `'connection'`: milliseconds before the next attempt (`'reconnecting'`), else `null`.
    pub delay: Option<Nullable<f64>>,
    /// `'connection'`: a reconnect found the broker's session gone.
    pub session_lost: Option<bool>,
}

pub(crate) fn js_loss(loss: &statestore::lease::Loss) -> JsLoss {
    JsLoss {
        reason: loss.reason.names().1.to_string(),
        holder: loss.holder.as_ref().map(buffer),
        message: loss.to_string(),
    }
}

fn js_event(event: Event, out: Out) -> JsEvent {
    let connection = event.connection.as_ref();
    JsEvent {
        state: connection.map(|c| c.state.name().to_string()),
        reason: connection.map(|c| nullable(c.reason.clone())),
        attempt: connection.map(|c| c.attempt),
        delay: connection.map(|c| nullable(c.delay.map(|d| d.as_secs_f64() * 1000.0))),
        session_lost: connection.map(|c| c.session_lost),
        kind: event.kind.name().to_string(),
        key: out.bytes(&event.key),
        value: nullable(event.value.as_ref().map(|value| out.bytes(value))),
        version: nullable(version(event.version)),
        holder: event.holder.as_ref().map(|holder| out.bytes(holder)),
        loss: event.loss.as_ref().map(js_loss),
    }
}

/// The callback of push mode. Referenced, like a socket with a listener: a program that only
/// waits for notifications stays alive while its observation is open. Held in a slot that the
/// stream's end (`close()`, unobserve, client closed) and the environment's teardown empty, so
/// the process can exit after that and no runtime thread calls into a torn-down environment.
type Sink = ThreadsafeFunction<Event, (), JsEvent, napi::Status, false>;
type SinkSlot = Arc<Mutex<Option<Sink>>>;

fn empty(slot: &Mutex<Option<Sink>>) {
    slot.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// A stream as its environment's registry holds it.
struct Opened {
    stream: Weak<EventStream>,
    sink: Weak<Mutex<Option<Sink>>>,
}

impl registry::Opened for Opened {
    fn is_done(&self) -> bool {
        self.stream
            .upgrade()
            .is_none_or(|stream| stream.is_closed())
    }

    fn close(&self) -> Option<tokio::task::JoinHandle<()>> {
        if let Some(sink) = self.sink.upgrade() {
            empty(&sink);
        }
        if let Some(stream) = self.stream.upgrade() {
            stream.close();
        }
        None
    }
}

#[napi]
pub struct NativeEvents {
    // Shared with the environment's registry (weakly): dropping the last strong reference
    // closes the stream and stops the observation behind it.
    stream: Arc<EventStream>,
    sink: SinkSlot,
    out: Out,
}

impl NativeEvents {
    pub(crate) fn new(env: &Env, stream: EventStream, out: Out) -> NativeEvents {
        let sink: SinkSlot = Arc::default();
        let stream = Arc::new(stream);
        let opened = Opened {
            stream: Arc::downgrade(&stream),
            sink: Arc::downgrade(&sink),
        };
        registry::add(env, Box::new(opened));
        NativeEvents { stream, sink, out }
    }

    pub(crate) fn from_observation(
        env: &Env,
        observation: statestore::Observation,
        out: Out,
    ) -> NativeEvents {
        Self::new(env, EventStream::from_observation(observation), out)
    }
}

#[napi]
impl NativeEvents {
    /// The next event, or `null` when the stream has ended.
    #[napi(catch_unwind)]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let out = self.out;
        bridge::promise(env, self.stream.next_pending(), move |_, event| {
            Ok(event.map(|event| js_event(event, out)))
        })
    }

    /// The next event, waiting at most `options.timeout` ms (forever without one): `null` when the
    /// wait timed out; throws `STATESTORE_CLOSED` when the stream has ended.
    #[napi(catch_unwind)]
    pub fn next_sync(&self, env: &Env, options: Unknown) -> napi::Result<Option<JsEvent>> {
        let options = args::options(env, &options, "options", &["timeout"], false)?;
        let timeout = options.read("timeout", Named::duration)?;
        let event = self
            .stream
            .next_checked(timeout, bridge::STOP_CHECK, &mut || bridge::alive(env));
        let event = bridge::sync(env, event)?;
        Ok(event.map(|event| js_event(event, self.out)))
    }

    /// Push mode: every event goes to `callback` on the JavaScript thread.
    #[napi(catch_unwind)]
    pub fn set_sink(&self, callback: Function<JsEvent, ()>) -> napi::Result<()> {
        let out = self.out;
        let tsfn: Sink = callback
            .build_threadsafe_function::<Event>()
            .callee_handled::<false>()
            .build_callback(move |ctx| Ok(js_event(ctx.value, out)))?;
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(tsfn);
        let slot = Arc::downgrade(&self.sink);
        self.stream.set_sink(move |event| {
            if let Some(slot) = slot.upgrade() {
                if let Some(sink) = slot.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                    sink.call(event, ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        });
        // Runs after every event was pushed: the last ones are queued on the JavaScript thread
        // before the reference that keeps the process alive goes.
        let slot = Arc::downgrade(&self.sink);
        self.stream.on_end(move || {
            if let Some(slot) = slot.upgrade() {
                empty(&slot);
            }
        });
        Ok(())
    }

    /// Ends the stream (pending `next()` calls resolve with `null`) and drops the callback.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.stream.close();
        empty(&self.sink);
    }

    #[napi(getter, catch_unwind)]
    pub fn is_closed(&self) -> bool {
        self.stream.is_closed()
    }

    #[napi(getter, catch_unwind)]
    pub fn key(&self) -> JsBuffer {
        self.out.bytes(self.stream.key())
    }
}
