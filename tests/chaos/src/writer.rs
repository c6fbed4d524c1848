//! The Rust writers (async `Client` and `blocking::Client`): the workload of the writer
//! protocol (`tests/chaos/README.md`), the same in every language.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use statestore::lease::Lock;
use statestore::{Client, ConnectOptions, Error, KeyEvent, ReconnectPolicy, SetOptions, Value};

use crate::record::{now_ms, Log, OpRecord, Outcome};

/// Keys of its own each writer cycles through.
pub const OWN_KEYS: u64 = 8;
/// Lock TTL (the lease renews every third of it).
pub const LOCK_TTL: Duration = Duration::from_secs(3);
/// How long a writer waits for the lock before giving up on one increment.
pub const LOCK_WAIT: Duration = Duration::from_secs(8);
/// Pause between two cycles, so that a dozen writers leave CPU to the faults and servers.
pub const PAUSE: Duration = Duration::from_millis(20);
/// How long a writer waits, after its writing time, for the run to end (stdin closed).
pub const QUIET_WAIT: Duration = Duration::from_secs(90);

/// The command line of every writer, in every language: `HOST PORT LOCK COUNTER PREFIX
/// DURATION_MS TIMEOUT_MS LOG`.
#[derive(Debug, Clone)]
pub struct Params {
    pub host: String,
    pub port: u16,
    pub lock: String,
    pub counter: String,
    pub prefix: String,
    pub duration: Duration,
    pub timeout: Duration,
    pub log: std::path::PathBuf,
}

impl Params {
    /// Parses the eight positional arguments.
    pub fn parse(args: &[String]) -> Result<Params, String> {
        let [host, port, lock, counter, prefix, duration, timeout, log] = args else {
            return Err(format!(
                "expected HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG, got {} arguments",
                args.len()
            ));
        };
        let number = |what: &str, text: &str| -> Result<u64, String> {
            text.parse()
                .map_err(|_| format!("{what} {text:?} is not a number"))
        };
        Ok(Params {
            host: host.clone(),
            port: u16::try_from(number("port", port)?).map_err(|e| e.to_string())?,
            lock: lock.clone(),
            counter: counter.clone(),
            prefix: prefix.clone(),
            duration: Duration::from_millis(number("duration", duration)?),
            timeout: Duration::from_millis(number("timeout", timeout)?),
            log: log.into(),
        })
    }

    fn options(&self) -> ConnectOptions {
        ConnectOptions::new(self.host.clone(), self.port)
            .default_timeout(self.timeout)
            // Outages are a few seconds: reconnect within about a second of the end of one.
            .reconnect(ReconnectPolicy::new(
                Duration::from_millis(100),
                Duration::from_secs(1),
            ))
    }

    fn timeout_ms(&self) -> u64 {
        self.timeout.as_millis() as u64
    }
}

/// What the workload does next: cycle `n` writes own key `n % OWN_KEYS`, reads it back, and
/// every third cycle increments the counter under the lock.
struct Plan {
    seq: u64,
}

impl Plan {
    fn next(&mut self, prefix: &str) -> (String, String, bool) {
        self.seq += 1;
        let key = format!("{prefix}k{}", self.seq % OWN_KEYS);
        let value = format!("{key}#{}", self.seq);
        (key, value, self.seq.is_multiple_of(3))
    }
}

fn text(bytes: &Bytes) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn parse_counter(value: Option<&Bytes>) -> Result<u64, Error> {
    match value {
        None => Ok(0),
        Some(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::UnexpectedPayload(format!("counter value {bytes:?}"))),
    }
}

fn event_record(event: &KeyEvent) -> serde_json::Value {
    let (kind, value) = match event {
        KeyEvent::Set { value, .. } => ("set", Some(text(value))),
        KeyEvent::Delete { .. } => ("delete", None),
        KeyEvent::Resynced { value } => ("resynced", value.as_ref().map(|v| text(&v.value))),
    };
    json!({"t": "event", "kind": kind, "value": value, "ts": now_ms()})
}

