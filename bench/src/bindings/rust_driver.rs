//! The driver of the Rust flavours (`statestore-bench rust-driver ...`): the same arguments
//! and the same `RESULT <json>` line as the Python, Node and C drivers, measured with the
//! main harness's client drivers ([`crate::drivers::client`], [`crate::drivers::memory`]);
//! the batch test times a loop of single calls against one `get_many`/`set_many` here.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};
use statestore::{ConnectOptions, Error, SetOptions};

use crate::drivers::{client, memory};
use crate::figures::mib;
use crate::measurer::{self, Measured, Target};
use crate::profile::Profile;
use crate::resources;
use crate::scenario::{Broker, Kind, Op, Scenario};
use crate::window::Plan;

/// What the Rust driver is asked to do (the drivers' common arguments).
#[derive(Debug, Clone, clap::Args)]
pub struct RustDriverArgs {
    /// `async` or `blocking`.
    #[arg(long)]
    pub flavour: String,
    /// `probe`, `throughput`, `boundary`, `memory`, `batch` or `idle`.
    #[arg(long, default_value = "throughput")]
    pub test: String,
    /// The broker's host.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The broker's port.
    #[arg(long, default_value_t = 1883)]
    pub port: u16,
    /// `set`, `get` or `mix` (memory runs: SET).
    #[arg(long, default_value = "set")]
    pub op: String,
    /// Value size in bytes.
    #[arg(long, default_value_t = 16)]
    pub size: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 1)]
    pub inflight: usize,
    /// Warm-up, seconds.
    #[arg(long, default_value_t = 0.1)]
    pub warmup: f64,
    /// Measuring window, seconds.
    #[arg(long, default_value_t = 0.3)]
    pub seconds: f64,
    /// Operation cap (calls of the boundary test, keys of the batch test).
    #[arg(long)]
    pub ops: Option<u64>,
    /// The service-side process.
    #[arg(long)]
    pub service_pid: Option<u32>,
}

/// Runs the driver and returns its result object.
pub fn run(args: &RustDriverArgs) -> Value {
    let blocking = match args.flavour.as_str() {
        "async" => false,
        "blocking" => true,
        other => return json!({ "error": format!("unknown Rust flavour {other:?}") }),
    };
    let outcome = match args.test.as_str() {
        "probe" => {
            return json!({ "ok": true, "version": format!("statestore {}", env!("CARGO_PKG_VERSION")) })
        }
        "throughput" => throughput(args, blocking),
        "memory" => memory(args, blocking),
        "boundary" => boundary(args, blocking),
        "batch" => batch(args, blocking),
        "idle" => idle(args, blocking),
        other => Err(format!("unknown test {other:?}")),
    };
    outcome.unwrap_or_else(|error| json!({ "error": error }))
}

fn addr(args: &RustDriverArgs) -> Result<SocketAddr, String> {
    format!("{}:{}", args.host, args.port)
        .parse()
        .map_err(|e| format!("bad broker address: {e}"))
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(24 * 3600))
}

fn profile(args: &RustDriverArgs) -> Profile {
    Profile {
        name: "bindings",
        warmup: secs(args.warmup),
        measure: secs(args.seconds),
        op_cap: args.ops,
        memory_ops: args.ops,
        grace: Duration::from_secs(30),
        ..Profile::quick()
    }
}

// The drivers' `RESULT` line spells the figures as bindings.json does.
fn figures(measured: Measured) -> Value {
    let mut value = json!(measured.measurement);
    value["memory"] = json!(measured.memory);
    value
}

fn throughput(args: &RustDriverArgs, blocking: bool) -> Result<Value, String> {
    let op = match args.op.as_str() {
        "get" => Op::Get,
        _ => Op::Set,
    };
    let scenario = Scenario {
        kind: if blocking {
            Kind::Blocking
        } else {
            Kind::Async
        },
        op,
        value_size: args.size,
        in_flight: args.inflight,
        broker: Some(Broker::Embedded),
    };
    let target = Target {
        addr: Some(addr(args)?),
        service_pid: args.service_pid,
    };
    measurer::measure(&profile(args), scenario, target).map(figures)
}

