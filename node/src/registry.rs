//! What each JavaScript environment (the main thread, every worker) has opened, so that its
//! teardown closes it: every callback is dropped and every client closed before the
//! environment goes away (runtime threads must never call into a torn-down environment; Node 20
//! has a thread-safe-function use-after-free at exit otherwise).
//!
//! Weak references: an object the program dropped is collected as usual (and a dropped client
//! or stream closes itself in core).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use napi::Env;
use statestore::bindings::EventStream;
use statestore::Client;

use crate::events::SinkSlot;

/// The weak side of an [`SinkSlot`].
type WeakSink = Weak<Mutex<Option<crate::events::SinkHandle>>>;

#[derive(Default)]
struct Opened {
    clients: Vec<Weak<Client>>,
    streams: Vec<(Weak<EventStream>, WeakSink)>,
}

static OPENED: Mutex<Option<HashMap<usize, Opened>>> = Mutex::new(None);

fn with<R>(env: &Env, f: impl FnOnce(&mut Opened) -> R) -> R {
    let mut map = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    let opened = map
        .get_or_insert_with(HashMap::new)
        .entry(env.raw() as usize)
        .or_default();
    f(opened)
}

/// Remembers a client of this environment. Entries of closed or dropped clients are pruned as
/// new ones come, so the list stays as long as the number of open clients.
pub fn add_client(env: &Env, client: &Arc<Client>) {
    with(env, |opened| {
        opened
            .clients
            .retain(|c| c.upgrade().is_some_and(|c| !c.is_closed()));
        opened.clients.push(Arc::downgrade(client));
    });
}

/// Remembers an event stream and its callback slot.
pub fn add_stream(env: &Env, stream: &Arc<EventStream>, sink: &SinkSlot) {
    with(env, |opened| {
        opened
            .streams
            .retain(|(s, _)| s.upgrade().is_some_and(|s| !s.is_closed()));
        opened
            .streams
            .push((Arc::downgrade(stream), Arc::downgrade(sink)));
    });
}

/// The environment is going away: drop every callback, end every stream, close every client
/// (in the background: nothing may wait on the JavaScript thread here).
pub fn teardown(env_id: usize) {
    crate::bridge::settle::teardown(env_id);
    crate::logs::teardown(env_id);
    let opened = OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|map| map.remove(&env_id));
    let Some(opened) = opened else { return };
    for (stream, sink) in opened.streams {
        if let Some(sink) = sink.upgrade() {
            sink.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
        if let Some(stream) = stream.upgrade() {
            stream.close();
        }
    }
    for client in opened.clients.iter().filter_map(Weak::upgrade) {
        let client = Client::clone(&client);
        if let Ok(handle) = statestore::runtime::handle() {
            handle.spawn(async move { client.close().await });
        }
    }
}