fn incr_record(token: &str, old: u64, outcome: &str, code: &str) -> serde_json::Value {
    json!({"t": "incr", "token": token, "old": old, "new": old + 1, "outcome": outcome, "code": code, "ts": now_ms()})
}

fn outcome_of<T>(result: &Result<T, Error>) -> (&'static str, &'static str) {
    match result {
        Ok(_) => ("ok", "OK"),
        Err(error) if error.outcome_unknown() => ("unknown", error.code().name()),
        Err(error) => ("failed", error.code().name()),
    }
}

/// Waits (on a thread of its own) until stdin is closed: the run's signal that every writer
/// has seen what it needed to see.
fn stdin_closed() -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = tx.send(());
    });
    rx
}

/// The calls of the workload, made by the async client or by the blocking one: the
/// workload ([`workload`], [`increment`]) is written once over it.
trait Store {
    type Guard;
    async fn set(&self, key: &str, value: &str, options: SetOptions) -> Result<bool, Error>;
    async fn get(&self, key: &str) -> Result<Option<Value>, Error>;
    async fn lock(&self) -> Result<Self::Guard, Error>;
    fn token(guard: &Self::Guard) -> String;
    fn holder(guard: &Self::Guard) -> String;
    fn is_held(guard: &Self::Guard) -> bool;
    fn fencing(guard: &Self::Guard) -> statestore::Hlc;
    async fn release(&self, guard: Self::Guard) -> Result<(), Error>;
    async fn pause(&self);
}

struct AsyncStore {
    client: Client,
    lock: Lock,
}

impl Store for AsyncStore {
    type Guard = statestore::LockGuard;

    async fn set(&self, key: &str, value: &str, options: SetOptions) -> Result<bool, Error> {
        let result = self
            .client
            .set(key.to_string(), value.to_string(), options)
            .await?;
        Ok(result.applied)
    }

    async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        self.client.get(key.to_string()).await
    }

    async fn lock(&self) -> Result<Self::Guard, Error> {
        self.lock.lock().await
    }

    fn token(guard: &Self::Guard) -> String {
        guard.fencing_token().to_string()
    }

    fn holder(guard: &Self::Guard) -> String {
        text(guard.holder_name())
    }

    fn is_held(guard: &Self::Guard) -> bool {
        guard.is_held()
    }

    fn fencing(guard: &Self::Guard) -> statestore::Hlc {
        guard.fencing_token().clone()
    }

    async fn release(&self, guard: Self::Guard) -> Result<(), Error> {
        guard.release().await
    }

    async fn pause(&self) {
        tokio::time::sleep(PAUSE).await;
    }
}

struct BlockingStore {
    client: statestore::blocking::Client,
    lock: statestore::blocking::Lock,
}

/// Every method returns a future that is ready at once: the blocking call runs when it is
/// first polled.
impl Store for BlockingStore {
    type Guard = statestore::blocking::LockGuard;

    async fn set(&self, key: &str, value: &str, options: SetOptions) -> Result<bool, Error> {
        Ok(self
            .client
            .set(key.to_string(), value.to_string(), options)?
            .applied)
    }

    async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        self.client.get(key.to_string())
    }

    async fn lock(&self) -> Result<Self::Guard, Error> {
        self.lock.lock()
    }

    fn token(guard: &Self::Guard) -> String {
        guard.fencing_token().to_string()
    }

    fn holder(guard: &Self::Guard) -> String {
        text(guard.holder_name())
    }

    fn is_held(guard: &Self::Guard) -> bool {
        guard.is_held()
    }

    fn fencing(guard: &Self::Guard) -> statestore::Hlc {
        guard.fencing_token().clone()
    }

    async fn release(&self, guard: Self::Guard) -> Result<(), Error> {
        guard.release()
    }

    async fn pause(&self) {
        std::thread::sleep(PAUSE);
    }
}

/// Runs a future whose every await completes at once (the blocking store's).
fn run_ready<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        // Not reached with the blocking store; yielding keeps it correct anyway.
        std::thread::yield_now();
    }
}

