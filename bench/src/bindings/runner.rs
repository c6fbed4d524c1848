//! Runs a bindings run: probes every flavour's driver, then runs each item in fresh
//! processes (Mosquitto when the cell needs it, the service side, the driver) and collects
//! what the drivers print.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use statestore_testkit::{Mosquitto, Proxy};
use tokio::process::Command;

use super::result::{BindingResult, DriverOutput, Probe};
use super::{BindingsProfile, DriverArgs, Flavour, Item, Language, Test};
use crate::figures::mib;
use crate::resources;
use crate::scenario::Broker;
use crate::service::{Responder, ServiceProcess, ServiceSpec};

/// Where the drivers and the packages they load are.
#[derive(Debug, Clone)]
pub struct Tools {
    /// This binary: the service side (`serve`) and the Rust driver (`rust-driver`).
    pub exe: PathBuf,
    /// `bench/drivers`.
    pub drivers_dir: PathBuf,
    /// A Python with `statestore` and `paho-mqtt` installed.
    pub python: Option<PathBuf>,
    /// The `node` executable.
    pub node: Option<PathBuf>,
    /// A folder whose `node_modules` holds `statestore` and `mqtt`.
    pub node_dir: Option<PathBuf>,
    /// `c_driver` compiled against the installed libstatestore.
    pub c_driver: Option<PathBuf>,
}

impl Tools {
    /// The driver command of `flavour`, or why there is none.
    pub fn command(&self, flavour: Flavour) -> Result<Command, String> {
        let mut command = match flavour.language() {
            Language::Rust => {
                let mut c = Command::new(&self.exe);
                c.arg("rust-driver");
                c
            }
            Language::C => {
                let driver = self.c_driver.as_ref().ok_or(
                    "no C driver: libstatestore is not installed (scripts/bench-bindings.sh \
                     installs it with scripts/install-c.sh and compiles bench/drivers/c_driver.c)",
                )?;
                if !driver.exists() {
                    return Err(format!("no C driver at {}", driver.display()));
                }
                Command::new(driver)
            }
            Language::Python => {
                let python = self
                    .python
                    .as_ref()
                    .ok_or("no Python given (--python; scripts/bench-bindings.sh makes a venv)")?;
                let mut c = Command::new(python);
                c.arg("-u").arg(self.drivers_dir.join("py_driver.py"));
                c
            }
            Language::Node => {
                let node = self
                    .node
                    .as_ref()
                    .ok_or("no node given (--node; scripts/bench-bindings.sh finds it)")?;
                let dir = self.node_dir.as_ref().ok_or(
                    "no node_modules folder given (--node-dir; scripts/bench-bindings.sh makes one)",
                )?;
                let mut c = Command::new(node);
                c.arg(self.drivers_dir.join("node_driver.mjs"))
                    .arg("--modules")
                    .arg(dir);
                c
            }
        };
        command.arg("--flavour").arg(flavour.driver_name());
        Ok(command)
    }
}

const RESULT_PREFIX: &str = "RESULT ";