fn memory(args: &RustDriverArgs, blocking: bool) -> Result<Value, String> {
    let profile = profile(args);
    let plan = Plan {
        warmup: profile.warmup,
        measure: Duration::from_secs(24 * 3600),
        op_cap: args.ops,
        grace: profile.grace,
    };
    let workload = client::Workload {
        op: Op::Set,
        value_size: args.size,
        in_flight: args.inflight,
    };
    let addr = addr(args)?;
    let (mut measurement, trace) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?
        .block_on(memory::run_with(
            addr,
            workload,
            plan,
            args.service_pid,
            blocking,
        ))?;
    measurement.figures.peak_rss_mb = resources::peak_rss().map(mib);
    Ok(figures(Measured {
        measurement,
        memory: trace,
    }))
}

fn boundary(args: &RustDriverArgs, blocking: bool) -> Result<Value, String> {
    let calls = args.ops.unwrap_or(1_000_000).max(1);
    let options = ConnectOptions::new(args.host.clone(), args.port);
    let value = Bytes::from_static(b"v");
    let check = |result: statestore::Result<statestore::SetResult>| match result {
        Err(Error::InvalidArgument(_)) => Ok(()),
        other => Err(format!(
            "SET of an empty key gave {other:?}, not InvalidArgument"
        )),
    };
    let elapsed = if blocking {
        let client = statestore::blocking::Client::connect(options)
            .map_err(|e| format!("blocking client cannot connect: {e}"))?;
        let started = Instant::now();
        for _ in 0..calls {
            check(client.set(Bytes::new(), value.clone(), SetOptions::default()))?;
        }
        let elapsed = started.elapsed();
        let _ = client.close();
        elapsed
    } else {
        with_async_client(options, async |client| {
            let started = Instant::now();
            for _ in 0..calls {
                check(
                    client
                        .set(Bytes::new(), value.clone(), SetOptions::default())
                        .await,
                )?;
            }
            Ok(started.elapsed())
        })?
    };
    Ok(json!({
        "ops": calls,
        "errors": 0,
        "ns_per_call": elapsed.as_nanos() as f64 / calls as f64,
    }))
}

/// The CPU and context switches of this whole process from [`IdleMeter::start`] on: what a
/// connected client with an open observation costs while nothing happens (the `idle` test).
struct IdleMeter {
    cpu: Duration,
    switches: u64,
    started: Instant,
}

impl IdleMeter {
    fn start() -> Self {
        Self {
            cpu: resources::process_cpu(),
            switches: resources::process_ctx_switches(),
            started: Instant::now(),
        }
    }

    fn cpu_ms(&self) -> f64 {
        (resources::process_cpu() - self.cpu).as_secs_f64() * 1e3
    }

    /// The measured window's figures, with the CPU of the settling time before it.
    fn figures(&self, settle_cpu_ms: f64) -> Value {
        json!({
            "elapsed_s": self.started.elapsed().as_secs_f64(),
            "idle_cpu_ms": self.cpu_ms(),
            "idle_ctx_switches": resources::process_ctx_switches() - self.switches,
            "settle_cpu_ms": settle_cpu_ms,
        })
    }
}

