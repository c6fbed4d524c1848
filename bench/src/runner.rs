//! Runs a list of scenarios, each with its own service-side process (and Mosquitto), and
//! collects their results.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use statestore::protocol::topics::INVOKE_TOPIC;
use statestore_server::testing::Mosquitto;

use crate::drivers::{client, engine, memory, raw};
use crate::measure::Figures;
use crate::profile::Profile;
use crate::report::{mib, ScenarioResult};
use crate::resources;
use crate::scenario::{Broker, Kind, Scenario};
use crate::service::{Responder, ServiceProcess, ServiceSpec};
use crate::window::{self, Plan};
use crate::wire::ECHO_TOPIC;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Phases and matrix.
    pub profile: Profile,
    /// The binary that serves the service side (`statestore-bench serve`).
    pub service_exe: PathBuf,
}

/// Runs `scenarios` in order; `progress` is called with each result as it comes.
pub fn run(
    config: &RunConfig,
    scenarios: &[Scenario],
    mut progress: impl FnMut(&ScenarioResult),
) -> Result<Vec<ScenarioResult>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("bench-client")
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let mut results = Vec::with_capacity(scenarios.len());
    for &scenario in scenarios {
        let reset = resources::reset_peak_rss();
        let mut result = match scenario.kind {
            Kind::Engine => run_engine(&config.profile, scenario),
            _ => runtime.block_on(run_mqtt(config, scenario)),
        };
        if reset && result.peak_rss_mb.is_none() {
            result.peak_rss_mb = resources::peak_rss().map(mib);
        }
        progress(&result);
        results.push(result);
    }
    Ok(results)
}

fn run_engine(profile: &Profile, scenario: Scenario) -> ScenarioResult {
    let budget = engine::Budget {
        duration: profile.engine_measure,
        op_cap: profile.engine_op_cap,
    };
    match engine::run(scenario.op, scenario.value_size, budget) {
        Ok(figures) => ScenarioResult::measured(scenario, figures),
        Err(error) => ScenarioResult::failed(scenario, error),
    }
}

async fn run_mqtt(config: &RunConfig, scenario: Scenario) -> ScenarioResult {
    // Mosquitto lives as long as the scenario: each one starts from an empty broker.
    let mosquitto = match scenario.broker {
        Some(Broker::Mosquitto) => match Mosquitto::start() {
            Ok(mosquitto) => Some(mosquitto),
            Err(e) => {
                return ScenarioResult::failed(
                    scenario,
                    format!("cannot start mosquitto (run scripts/setup.sh): {e}"),
                )
            }
        },
        _ => None,
    };
    let spec = ServiceSpec {
        responder: match scenario.kind {
            Kind::Floor => Responder::Echo,
            _ => Responder::Server,
        },
        broker: mosquitto.as_ref().map(Mosquitto::addr),
    };
    let service = match ServiceProcess::spawn(&config.service_exe, spec).await {
        Ok(service) => service,
        Err(error) => return ScenarioResult::failed(scenario, error),
    };
    let pid = service.pid();
    let outcome = drive(&config.profile, scenario, service.addr(), pid).await;
    let service_peak = pid.and_then(resources::child_peak_rss).map(mib);
    service.stop().await;
    drop(mosquitto);
    let mut result = match outcome {
        Ok((figures, trace)) => {
            let mut result = ScenarioResult::measured(scenario, figures);
            result.memory = trace;
            result
        }
        Err(error) => ScenarioResult::failed(scenario, error),
    };
    result.service_peak_rss_mb = service_peak;
    result
}

async fn drive(
    profile: &Profile,
    scenario: Scenario,
    addr: SocketAddr,
    pid: Option<u32>,
) -> Result<(Figures, Option<memory::MemoryTrace>), String> {
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
    let figures = match scenario.kind {
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
            let ops = profile.memory_ops.unwrap_or(0);
            let plan = Plan {
                measure: Duration::from_secs(24 * 3600),
                op_cap: Some(ops),
                // Even a slow machine does 2000 operations per second.
                grace: profile.grace + Duration::from_millis(ops / 2),
                ..plan
            };
            return memory::run(addr, client_workload, plan, pid).await;
        }
        Kind::Engine => return Err("the engine runs without MQTT".to_owned()),
    };
    figures.map(|f| (f, None))
}
