//! What each JavaScript environment (the main thread, every worker) has opened, so that its
//! teardown closes it: every callback is dropped and every client closed before the
//! environment goes away (runtime threads must never call into a torn-down environment; Node 20
//! has a thread-safe-function use-after-free at exit otherwise).
//!
//! Entries hold weak references: an object the program dropped is collected as usual (and a
//! dropped client or stream closes itself in core).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use napi::Env;
use tokio::task::JoinHandle;

/// Something an environment opened (a client, an event stream and its callback).
pub trait Opened: Send {
    /// Whether it is gone or closed already, so that its entry can go.
    fn is_done(&self) -> bool;
    /// The environment is going away: start closing it without waiting (on the environment's
    /// thread); what ends once it is closed, when there is something to wait for.
    fn close(&self) -> Option<JoinHandle<()>>;
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
/// Returns what ends once each is closed.
pub fn teardown(env_id: usize) -> Vec<JoinHandle<()>> {
    let opened = OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|map| map.remove(&env_id));
    opened
        .into_iter()
        .flatten()
        .rev()
        .filter_map(|entry| entry.close())
        .collect()
}

/// The process is exiting (`process.exit()`, or the end of the program): closes what the
/// environment opened, as [`teardown`], and waits until it is closed, at most `bound`. After
/// `process.exit()` no thread of the library gets to run, so a client not waited for here
/// leaves its session on the broker without DISCONNECT, subscriptions included.
pub fn close_at_exit(env_id: usize, bound: Duration) {
    let closing = teardown(env_id);
    if closing.is_empty() {
        return;
    }
    // The timer is made inside: it needs the runtime `block_on` enters.
    let _ = statestore::runtime::block_on(async move {
        let all = async {
            for close in closing {
                let _ = close.await;
            }
        };
        tokio::time::timeout(bound, all).await
    });
}
