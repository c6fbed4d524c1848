//! The JSON-lines log every writer appends to, whatever its language (the format is in
//! `tests/chaos/README.md`), and the clock all of them share.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// Milliseconds since the Unix epoch: every process of the run reads the same clock, so
/// intervals logged by different writers can be compared.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A log shared by the threads of one writer; each record is one line, flushed at once so a
/// writer that is killed leaves every completed record behind.
#[derive(Clone)]
pub struct Log {
    file: Arc<Mutex<BufWriter<File>>>,
}

impl Log {
    /// Creates (truncates) the log at `path`.
    pub fn create(path: &Path) -> std::io::Result<Log> {
        Ok(Log {
            file: Arc::new(Mutex::new(BufWriter::new(File::create(path)?))),
        })
    }

    /// Appends one record.
    pub fn write(&self, record: Value) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // A full disk would make the run's verdict meaningless anyway: the checker reports the
        // missing records.
        let _ = serde_json::to_writer(&mut *file, &record);
        let _ = file.write_all(b"\n");
        let _ = file.flush();
    }

    /// Appends an `op` record: one call, its bounds and how it ended.
    pub fn op(&self, call: &OpRecord, result: Outcome) {
        let mut record = json!({
            "t": "op",
            "op": call.op,
            "key": call.key,
            "start": call.start,
            "end": now_ms(),
            "timeout_ms": call.timeout_ms,
            "ok": result.error.is_none(),
            "code": result.error.as_ref().map(|e| e.code).unwrap_or("OK"),
            "unknown": result.error.as_ref().is_some_and(|e| e.unknown),
        });
        // A read records what it found, `null` for an absent key; a write what it wrote.
        if call.read || call.value.is_some() {
            record["value"] = json!(call.value);
        }
        if let Some(applied) = result.applied {
            record["applied"] = json!(applied);
        }
        if let Some(error) = &result.error {
            record["message"] = json!(error.message);
        }
        self.write(record);
    }
}

/// One operation in progress: what its `op` record says once it ends.
pub struct OpRecord {
    op: &'static str,
    key: String,
    value: Option<String>,
    read: bool,
    start: u64,
    timeout_ms: u64,
}

impl OpRecord {
    /// Starts timing `op` on `key`, bounded by `timeout_ms`.
    pub fn start(op: &'static str, key: &str, value: Option<&str>, timeout_ms: u64) -> OpRecord {
        OpRecord {
            op,
            key: key.to_string(),
            value: value.map(str::to_string),
            read: false,
            start: now_ms(),
            timeout_ms,
        }
    }

    /// Records the value a read returned (`None`: absent).
    pub fn set_value(&mut self, value: Option<String>) {
        self.value = value;
        self.read = true;
    }
}

/// How a call ended, for its `op` record.
#[derive(Default)]
pub struct Outcome {
    /// For SET: whether the service applied it.
    pub applied: Option<bool>,
    /// `None`: success.
    pub error: Option<ErrorRecord>,
}

/// An error as the log shows it: the code's name, whether the outcome is unknown, the text.
pub struct ErrorRecord {
    pub code: &'static str,
    pub unknown: bool,
    pub message: String,
}

impl From<&statestore::Error> for ErrorRecord {
    fn from(error: &statestore::Error) -> Self {
        ErrorRecord {
            code: error.code().name(),
            unknown: error.outcome_unknown(),
            message: error.to_string(),
        }
    }
}

impl Outcome {
    /// Success.
    pub fn ok() -> Outcome {
        Outcome::default()
    }

    /// A SET's success.
    pub fn applied(applied: bool) -> Outcome {
        Outcome {
            applied: Some(applied),
            error: None,
        }
    }

    /// A failure.
    pub fn failed(error: &statestore::Error) -> Outcome {
        Outcome {
            applied: None,
            error: Some(error.into()),
        }
    }
}
