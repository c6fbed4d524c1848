//! Runs a list of scenarios. Each one gets fresh processes: Mosquitto when it needs it, the
//! service side ([`crate::service`]) and the measuring process ([`crate::measurer`]).

use std::path::PathBuf;

use statestore_testkit::Mosquitto;

use crate::figures::mib;
use crate::measurer::{self, Target};
use crate::profile::Profile;
use crate::report::ScenarioResult;
use crate::resources;
use crate::scenario::{Broker, Kind, Scenario};
use crate::service::{Responder, ServiceProcess, ServiceSpec};

/// What to run and how.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Phases and matrix.
    pub profile: Profile,
    /// This benchmark's binary: it serves the service side (`serve`) and measures (`measure`).
    pub exe: PathBuf,
}

/// Runs `scenarios` in order; `progress` is called with each result as it comes.
pub fn run(
    config: &RunConfig,
    scenarios: &[Scenario],
    mut progress: impl FnMut(&ScenarioResult),
) -> Result<Vec<ScenarioResult>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let mut results = Vec::with_capacity(scenarios.len());
    for &scenario in scenarios {
        let result = runtime.block_on(run_one(config, scenario));
        progress(&result);
        results.push(result);
    }
    Ok(results)
}

async fn run_one(config: &RunConfig, scenario: Scenario) -> ScenarioResult {
    if scenario.kind == Kind::Engine {
        let measured =
            measurer::spawn(&config.exe, &config.profile, scenario, Target::default()).await;
        return ScenarioResult::new(scenario, measured);
    }
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
    let service = match ServiceProcess::spawn(&config.exe, spec).await {
        Ok(service) => service,
        Err(error) => return ScenarioResult::failed(scenario, error),
    };
    let target = Target {
        addr: Some(service.addr()),
        service_pid: service.pid(),
    };
    let measured = measurer::spawn(&config.exe, &config.profile, scenario, target).await;
    let service_peak = target
        .service_pid
        .and_then(resources::child_peak_rss)
        .map(mib);
    service.stop().await;
    drop(mosquitto);
    let mut result = ScenarioResult::new(scenario, measured);
    result.figures.service_peak_rss_mb = service_peak;
    result
}
