//! The statestore Node addon: translates JavaScript calls to core's client (`statestore`) and
//! back, bytes and strings included. Behaviour, and the checks of values, live in core; the
//! JavaScript types of the arguments are checked here (`args`); the package's `lib/` makes
//! each operation a Promise method and its `…Sync` twin, and adds the iterators and events.
#![deny(clippy::all)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::multiple_unsafe_ops_per_block)]

mod args;
mod bridge;
mod client;
mod events;
mod keys;
mod lease;
mod logs;
mod registry;

use statestore::bindings;

pub use logs::set_log_handler;

/// mimalloc for every Rust allocation of the addon (V8's heap keeps its own): the client
/// allocates per request and per answer (docs/architecture.md#allocators).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use napi::bindgen_prelude::{Object, Unknown};
use napi::Env;
use napi_derive::napi;

/// Runs once per environment (main thread and every worker): closes what the environment
/// opened when it is torn down.
#[napi(module_exports)]
pub fn init(mut _exports: Object, env: Env) -> napi::Result<()> {
    let env_id = env.raw() as usize;
    env.add_env_cleanup_hook(env_id, |env_id| {
        bridge::settle::teardown(env_id);
        logs::teardown(env_id);
        registry::teardown(env_id);
    })?;
    Ok(())
}

/// The longest `process.exit()` waits for this environment's clients to close.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Closes every client this environment opened and waits (at most a second) until each has
/// closed: the package calls it from `process.on('exit')`, after which no thread of the
/// library runs, so that a client left open still ends its session as `close()` does.
#[napi(catch_unwind)]
pub fn close_at_exit(env: Env) {
    registry::close_at_exit(env.raw() as usize, EXIT_GRACE);
}

/// One entry of core's error table.
#[napi(object)]
pub struct ErrorCodeInfo {
    /// Upper snake case, e.g. `TIMEOUT` (JavaScript `code`: `'STATESTORE_' + name`).
    pub name: String,
    /// The numeric core code (`errno`/`coreCode` of errors).
    pub code: i32,
    /// `ARGUMENT`, `TIMEOUT`, `CONNECTION`, `SERVICE`, `LEASE`, `CLOSED`, `RUNTIME`, `INTERNAL`.
    pub category: String,
    pub description: String,
}

/// Core's error table, so the package's error constants come from one place.
#[napi(catch_unwind)]
pub fn error_codes() -> Vec<ErrorCodeInfo> {
    statestore::ErrorCode::ALL
        .iter()
        .map(|code| ErrorCodeInfo {
            name: code.name().to_string(),
            code: *code as i32,
            category: code.category().name().to_string(),
            description: code.description().to_string(),
        })
        .collect()
}

/// Core's SET conditions, each a list of the names it accepts, its canonical name first
/// (`SetCondition::NAMES`), so the package's names come from one table.
#[napi(catch_unwind)]
pub fn set_conditions() -> Vec<Vec<String>> {
    statestore::SetCondition::NAMES
        .iter()
        .map(|(_, names)| names.iter().map(|n| n.to_string()).collect())
        .collect()
}

/// One word list of core's vocabulary, in JavaScript's spelling.
#[napi(object)]
pub struct VocabularyList {
    /// `condition`, `event_kind`, `delete_outcome`, `loss_reason`, `lease_state`, `option_kind`.
    pub name: String,
    pub words: Vec<String>,
}

/// Core's vocabulary (`bindings::vocabulary`): the package's word lists and the `.d.ts` unions
/// are checked against it.
#[napi(catch_unwind)]
pub fn vocabulary() -> Vec<VocabularyList> {
    bindings::vocabulary(bindings::Case::Camel)
        .into_iter()
        .map(|(name, words)| VocabularyList {
            name: name.to_string(),
            words: words.into_iter().map(str::to_string).collect(),
        })
        .collect()
}

/// How two versions (or fencing tokens) `a` and `b` order, by core
/// (`bindings::compare_versions`): -1, 0 or 1.
#[napi(catch_unwind)]
pub fn compare_versions(env: Env, a: Unknown, b: Unknown) -> napi::Result<i32> {
    let a = args::arg(&env, &a, "a").version()?;
    let b = args::arg(&env, &b, "b").version()?;
    bindings::compare_versions(&a, &b)
        .map(|order| order as i32)
        .map_err(|e| bridge::throw(&env, &e))
}

/// One connection setting of core (`CONNECT_OPTIONS`).
#[napi(object)]
pub struct ConnectOptionInfo {
    pub name: String,
    pub js_name: String,
    /// `str`, `path`, `port`, `bool`, `duration` or `int`.
    pub kind: String,
    pub env: Option<String>,
    pub default: String,
    pub doc: String,
}

/// Core's connection settings (`CONNECT_OPTIONS` of the package).
#[napi(catch_unwind)]
pub fn connect_options() -> Vec<ConnectOptionInfo> {
    use statestore::bindings::CONNECT_OPTIONS;
    CONNECT_OPTIONS
        .iter()
        .map(|spec| ConnectOptionInfo {
            name: spec.name.to_string(),
            js_name: spec.js_name.to_string(),
            kind: spec.kind.name().to_string(),
            env: spec.env.map(str::to_string),
            default: spec.default.to_string(),
            doc: spec.doc.to_string(),
        })
        .collect()
}

/// The library's version (the workspace's, the same in every language).
#[napi(catch_unwind)]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