async fn spawn_driver(
    tools: &Tools,
    flavour: Flavour,
    args: &[String],
    limit: Duration,
) -> Result<DriverOutput, String> {
    let mut command = tools
        .command(flavour)
        .map_err(|reason| format!("unavailable: {reason}"))?;
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(limit, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(format!("cannot run the {flavour} driver: {e}")),
        Err(_) => {
            return Err(format!(
                "the {flavour} driver did not finish within {limit:?}"
            ))
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(line) = stdout.lines().find_map(|l| l.strip_prefix(RESULT_PREFIX)) else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        return Err(format!(
            "the {flavour} driver ended with {} and no result: {}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    };
    serde_json::from_str(line)
        .map_err(|e| format!("unreadable result from the {flavour} driver: {e}"))
}

/// Asks each flavour's driver whether it can run here.
pub async fn probe(tools: &Tools, flavour: Flavour) -> Probe {
    let args = ["--test".to_owned(), "probe".to_owned()];
    match spawn_driver(tools, flavour, &args, Duration::from_secs(60)).await {
        Ok(DriverOutput {
            ok: Some(true),
            version,
            ..
        }) => Probe {
            flavour,
            version,
            unavailable: None,
        },
        Ok(output) => Probe {
            flavour,
            version: None,
            unavailable: Some(
                output
                    .unavailable
                    .or(output.error)
                    .unwrap_or_else(|| "the probe did not say ok".to_owned()),
            ),
        },
        Err(error) => Probe {
            flavour,
            version: None,
            unavailable: Some(error.trim_start_matches("unavailable: ").to_owned()),
        },
    }
}

/// Runs `items` (probing their flavours first); `progress` sees each result as it comes.
pub fn run(
    profile: &BindingsProfile,
    tools: &Tools,
    items: &[Item],
    mut progress: impl FnMut(&BindingResult),
) -> Result<(Vec<Probe>, Vec<BindingResult>), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let mut flavours: Vec<Flavour> = items.iter().map(|i| i.flavour).collect();
    flavours.sort();
    flavours.dedup();
    let probes: Vec<Probe> = flavours
        .iter()
        .map(|&f| runtime.block_on(probe(tools, f)))
        .collect();
    let mut results = Vec::with_capacity(items.len());
    for item in items {
        let probe = probes.iter().find(|p| p.flavour == item.flavour);
        let result = match (
            probe.and_then(|p| p.unavailable.clone()),
            item.flavour.unsupported(&item.test),
        ) {
            (Some(reason), _) => BindingResult::unavailable(*item, reason),
            (None, Some(reason)) => BindingResult::unavailable(*item, reason.to_owned()),
            (None, None) => runtime.block_on(run_one(profile, tools, *item)),
        };
        progress(&result);
        results.push(result);
    }
    Ok((probes, results))
}

async fn run_one(profile: &BindingsProfile, tools: &Tools, item: Item) -> BindingResult {
    let broker = match item.test {
        Test::Throughput { broker, .. } => broker,
        Test::Boundary | Test::Memory | Test::Batch { .. } | Test::Idle => Broker::Embedded,
    };
    // Mosquitto lives as long as the item: each one starts from an empty broker.
    let mosquitto = match broker {
        Broker::Mosquitto => match Mosquitto::start() {
            Ok(m) => Some(m),
            Err(e) => {
                return BindingResult::failed(
                    item,
                    format!("cannot start mosquitto (run scripts/setup.sh): {e}"),
                )
            }
        },
        Broker::Embedded => None,
    };
    let spec = ServiceSpec {
        responder: Responder::Server,
        broker: mosquitto.as_ref().map(Mosquitto::addr),
    };
    let service = match ServiceProcess::spawn(&tools.exe, spec).await {
        Ok(s) => s,
        Err(e) => return BindingResult::failed(item, e),
    };
    // A round trip as on a real network: the delaying proxy runs on this runtime, which keeps
    // polling it while it waits for the driver.
    let proxy = match item.test {
        Test::Batch { delay_ms, .. } if delay_ms > 0 => match Proxy::start(service.addr()).await {
            Ok(proxy) => {
                proxy.latency(Duration::from_millis(delay_ms));
                Some(proxy)
            }
            Err(e) => {
                service.stop().await;
                return BindingResult::failed(
                    item,
                    format!("cannot start the delaying proxy: {e}"),
                );
            }
        },
        _ => None,
    };
    let addr = proxy.as_ref().map_or_else(|| service.addr(), Proxy::addr);
    let mut args = DriverArgs::new(profile, &item, addr.ip().to_string(), addr.port());
    args.service_pid = service.pid();
    // A batch test runs its driver `batch_runs` times against the same server; the others once.
    let runs = match item.test {
        Test::Batch { .. } => profile.batch_runs.max(1),
        _ => 1,
    };
    let mut outputs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let output = spawn_driver(
            tools,
            item.flavour,
            &args.to_args(),
            profile.deadline(&item.test),
        )
        .await;
        let failed = output.is_err();
        outputs.push(output);
        if failed {
            break;
        }
    }
    let service_peak = service.pid().and_then(resources::child_peak_rss).map(mib);
    drop(proxy);
    service.stop().await;
    drop(mosquitto);
    let mut result = fold_runs(item, outputs);
    result.figures.service_peak_rss_mb = service_peak;
    result
}

/// The result of an item from its driver runs: the first run's, with a batch test's times
/// replaced by the medians of every run; the first failure fails it.
fn fold_runs(item: Item, outputs: Vec<Result<DriverOutput, String>>) -> BindingResult {
    let mut results = Vec::with_capacity(outputs.len());
    for output in outputs {
        let result = match output {
            Ok(output) => BindingResult::from_output(item, output),
            Err(error) => BindingResult::failed(item, error),
        };
        if result.failed_run() {
            return result;
        }
        results.push(result);
    }
    let runs: Vec<[f64; 2]> = results
        .iter()
        .filter_map(|r| Some([r.loop_s?, r.batch_s?]))
        .collect();
    let Some(mut first) = results.into_iter().next() else {
        return BindingResult::failed(item, "the driver never ran".to_owned());
    };
    if runs.len() > 1 {
        first.batch_medians(runs);
    }
    first
}
