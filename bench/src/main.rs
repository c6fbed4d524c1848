//! `statestore-bench`: the benchmark harness. See `--help` and bench/README.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use statestore_bench::matrix;
use statestore_bench::measurer::{self, Target};
use statestore_bench::profile::Profile;
use statestore_bench::report::{self, json, table, targets};
use statestore_bench::runner::{self, RunConfig};
use statestore_bench::service::{self, Responder, ServiceSpec};

/// Measures the state store client and server against the raw MQTT 5 request/response
/// floor and writes a table, results/latest.json and results/latest.svg.
#[derive(Debug, Parser)]
#[command(name = "statestore-bench")]
struct Cli {
    /// The whole matrix in under two minutes (short phases, no 64 KiB x 256, no memory run).
    #[arg(long)]
    quick: bool,
    /// A handful of operations per scenario: checks that everything runs, not how fast.
    #[arg(long, conflicts_with = "quick")]
    smoke: bool,
    /// Only scenarios whose name contains this text (their floors run too), e.g. `async/get`.
    #[arg(long, value_name = "NAME")]
    filter: Option<String>,
    /// Where latest.json and latest.svg go.
    #[arg(long, value_name = "DIR", default_value_os_t = default_out())]
    out: PathBuf,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Internal: the service side of a scenario, in a child process.
    #[command(hide = true)]
    Serve {
        /// What answers the requests.
        #[arg(long, value_enum)]
        responder: Responder,
        /// An external broker; the embedded one when absent.
        #[arg(long)]
        broker: Option<std::net::SocketAddr>,
    },
    /// Internal: the load of one scenario, in a child process; prints `RESULT <json>`.
    #[command(hide = true)]
    Measure {
        /// `full`, `quick` or `smoke`.
        #[arg(long)]
        profile: String,
        /// The scenario's name.
        #[arg(long)]
        scenario: String,
        /// The broker.
        #[arg(long)]
        addr: Option<std::net::SocketAddr>,
        /// The service-side process.
        #[arg(long)]
        service_pid: Option<u32>,
    },
}

fn default_out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Some(Command::Serve { responder, broker }) => serve(ServiceSpec { responder, broker }),
        Some(Command::Measure {
            profile,
            scenario,
            addr,
            service_pid,
        }) => measure(&profile, &scenario, Target { addr, service_pid }),
        None => bench(&cli),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("statestore-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn serve(spec: ServiceSpec) -> Result<ExitCode, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("bench-service")
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?
        .block_on(service::serve(spec))?;
    Ok(ExitCode::SUCCESS)
}

fn measure(profile: &str, scenario: &str, target: Target) -> Result<ExitCode, String> {
    let profile = Profile::by_name(profile).ok_or_else(|| format!("no profile {profile:?}"))?;
    let scenario = matrix::find(&profile, scenario)
        .ok_or_else(|| format!("no scenario {scenario:?} in the {} profile", profile.name))?;
    measurer::run_and_print(&profile, scenario, target);
    Ok(ExitCode::SUCCESS)
}

fn bench(cli: &Cli) -> Result<ExitCode, String> {
    let profile = if cli.smoke {
        Profile::smoke()
    } else if cli.quick {
        Profile::quick()
    } else {
        Profile::full()
    };
    let scenarios = matrix::scenarios(&profile, cli.filter.as_deref());
    if scenarios.is_empty() {
        return Err(format!("no scenario matches {:?}", cli.filter));
    }
    let config = RunConfig {
        profile: profile.clone(),
        exe: std::env::current_exe()
            .map_err(|e| format!("cannot find this program's path: {e}"))?,
    };
    let load_at_start = json::load_average();
    eprintln!(
        "statestore-bench: {} profile, {} scenarios, load average {}",
        profile.name,
        scenarios.len(),
        load_at_start.as_deref().unwrap_or("?")
    );
    let started = Instant::now();
    let total = scenarios.len();
    let mut done = 0;
    let mut results = runner::run(&config, &scenarios, |result| {
        done += 1;
        eprintln!(
            "[{done:>3}/{total}] {:<34} {:>10.0} ops/s  p50 {:>8.1} µs{}",
            result.name,
            result.ops_per_sec,
            result.p50_us,
            result
                .error
                .as_ref()
                .map(|e| format!("  FAILED: {e}"))
                .unwrap_or_default()
        );
    })?;
    report::compare_with_floor(&mut results);
    let checks = targets::evaluate(&results);
    println!("{}", table::render(&results));
    println!("Targets:");
    for check in &checks {
        println!("  {}", check.line());
    }
    let written = report::write_files(&cli.out, profile.name, &results, &checks, load_at_start)?;
    println!(
        "\n{} scenarios in {:.0} s; wrote {} and {}",
        results.len(),
        started.elapsed().as_secs_f64(),
        written.json.display(),
        written.svg.display()
    );
    let failed = results.iter().filter(|r| !r.ok()).count();
    if failed > 0 {
        eprintln!("statestore-bench: {failed} scenarios failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
