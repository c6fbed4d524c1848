//! What each JavaScript environment (the main thread, every worker) has opened, so that its
//! teardown closes it: every callback is dropped and every client closed before the
//! environment goes away (runtime threads must never call into a torn-down environment; Node 20
//! has a thread-safe-function use-after-free at exit otherwise).
//!
//! Entries hold weak references: an object the program dropped is collected as usual (and a
//! dropped client or stream closes itself in core).

use std::collections::HashMap;
use std::sync::Mutex;

use napi::Env;

/// Something an environment opened (a client, an event stream and its callback).
pub trait Opened: Send {
    /// Whether it is gone or closed already, so that its entry can go.
    fn is_done(&self) -> bool;
    /// The environment is going away: close it without waiting (on the environment's thread).
    fn close(&self);
}

/// What each environment opened, in order.
type Entries = Vec<Box<dyn Opened>>;

static OPENED: Mutex<Option<HashMap<usize, Entries>>> = Mutex::new(None);

/// Remembers what this environment opened. Entries that are done are pruned as new ones come,
/// so the list stays as long as the number of open things.
pub fn add(env: &Env, opened: Box<dyn Opened>) {
    let mut map = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    let list = map
        .get_or_insert_with(HashMap::new)
        .entry(env.raw() as usize)
        .or_default();
    list.retain(|entry| !entry.is_done());
    list.push(opened);
}

/// The environment is going away: closes what it opened, the latest first, so that a stream's
/// callback is dropped before the client it came from (opened earlier) closes and ends it.
pub fn teardown(env_id: usize) {
    let opened = OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|map| map.remove(&env_id));
    for entry in opened.into_iter().flatten().rev() {
        entry.close();
    }
}
