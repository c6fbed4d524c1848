//! Core's log records into Python's `logging`, without the GIL on the library's threads.
//!
//! Core calls the sink on whatever thread logs, usually a tokio worker that may hold core's
//! locks. Taking the GIL there could deadlock (a Python thread holding the GIL while it waits
//! for one of those locks) and would stall every connection behind a busy interpreter. So the
//! sink only pushes the record onto a bounded queue ([`LogQueue`]); a Python thread
//! (`statestore._logging`) takes records off it with the GIL released and hands them to
//! `logging` on its own time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;

use crate::api::logs::{clear_log_sink, set_log_sink, LogLevel};
use crate::errors::to_py;

/// How many records wait for the Python thread at most; past it new records are dropped and
/// counted (a stalled handler must not grow the process without limit).
const CAPACITY: usize = 4096;

/// `(core level 1..5, target, message, seconds since the epoch, thread name, fields)`.
type Record = (
    i32,
    String,
    String,
    f64,
    Option<String>,
    Vec<(String, String)>,
);

#[derive(Default)]
struct Queued {
    records: VecDeque<Record>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queued: Mutex<Queued>,
    ready: Condvar,
    dropped: AtomicU64,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, record: Record) {
        let mut queued = self.lock();
        if queued.closed {
            return;
        }
        if queued.records.len() >= CAPACITY {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let first = queued.records.is_empty();
        queued.records.push_back(record);
        drop(queued);
        if first {
            self.ready.notify_one();
        }
    }
}

/// The records forwarded from core, waiting for the Python thread that logs them.
#[pyclass(frozen, module = "statestore._native")]
pub struct LogQueue {
    shared: Arc<Shared>,
}

#[pymethods]
impl LogQueue {
    #[new]
    fn new() -> LogQueue {
        LogQueue {
            shared: Arc::default(),
        }
    }

    /// Forwards core's records at `level` (1 = error ... 5 = trace) and more severe to this
    /// queue, replacing any earlier sink.
    fn forward(&self, py: Python<'_>, level: i32) -> PyResult<()> {
        let level = LogLevel::from_i32(level).ok_or_else(|| {
            crate::convert::invalid(
                py,
                format!("log level {level} is not 1 (error) .. 5 (trace)"),
            )
        })?;
        let shared = self.shared.clone();
        set_log_sink(level, move |record| {
            let at = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            let thread = std::thread::current().name().map(str::to_owned);
            shared.push((
                record.level as i32,
                record.target.to_owned(),
                record.message.clone(),
                at,
                thread,
                record
                    .fields
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), value.clone()))
                    .collect(),
            ));
        })
        .map_err(|e| to_py(py, &e))
    }

    /// Waits (GIL released) for records and returns `(records, dropped)`: the queued records
    /// and how many were dropped since the last batch. `None` once the queue is closed and
    /// empty; after `close()` it never waits.
    fn next_batch(&self, py: Python<'_>) -> Option<(Vec<Record>, u64)> {
        let take = |queued: &mut Queued| {
            let records: Vec<Record> = queued.records.drain(..).collect();
            let dropped = self.shared.dropped.swap(0, Ordering::Relaxed);
            if records.is_empty() && dropped == 0 {
                None
            } else {
                Some((records, dropped))
            }
        };
        {
            // Closed: never release the GIL again, so that a daemon thread never sits in Rust
            // frames while the interpreter finalizes (it would be ended inside them).
            let mut queued = self.shared.lock();
            if let Some(batch) = take(&mut queued) {
                return Some(batch);
            }
            if queued.closed {
                return None;
            }
        }
        py.detach(|| {
            let mut queued = self.shared.lock();
            loop {
                if let Some(batch) = take(&mut queued) {
                    return Some(batch);
                }
                if queued.closed {
                    return None;
                }
                queued = self
                    .shared
                    .ready
                    .wait(queued)
                    .unwrap_or_else(|e| e.into_inner());
            }
        })
    }

    /// Stops accepting records and wakes `next_batch` (records already queued still come out).
    fn close(&self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

/// Stops forwarding core's records (the sink's queue gets nothing more).
#[pyfunction]
pub fn stop_logs() {
    clear_log_sink();
}

/// Registers this file's classes in `_native` (a new class is added here, next to its
/// definition).
pub(crate) fn register(classes: &mut crate::Classes<'_, '_>) -> pyo3::PyResult<()> {
    classes.internal::<LogQueue>()?;
    Ok(())
}
