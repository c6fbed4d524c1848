//! `statestore-bench`: the benchmark harness. See `--help` and bench/README.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use statestore_bench::allocator::PerProcess;
use statestore_bench::bindings::rust_driver::{self, RustDriverArgs};
use statestore_bench::bindings::{
    self as flavours, report as bindings_report, runner as bindings_runner,
};
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
    /// Every binding flavour (Rust, C, Python, Node) and the by-hand baselines, side by side:
    /// writes bindings.json, bindings.svg and a Markdown table (scripts/bench-bindings.sh
    /// installs the packages and passes their paths).
    Bindings(BindingsArgs),
    /// Internal: the driver of the Rust flavours; prints `RESULT <json>`.
    #[command(hide = true)]
    RustDriver(RustDriverArgs),
}

/// Arguments of `statestore-bench bindings`.
#[derive(Debug, clap::Args)]
struct BindingsArgs {
    /// 1 and 64 in flight, 0.2 s windows, 20 000-op memory runs, 5 s idle runs (a few minutes).
    #[arg(long)]
    quick: bool,
    /// A few operations of everything: checks that every driver runs and counts.
    #[arg(long, conflicts_with = "quick")]
    smoke: bool,
    /// Only items whose name contains this text, e.g. `set/16B/64/embedded` or `memory`.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Only these flavours (comma-separated: rust-async,c-async,python-sync,...).
    #[arg(long, value_name = "LIST")]
    flavours: Option<String>,
    /// Where bindings.json, bindings.svg and bindings.md go.
    #[arg(long, value_name = "DIR", default_value_os_t = default_out())]
    out: PathBuf,
    /// A Python with `statestore` and `paho-mqtt` installed.
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// The node executable.
    #[arg(long, value_name = "PATH")]
    node: Option<PathBuf>,
    /// A folder whose node_modules holds `statestore` and `mqtt`.
    #[arg(long, value_name = "DIR")]
    node_dir: Option<PathBuf>,
    /// The C driver compiled against the installed libstatestore.
    #[arg(long, value_name = "PATH")]
    c_driver: Option<PathBuf>,
}

fn default_out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results")
}

/// The service side's processes allocate with mimalloc, the others with the system's
/// allocator ([`statestore_bench::allocator`]).
#[global_allocator]
static ALLOCATOR: PerProcess = PerProcess;

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
        Some(Command::Bindings(ref args)) => bindings(args),
        Some(Command::RustDriver(ref args)) => {
            println!("RESULT {}", rust_driver::run(args));
            Ok(ExitCode::SUCCESS)
        }
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
            result.figures.ops_per_sec,
            result.figures.p50_us,
            result
                .outcome
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

fn bindings(args: &BindingsArgs) -> Result<ExitCode, String> {
    let profile = if args.smoke {
        flavours::BindingsProfile::smoke()
    } else if args.quick {
        flavours::BindingsProfile::quick()
    } else {
        flavours::BindingsProfile::full()
    };
    let chosen: Vec<flavours::Flavour> = match &args.flavours {
        None => flavours::Flavour::ALL.to_vec(),
        Some(list) => list
            .split(',')
            .map(|label| {
                flavours::Flavour::from_label(label.trim())
                    .ok_or_else(|| format!("no flavour {label:?}"))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut items = profile.items(&chosen);
    if let Some(filter) = &args.filter {
        items.retain(|i| i.name().contains(filter.as_str()));
    }
    if items.is_empty() {
        return Err(format!("nothing matches {:?}", args.filter));
    }
    let tools = bindings_runner::Tools {
        exe: std::env::current_exe()
            .map_err(|e| format!("cannot find this program's path: {e}"))?,
        drivers_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("drivers"),
        python: args.python.clone(),
        node: args.node.clone(),
        node_dir: args.node_dir.clone(),
        c_driver: args.c_driver.clone(),
    };
    let load_at_start = json::load_average();
    eprintln!(
        "statestore-bench bindings: {} profile, {} items, load average {}",
        profile.name,
        items.len(),
        load_at_start.as_deref().unwrap_or("?")
    );
    let started = Instant::now();
    let total = items.len();
    let mut done = 0;
    let (probes, mut results) = bindings_runner::run(&profile, &tools, &items, |r| {
        done += 1;
        let figure = match (&r.unavailable, &r.outcome.error, r.ns_per_call) {
            (Some(reason), _, _) => format!("unavailable: {reason}"),
            (None, Some(error), _) => format!("FAILED: {error}"),
            (None, None, Some(ns)) => format!("{ns:>10.0} ns/call"),
            (None, None, None) => match (&r.memory, r.batch_speedup) {
                (_, Some(speedup)) => format!(
                    "loop {:>8.3} s  batch {:>8.3} s  {speedup:.1} x",
                    r.loop_s.unwrap_or(0.0),
                    r.batch_s.unwrap_or(0.0)
                ),
                (Some(m), None) => format!(
                    "{:>10.0} ops/s  {:.1} -> {:.1} MiB, second half {:+.2} MiB",
                    r.figures.ops_per_sec, m.start_mb, m.end_mb, m.second_half_growth_mb
                ),
                (None, None) => format!(
                    "{:>10.0} ops/s  p50 {:>8.1} µs",
                    r.figures.ops_per_sec, r.figures.p50_us
                ),
            },
        };
        eprintln!("[{done:>3}/{total}] {:<40} {figure}", r.name);
    })?;
    for probe in &probes {
        eprintln!(
            "  {:<14} {}",
            probe.flavour.label(),
            probe
                .version
                .as_deref()
                .map(str::to_owned)
                .or_else(|| probe
                    .unavailable
                    .as_ref()
                    .map(|u| format!("unavailable: {u}")))
                .unwrap_or_default()
        );
    }
    bindings_report::compare(&mut results);
    let checks = flavours::targets::evaluate(&results);
    let mut table = flavours::markdown::render(&probes, &results);
    table.push_str("\nTargets:\n\n");
    for check in &checks {
        table.push_str(&format!("- {}\n", check.line()));
    }
    println!("{table}");
    let written = bindings_report::write_files(
        &args.out,
        profile.name,
        &probes,
        &results,
        &checks,
        load_at_start,
    )?;
    let md = args.out.join("bindings.md");
    std::fs::write(&md, &table).map_err(|e| format!("cannot write {}: {e}", md.display()))?;
    println!(
        "{} items in {:.0} s; wrote {}, {} and {}",
        results.len(),
        started.elapsed().as_secs_f64(),
        written.json.display(),
        written.svg.display(),
        md.display()
    );
    let failed = results.iter().filter(|r| r.failed_run()).count();
    if failed > 0 {
        eprintln!("statestore-bench bindings: {failed} items failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