/// A connected client observing a key, idle for `--warmup` (settling, counted apart), then
/// for `--seconds` (measured): the async flavour sleeps in its runtime, the blocking one waits
/// for the observation's next event on its thread.
fn idle(args: &RustDriverArgs, blocking: bool) -> Result<Value, String> {
    let options = ConnectOptions::new(args.host.clone(), args.port);
    let window = secs(args.seconds);
    let key = Bytes::from_static(b"bench-idle");
    if blocking {
        let client = statestore::blocking::Client::connect(options)
            .map_err(|e| format!("blocking client cannot connect: {e}"))?;
        let mut observation = client
            .observe(key)
            .map_err(|e| format!("observe failed: {e}"))?;
        let settle = IdleMeter::start();
        let settled = observation.next_timeout(secs(args.warmup));
        let settle_cpu_ms = settle.cpu_ms();
        let meter = IdleMeter::start();
        let waited = observation.next_timeout(window);
        let figures = meter.figures(settle_cpu_ms);
        let _ = client.close();
        return match (settled, waited) {
            (Ok(None), Ok(None)) => Ok(figures),
            other => Err(format!("an idle observation gave {other:?}")),
        };
    }
    with_async_client(options, async |client| {
        let _observation = client
            .observe(key)
            .await
            .map_err(|e| format!("observe failed: {e}"))?;
        let settle = IdleMeter::start();
        tokio::time::sleep(secs(args.warmup)).await;
        let settle_cpu_ms = settle.cpu_ms();
        let meter = IdleMeter::start();
        tokio::time::sleep(window).await;
        Ok(meter.figures(settle_cpu_ms))
    })
}

/// Runs `body` with an async client connected by `options`, on a runtime of its own, and
/// closes the client after it.
fn with_async_client<T>(
    options: ConnectOptions,
    body: impl AsyncFnOnce(&statestore::Client) -> Result<T, String>,
) -> Result<T, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?
        .block_on(async {
            let client = statestore::Client::connect(options)
                .await
                .map_err(|e| format!("async client cannot connect: {e}"))?;
            let result = body(&client).await;
            let _ = client.close().await;
            result
        })
}

/// The keys of the batch test: `bench-batch-00000`, ...
fn batch_keys(args: &RustDriverArgs) -> Vec<Bytes> {
    let count = args.ops.unwrap_or(1000).max(1);
    (0..count)
        .map(|i| Bytes::from(format!("bench-batch-{i:05}")))
        .collect()
}

fn check_get(
    size: usize,
    value: statestore::Result<Option<statestore::Value>>,
) -> Result<(), String> {
    match value {
        Ok(Some(v)) if v.value.len() == size => Ok(()),
        other => Err(format!("GET gave {other:?}, not a {size}-byte value")),
    }
}

fn check_set(result: statestore::Result<statestore::SetResult>) -> Result<(), String> {
    match result {
        Ok(r) if r.applied => Ok(()),
        other => Err(format!("SET gave {other:?}, not applied")),
    }
}

/// Every key of a `get_many` answered with a value of `size` bytes.
fn all_got(
    size: usize,
    results: statestore::Result<Vec<statestore::Result<Option<statestore::Value>>>>,
) -> Result<(), String> {
    let results = results.map_err(|e| e.to_string())?;
    results.into_iter().try_for_each(|v| check_get(size, v))
}

/// Every key of a `set_many` applied.
fn all_set(
    results: statestore::Result<Vec<statestore::Result<statestore::SetResult>>>,
) -> Result<(), String> {
    results
        .map_err(|e| e.to_string())?
        .into_iter()
        .try_for_each(check_set)
}

/// One pass of the batch test: (loop time, batch time). Async and blocking share it through
/// `call` (one key) and `many` (every key), which check every answer.
async fn batch_pass<C, M>(
    keys: &[Bytes],
    mut call: C,
    many: M,
) -> Result<(Duration, Duration), String>
where
    C: AsyncFnMut(Bytes) -> Result<(), String>,
    M: AsyncFnOnce(Vec<Bytes>) -> Result<(), String>,
{
    let started = Instant::now();
    for key in keys {
        call(key.clone()).await?;
    }
    let looped = started.elapsed();
    let started = Instant::now();
    many(keys.to_vec()).await?;
    Ok((looped, started.elapsed()))
}

