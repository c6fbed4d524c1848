//! The library's log records (core's `statestore::bindings::logs`) delivered to a JavaScript
//! function: `setLogHandler(handler, { level })`.
//!
//! Core has one sink per process; each JavaScript environment (main thread, every worker) may
//! set its own handler, so the sink forwards every record to the handlers whose level lets it
//! through. It runs on whichever thread logs: it only queues the record on each handler's
//! thread-safe function without blocking (a full queue drops the record), and the functions
//! are weak, so a handler never keeps the process alive.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Env;
use napi_derive::napi;
use statestore::bindings::logs::{self, LogLevel, LogRecord};

use crate::args::{self, Named};
use crate::bridge;
use napi::bindgen_prelude::Unknown;

/// One record of the library's log.
#[napi(object, object_from_js = false)]
pub struct JsLogRecord {
    /// `'error'`, `'warn'`, `'info'`, `'debug'` or `'trace'`.
    pub level: String,
    /// The module that logged it, e.g. `statestore::client::event_loop`.
    pub target: String,
    /// The message, followed by the record's fields as `name=value`.
    pub message: String,
    /// The record's fields by name (values as text), for handlers that keep them apart.
    pub fields: HashMap<String, String>,
}

/// Records waiting for one JavaScript thread, at most; more are dropped (a logging thread
/// never waits for JavaScript).
const QUEUE: usize = 1000;

type Handler = ThreadsafeFunction<JsLogRecord, (), JsLogRecord, napi::Status, false, true, QUEUE>;

struct Entry {
    env: usize,
    level: LogLevel,
    handler: Handler,
}

/// The handlers, by environment. Held only to queue records or change the list.
static HANDLERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Serialises changes, so core's sink level always matches the list (taken before HANDLERS,
/// and never held by the sink).
static CHANGING: Mutex<()> = Mutex::new(());

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn forward(record: &LogRecord<'_>) {
    for entry in lock(&HANDLERS).iter() {
        if record.level <= entry.level {
            let record = JsLogRecord {
                level: record.level.name().to_string(),
                target: record.target.to_string(),
                message: record.message.clone(),
                fields: record
                    .fields
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), value.clone()))
                    .collect(),
            };
            entry
                .handler
                .call(record, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// Replaces this environment's entry (`None`: removes it) and sets core's sink to match.
fn change(env: usize, entry: Option<Entry>) -> statestore::Result<()> {
    let _changing = lock(&CHANGING);
    let most_verbose = {
        let mut handlers = lock(&HANDLERS);
        let before = handlers.len();
        handlers.retain(|e| e.env != env);
        if entry.is_none() && handlers.len() == before {
            return Ok(()); // nothing set here: nothing changes
        }
        handlers.extend(entry);
        handlers.iter().map(|e| e.level).max()
    };
    match most_verbose {
        None => {
            logs::clear_log_sink();
            Ok(())
        }
        Some(level) => logs::set_log_sink(level, forward).inspect_err(|_| {
            lock(&HANDLERS).retain(|e| e.env != env);
        }),
    }
}

/// Delivers the library's log records at `options.level` (`'error'` ... `'trace'`; default
/// `'info'`) and more severe on this thread to `handler` (a function, or `null`: stops) through
/// `deliver`, the package's function that passes them on. Replaces this thread's previous
/// handler.
#[napi(catch_unwind)]
pub fn set_log_handler(
    env: &Env,
    handler: Unknown,
    options: Unknown,
    deliver: Function<JsLogRecord, ()>,
) -> napi::Result<()> {
    let id = env.raw() as usize;
    let handler = args::arg(env, &handler, "handler");
    let stop = handler.is_null()?;
    if !stop {
        handler.function_or("of type function or null")?;
    }
    let options = args::options(env, &options, "options", &["level"], false)?;
    let level = options.read("level", Named::string)?;
    let level = level.as_deref().unwrap_or("info");
    let level = bridge::sync(env, LogLevel::from_name(level, "options.level"))?;
    let entry = match stop {
        true => None,
        false => Some(Entry {
            env: id,
            level,
            handler: deliver
                .build_threadsafe_function::<JsLogRecord>()
                .weak::<true>()
                .callee_handled::<false>()
                .max_queue_size::<QUEUE>()
                .build_callback(|ctx| Ok(ctx.value))?,
        }),
    };
    bridge::sync(env, change(id, entry))
}

/// The environment is going away: its handler is dropped (on its own thread, before the
/// environment is torn down).
pub fn teardown(env: usize) {
    let _ = change(env, None);
}
