//! The library's log records (`tracing` events) forwarded to the host's logger: Python
//! `logging`, a JavaScript callback, a C function pointer.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use tracing::field::{Field, Visit};
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::{Error, Result};

/// Severity of a [`LogRecord`]; a sink receives its level and the more severe ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum LogLevel {
    /// Failures.
    Error = 1,
    /// Trouble the library works around (a reconnect, a refused renewal).
    Warn = 2,
    /// Notable events.
    Info = 3,
    /// Detail for debugging.
    Debug = 4,
    /// Everything.
    Trace = 5,
}

impl LogLevel {
    fn of(level: &Level) -> LogLevel {
        match *level {
            Level::ERROR => LogLevel::Error,
            Level::WARN => LogLevel::Warn,
            Level::INFO => LogLevel::Info,
            Level::DEBUG => LogLevel::Debug,
            Level::TRACE => LogLevel::Trace,
        }
    }

    /// Every level, the most severe first.
    pub const ALL: [LogLevel; 5] = [
        Self::Error,
        Self::Warn,
        Self::Info,
        Self::Debug,
        Self::Trace,
    ];

    /// The level with this number (1 = error ... 5 = trace).
    pub fn from_i32(value: i32) -> Option<LogLevel> {
        Self::ALL.into_iter().find(|level| *level as i32 == value)
    }

    /// The level a host named `name` ([`LogLevel::name`]) for its argument `argument`; any
    /// other name is an invalid argument that lists the levels.
    ///
    /// ```
    /// use statestore::bindings::logs::LogLevel;
    /// assert_eq!(LogLevel::from_name("warn", "level").unwrap(), LogLevel::Warn);
    /// let error = LogLevel::from_name("loud", "options.level").unwrap_err().to_string();
    /// assert!(error.contains("options.level: \"loud\" is not a log level; use one of 'error'"), "{error}");
    /// ```
    pub fn from_name(name: &str, argument: &str) -> Result<LogLevel> {
        Self::ALL
            .into_iter()
            .find(|level| level.name() == name)
            .ok_or_else(|| {
                let names: Vec<String> = Self::ALL
                    .iter()
                    .map(|l| format!("'{}'", l.name()))
                    .collect();
                Error::InvalidArgument(format!(
                    "{argument}: {name:?} is not a log level; use one of {}",
                    names.join(", ")
                ))
            })
    }

    /// Lower-case name, as hosts' loggers spell it: `"error"` ... `"trace"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// One log record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogRecord<'a> {
    /// Severity.
    pub level: LogLevel,
    /// The module that logged it, e.g. `statestore::client::event_loop`.
    pub target: &'a str,
    /// The message, followed by the record's fields as `name=value`.
    pub message: String,
    /// The message alone, without the fields.
    pub text: String,
    /// The record's fields, in order: name and value (as `Debug` formats it, strings bare).
    pub fields: Vec<(&'static str, String)>,
}

type Sink = Box<dyn Fn(&LogRecord<'_>) + Send + Sync>;

/// Swapped, not locked: a lock held by a logging thread when another thread forks would stay
/// held forever in the child, and its first log record or `set_log_sink` would hang.
static SINK: ArcSwapOption<Sink> = ArcSwapOption::const_empty();
/// The most verbose level forwarded; 0 while no sink is set.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(0);
/// Whether our subscriber is the global one (`Some(true)`), or another was there first.
static INSTALLED: Mutex<Option<bool>> = Mutex::new(None);

/// Forwards the library's log records at `level` and more severe to `sink`, which runs on the
/// thread that logs (keep it short; it must not call back into the library's blocking API).
/// Calling it again replaces the sink and level.
///
/// Fails with [`Error::Runtime`] if the application already installed a global `tracing`
/// subscriber (then the records go there).
pub fn set_log_sink(
    level: LogLevel,
    sink: impl Fn(&LogRecord<'_>) + Send + Sync + 'static,
) -> Result<()> {
    install()?;
    SINK.store(Some(Arc::new(Box::new(sink))));
    MAX_LEVEL.store(level as u8, Ordering::SeqCst);
    tracing::callsite::rebuild_interest_cache();
    Ok(())
}

/// Stops forwarding log records.
pub fn clear_log_sink() {
    MAX_LEVEL.store(0, Ordering::SeqCst);
    SINK.store(None);
    tracing::callsite::rebuild_interest_cache();
}

fn install() -> Result<()> {
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    let ours = *installed.get_or_insert_with(|| {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Forward))
            .is_ok()
    });
    if ours {
        Ok(())
    } else {
        Err(Error::Runtime(
            "the application already installed a global tracing subscriber: the library's \
             logs go there"
                .into(),
        ))
    }
}

struct Forward;

impl Forward {
    fn wanted(metadata: &Metadata<'_>) -> bool {
        LogLevel::of(metadata.level()) as u8 <= MAX_LEVEL.load(Ordering::Relaxed)
    }
}

impl<S: Subscriber> Layer<S> for Forward {
    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        Self::wanted(metadata)
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        if !Self::wanted(metadata) {
            return;
        }
        let Some(sink) = SINK.load_full() else {
            return;
        };
        let mut text = Text::default();
        event.record(&mut text);
        let mut message = text.message.clone();
        for (name, value) in &text.fields {
            if !message.is_empty() {
                message.push(' ');
            }
            let _ = write!(message, "{name}={value}");
        }
        sink(&LogRecord {
            level: LogLevel::of(metadata.level()),
            target: metadata.target(),
            message,
            text: text.message,
            fields: text.fields,
        });
    }
}

#[derive(Default)]
struct Text {
    message: String,
    fields: Vec<(&'static str, String)>,
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.fields.push((field.name(), format!("{value:?}")));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_reach_the_sink_at_its_level() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        set_log_sink(LogLevel::Info, move |record| {
            into.lock().unwrap().push((
                record.level,
                record.message.clone(),
                record.text.clone(),
                record.fields.clone(),
            ))
        })
        .unwrap();
        tracing::info!(key = "k", attempt = 2, "hello");
        tracing::debug!("too verbose");
        clear_log_sink();
        tracing::error!("after clear");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![(
                LogLevel::Info,
                "hello key=k attempt=2".to_string(),
                "hello".to_string(),
                vec![("key", "k".to_string()), ("attempt", "2".to_string())]
            )]
        );
    }
}