/// The cycles of the writer protocol until `end`.
async fn workload<S: Store>(log: &Log, store: &S, params: &Params, end: Instant) {
    let mut plan = Plan { seq: 0 };
    while Instant::now() < end {
        let (key, value, increment_now) = plan.next(&params.prefix);
        let call = OpRecord::start("set", &key, Some(&value), params.timeout_ms());
        match store
            .set(&key, &value, SetOptions::default().persist(true))
            .await
        {
            Ok(applied) => log.op(&call, Outcome::applied(applied)),
            Err(error) => log.op(&call, Outcome::failed(&error)),
        }
        let call = OpRecord::start("get", &key, None, params.timeout_ms());
        let read = store.get(&key).await;
        log_read(log, call, &read);
        if increment_now {
            increment(log, store, params).await;
        }
        store.pause().await;
    }
}

/// One fenced increment: lock, read, write with the token (if still held), release.
async fn increment<S: Store>(log: &Log, store: &S, params: &Params) {
    let lock_bound = (LOCK_WAIT + params.timeout).as_millis() as u64;
    let call = OpRecord::start("lock", &params.lock, None, lock_bound);
    let guard = match store.lock().await {
        Ok(guard) => {
            log.op(&call, Outcome::ok());
            guard
        }
        Err(error) => {
            log.op(&call, Outcome::failed(&error));
            return;
        }
    };
    let acquired = now_ms();
    let token = S::token(&guard);
    let call = OpRecord::start("incr_get", &params.counter, None, params.timeout_ms());
    let read = store.get(&params.counter).await;
    let old = read
        .clone()
        .and_then(|v| parse_counter(v.as_ref().map(|v| &v.value)));
    log_read(log, call, &read);
    let end_how = match old {
        Err(_) => "not_written",
        Ok(old) if !S::is_held(&guard) => {
            log.write(incr_record(&token, old, "failed", "NOT_HELD"));
            "lost"
        }
        Ok(old) => {
            let new = (old + 1).to_string();
            let options = SetOptions::default()
                .persist(true)
                .fencing_token(S::fencing(&guard));
            let call =
                OpRecord::start("incr_set", &params.counter, Some(&new), params.timeout_ms());
            let written = store.set(&params.counter, &new, options).await;
            match &written {
                Ok(applied) => log.op(&call, Outcome::applied(*applied)),
                Err(error) => log.op(&call, Outcome::failed(error)),
            }
            let (outcome, code) = outcome_of(&written);
            log.write(incr_record(&token, old, outcome, code));
            "released"
        }
    };
    let end = now_ms();
    let holder = S::holder(&guard);
    let call = OpRecord::start("release", &params.lock, None, params.timeout_ms());
    match store.release(guard).await {
        Ok(()) => log.op(&call, Outcome::ok()),
        Err(error) => log.op(&call, Outcome::failed(&error)),
    }
    log.write(json!({"t": "hold", "token": token, "holder": holder, "acq": acquired, "end": end, "end_how": end_how}));
}

fn log_read(log: &Log, mut call: OpRecord, read: &Result<Option<Value>, Error>) {
    match read {
        Ok(value) => {
            call.set_value(value.as_ref().map(|v| text(&v.value)));
            log.op(&call, Outcome::ok());
        }
        Err(error) => log.op(&call, Outcome::failed(error)),
    }
}

/// The async flavour.
pub fn run_async(params: Params) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async_main(params))
}