/// The output of a future whose awaits never wait (the blocking client's calls block inside
/// them): one poll. The blocking client refuses to run inside a tokio runtime's `block_on`.
fn ready<F: std::future::Future>(future: F) -> Result<F::Output, String> {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut context) {
        std::task::Poll::Ready(output) => Ok(output),
        std::task::Poll::Pending => Err("a blocking batch pass waited on a future".to_owned()),
    }
}

fn batch(args: &RustDriverArgs, blocking: bool) -> Result<Value, String> {
    let keys = batch_keys(args);
    let value = Bytes::from(vec![b'v'; args.size]);
    let size = args.size;
    let get = args.op == "get";
    let options = ConnectOptions::new(args.host.clone(), args.port);
    let pairs = |keys: &[Bytes]| {
        keys.iter()
            .map(|k| (k.clone(), value.clone()))
            .collect::<Vec<_>>()
    };
    // A warm-up pass (not counted) when the profile has a warm-up, then the measured pass.
    let passes = if args.warmup > 0.0 { 2 } else { 1 };
    let mut timed = (Duration::ZERO, Duration::ZERO);
    if blocking {
        let client = statestore::blocking::Client::connect(options)
            .map_err(|e| format!("blocking client cannot connect: {e}"))?;
        all_set(client.set_many(pairs(&keys), SetOptions::default()))?;
        for _ in 0..passes {
            timed = ready(batch_pass(
                &keys,
                async |key| match get {
                    true => check_get(size, client.get(key)),
                    false => check_set(client.set(key, value.clone(), SetOptions::default())),
                },
                async |keys| match get {
                    true => all_got(size, client.get_many(keys)),
                    false => all_set(client.set_many(pairs(&keys), SetOptions::default())),
                },
            ))??;
        }
        let _ = client.close();
    } else {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
        runtime.block_on(async {
            let client = statestore::Client::connect(options)
                .await
                .map_err(|e| format!("async client cannot connect: {e}"))?;
            all_set(client.set_many(pairs(&keys), SetOptions::default()).await)?;
            for _ in 0..passes {
                timed = batch_pass(
                    &keys,
                    async |key| match get {
                        true => check_get(size, client.get(key).await),
                        false => {
                            check_set(client.set(key, value.clone(), SetOptions::default()).await)
                        }
                    },
                    async |keys| match get {
                        true => all_got(size, client.get_many(keys).await),
                        false => {
                            all_set(client.set_many(pairs(&keys), SetOptions::default()).await)
                        }
                    },
                )
                .await?;
            }
            let _ = client.close().await;
            Ok::<_, String>(())
        })?;
    }
    let (looped, batch) = timed;
    Ok(json!({
        "ops": keys.len(),
        "errors": 0,
        "elapsed_s": (looped + batch).as_secs_f64(),
        "loop_s": looped.as_secs_f64(),
        "batch_s": batch.as_secs_f64(),
        "peak_rss_mb": resources::peak_rss().map(mib),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::result::DriverOutput;
    use crate::figures::{Figures, Measurement, Outcome};

    #[test]
    fn the_result_line_reads_back_as_a_driver_output() {
        let measured = Measured {
            measurement: Measurement {
                outcome: Outcome {
                    ops: 7,
                    errors: 1,
                    error: Some("boom".to_owned()),
                },
                figures: Figures {
                    ops_per_sec: 1234.5,
                    p50_us: 80.0,
                    peak_rss_mb: Some(21.5),
                    ..Figures::default()
                },
            },
            memory: None,
        };
        let out: DriverOutput = serde_json::from_value(figures(measured)).expect("parses");
        assert_eq!((out.ops, out.errors), (Some(7), Some(1)));
        assert_eq!(out.error.as_deref(), Some("boom"));
        assert_eq!(out.ops_per_sec, Some(1234.5));
        assert_eq!(out.p50_us, Some(80.0));
        assert_eq!(out.peak_rss_mb, Some(21.5));
        assert!(out.memory.is_none());
    }
}
