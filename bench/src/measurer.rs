//! The measuring process: each scenario's load runs in a fresh child process
//! (`statestore-bench measure ...`), so that its CPU time and peak memory are that scenario's
//! alone, not left over from earlier ones (allocator arenas, the blocking client's runtime).
//! It prints `RESULT <json>` with what it measured.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use statestore::protocol::topics::INVOKE_TOPIC;
use tokio::process::Command;

use crate::drivers::memory::{self, MemoryTrace};
use crate::drivers::{client, engine, raw};
use crate::figures::mib;
use crate::figures::Measurement;
use crate::profile::Profile;
use crate::resources;
use crate::scenario::{Kind, Scenario};
use crate::window::{self, Plan};
use crate::wire::ECHO_TOPIC;

/// What the measuring process reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measured {
    /// The scenario's figures, with the measuring process's peak resident memory.
    pub measurement: Measurement,
    /// The memory trace of the long-run scenario.
    pub memory: Option<MemoryTrace>,
}

/// Where the scenario's requests go.
#[derive(Debug, Clone, Copy, Default)]
pub struct Target {
    /// The broker (none for the engine).
    pub addr: Option<SocketAddr>,
    /// The service-side process, whose CPU time is read too.
    pub service_pid: Option<u32>,
}

const RESULT_PREFIX: &str = "RESULT ";

/// Runs `scenario` in a fresh `exe measure` process and returns what it measured.
pub async fn spawn(
    exe: &Path,
    profile: &Profile,
    scenario: Scenario,
    target: Target,
) -> Result<Measured, String> {
    let mut command = Command::new(exe);
    command
        .args(["measure", "--profile", profile.name, "--scenario"])
        .arg(scenario.name());
    if let Some(addr) = target.addr {
        command.arg("--addr").arg(addr.to_string());
    }
    if let Some(pid) = target.service_pid {
        command.arg("--service-pid").arg(pid.to_string());
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let limit = profile.deadline(&scenario);
    let output = match tokio::time::timeout(limit, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(format!("cannot run {}: {e}", exe.display())),
        Err(_) => {
            return Err(format!(
                "the measuring process did not finish within {limit:?}"
            ))
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(json) = stdout.lines().find_map(|l| l.strip_prefix(RESULT_PREFIX)) else {
        return Err(format!(
            "the measuring process ended with {} and no result",
            output.status
        ));
    };
    serde_json::from_str::<Result<Measured, String>>(json)
        .map_err(|e| format!("unreadable result from the measuring process: {e}"))?
}

/// The child's side: measures `scenario` and prints the result line.
pub fn run_and_print(profile: &Profile, scenario: Scenario, target: Target) {
    let result = measure(profile, scenario, target);
    match serde_json::to_string(&result) {
        Ok(json) => println!("{RESULT_PREFIX}{json}"),
        Err(e) => println!("{RESULT_PREFIX}{{\"Err\":\"cannot encode the result: {e}\"}}"),
    }
}

/// Measures `scenario` in this process.
pub fn measure(profile: &Profile, scenario: Scenario, target: Target) -> Result<Measured, String> {
    let (mut measurement, memory) = if scenario.kind == Kind::Engine {
        let budget = engine::Budget {
            duration: profile.engine_measure,
            op_cap: profile.engine_op_cap,
        };
        (engine::run(scenario.op, scenario.value_size, budget)?, None)
    } else {
        let addr = target
            .addr
            .ok_or("an MQTT scenario needs the broker's address")?;
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("bench-load")
            .build()
            .map_err(|e| format!("cannot start the tokio runtime: {e}"))?
            .block_on(drive(profile, scenario, addr, target.service_pid))?
    };
    measurement.figures.peak_rss_mb = resources::peak_rss().map(mib);
    Ok(Measured {
        measurement,
        memory,
    })
}

async fn drive(
    profile: &Profile,
    scenario: Scenario,
    addr: SocketAddr,
    pid: Option<u32>,
) -> Result<(Measurement, Option<MemoryTrace>), String> {
    let plan = Plan {
        warmup: profile.warmup,
        measure: profile.measure,
        op_cap: profile.op_cap,
        grace: profile.grace,
    };
    let raw_workload = raw::Workload {
        op: scenario.op,
        value_size: scenario.value_size,
        in_flight: scenario.in_flight,
    };
    let client_workload = client::Workload {
        op: scenario.op,
        value_size: scenario.value_size,
        in_flight: scenario.in_flight,
    };
    let measurement = match scenario.kind {
        Kind::Floor => {
            window::measure(plan, pid, |gate| {
                raw::run(addr, ECHO_TOPIC, raw_workload, gate)
            })
            .await
        }
        Kind::Server => {
            window::measure(plan, pid, |gate| {
                raw::run(addr, INVOKE_TOPIC, raw_workload, gate)
            })
            .await
        }
        Kind::Async => {
            window::measure(plan, pid, |gate| {
                client::run_async(addr, client_workload, gate)
            })
            .await
        }
        Kind::Blocking => {
            window::measure(plan, pid, |gate| {
                client::run_blocking(addr, client_workload, gate)
            })
            .await
        }
        Kind::Memory => {
            let plan = Plan {
                measure: Duration::from_secs(24 * 3600),
                op_cap: profile.memory_ops,
                ..plan
            };
            return memory::run(addr, client_workload, plan, pid).await;
        }
        Kind::Engine => return Err("the engine runs without MQTT".to_owned()),
    };
    measurement.map(|m| (m, None))
}