async fn async_main(params: Params) -> Result<(), String> {
    let log = Log::create(&params.log).map_err(|e| e.to_string())?;
    log.write(
        json!({"t": "start", "flavour": "rust-async", "pid": std::process::id(), "ts": now_ms()}),
    );
    let end = Instant::now() + params.duration;
    let client = loop {
        let call = OpRecord::start("connect", "", None, params.timeout_ms());
        match Client::connect(params.options()).await {
            Ok(client) => {
                log.op(&call, Outcome::ok());
                break client;
            }
            Err(error) => {
                log.op(&call, Outcome::failed(&error));
                if Instant::now() >= end {
                    return Err(format!("no connection before the end: {error}"));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let mut observation = loop {
        let call = OpRecord::start("observe", &params.counter, None, params.timeout_ms());
        match client.observe(params.counter.clone()).await {
            Ok(observation) => {
                log.op(&call, Outcome::ok());
                break observation;
            }
            Err(error) => {
                log.op(&call, Outcome::failed(&error));
                if Instant::now() >= end {
                    return Err(format!("no observation before the end: {error}"));
                }
            }
        }
    };
    let events = tokio::spawn({
        let log = log.clone();
        async move {
            while let Some(event) = observation.next().await {
                log.write(event_record(&event));
            }
        }
    });
    let lock = Lock::new(&client, params.lock.clone(), LOCK_TTL)
        .map_err(|e| e.to_string())?
        .timeout(LOCK_WAIT);
    let store = AsyncStore {
        client: client.clone(),
        lock,
    };
    workload(&log, &store, &params, end).await;
    log.write(json!({"t": "quiet", "ts": now_ms()}));
    let closed = stdin_closed();
    let _ = tokio::task::spawn_blocking(move || closed.recv_timeout(QUIET_WAIT)).await;
    let call = OpRecord::start("close", "", None, params.timeout_ms());
    match client.close().await {
        Ok(()) => log.op(&call, Outcome::ok()),
        Err(error) => log.op(&call, Outcome::failed(&error)),
    }
    let _ = tokio::time::timeout(params.timeout, events).await;
    log.write(json!({"t": "end", "ts": now_ms()}));
    Ok(())
}

/// The blocking flavour.
pub fn run_blocking(params: Params) -> Result<(), String> {
    use statestore::blocking;

    let log = Log::create(&params.log).map_err(|e| e.to_string())?;
    log.write(json!({"t": "start", "flavour": "rust-blocking", "pid": std::process::id(), "ts": now_ms()}));
    let end = Instant::now() + params.duration;
    let client = loop {
        let call = OpRecord::start("connect", "", None, params.timeout_ms());
        match blocking::Client::connect(params.options()) {
            Ok(client) => {
                log.op(&call, Outcome::ok());
                break client;
            }
            Err(error) => {
                log.op(&call, Outcome::failed(&error));
                if Instant::now() >= end {
                    return Err(format!("no connection before the end: {error}"));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let mut observation = loop {
        let call = OpRecord::start("observe", &params.counter, None, params.timeout_ms());
        match client.observe(params.counter.clone()) {
            Ok(observation) => {
                log.op(&call, Outcome::ok());
                break observation;
            }
            Err(error) => {
                log.op(&call, Outcome::failed(&error));
                if Instant::now() >= end {
                    return Err(format!("no observation before the end: {error}"));
                }
            }
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let events = std::thread::spawn({
        let log = log.clone();
        let stop = stop.clone();
        move || {
            while !stop.load(Ordering::SeqCst) {
                match observation.next_timeout(Duration::from_millis(200)) {
                    Ok(Some(event)) => log.write(event_record(&event)),
                    Ok(None) => {}
                    Err(_) => return,
                }
            }
        }
    });
    let lock = blocking::Lock::new(&client, params.lock.clone(), LOCK_TTL)
        .map_err(|e| e.to_string())?
        .timeout(LOCK_WAIT);
    let store = BlockingStore {
        client: client.clone(),
        lock,
    };
    run_ready(workload(&log, &store, &params, end));
    log.write(json!({"t": "quiet", "ts": now_ms()}));
    let _ = stdin_closed().recv_timeout(QUIET_WAIT);
    stop.store(true, Ordering::SeqCst);
    let _ = events.join();
    let call = OpRecord::start("close", "", None, params.timeout_ms());
    match client.close() {
        Ok(()) => log.op(&call, Outcome::ok()),
        Err(error) => log.op(&call, Outcome::failed(&error)),
    }
    log.write(json!({"t": "end", "ts": now_ms()}));
    Ok(())
}
