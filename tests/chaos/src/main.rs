//! `statestore-chaos`: the chaos run (see `tests/chaos/README.md`).
//!
//! - `statestore-chaos run [--duration 120s] [--out DIR] [--server-bin PATH] [--seed N]
//!   [--timeout 2s] [--rings embedded,mosquitto] [--skip-faults KIND,...] [--writer NAME=COMMAND ...]
//!   [--skip NAME=REASON ...] [--require-all]`: the whole run; exits 1 if a promise was broken.
//!   With `--require-all` (what CI runs) a skipped flavour is an error: the run does not start.
//! - `statestore-chaos writer async|blocking HOST PORT LOCK COUNTER PREFIX DURATION_MS
//!   TIMEOUT_MS LOG`: the Rust writers.
//! - `statestore-chaos check DIR`: judges a finished run again.
//! - `statestore-chaos secure [--server-bin PATH]`: TLS, client-certificate and password
//!   fixtures on Mosquitto with a state store; prints their description as one JSON line,
//!   serves until stdin is closed.
//! - `statestore-chaos hostile [--for 600s]`: a malicious state store on a fresh Mosquitto;
//!   prints `hostile ready on 127.0.0.1:PORT`, serves until stdin is closed.

mod check;
mod hostile;
mod procs;
mod record;
mod run;
mod secure;
mod writer;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use statestore_testkit::{Mosquitto, SatBroker};

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |i| text.split_at(i));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("bad duration {text:?}"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" | "min" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("bad duration {text:?} (use 500ms, 30s, 30m)")),
    }
}

fn parse_run(args: &[String]) -> Result<run::RunConfig, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut config = run::RunConfig {
        duration: Duration::from_secs(120),
        out: std::env::temp_dir().join(format!("statestore-chaos-{}", std::process::id())),
        server_bin: me.with_file_name("statestore-server"),
        seed: fastrand::u64(..),
        call_timeout: Duration::from_secs(2),
        writers: Vec::new(),
        skipped: Vec::new(),
        rings: vec!["embedded".into(), "mosquitto".into()],
        skip_faults: Vec::new(),
    };
    let mut require_all = false;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--duration" => config.duration = parse_duration(&value()?)?,
            "--timeout" => config.call_timeout = parse_duration(&value()?)?,
            "--out" => config.out = PathBuf::from(value()?),
            "--server-bin" => config.server_bin = PathBuf::from(value()?),
            "--seed" => config.seed = value()?.parse().map_err(|_| "bad --seed")?,
            "--rings" => config.rings = value()?.split(',').map(str::to_string).collect(),
            "--skip-faults" => {
                config.skip_faults = value()?.split(',').map(str::to_string).collect()
            }
            "--writer" => {
                let text = value()?;
                let (name, command) = text.split_once('=').ok_or("--writer NAME=COMMAND")?;
                let command: Vec<String> = command.split_whitespace().map(str::to_string).collect();
                if command.is_empty() {
                    return Err(format!("--writer {name}: empty command"));
                }
                config.writers.push((name.to_string(), command));
            }
            "--skip" => {
                let text = value()?;
                let (name, reason) = text.split_once('=').ok_or("--skip NAME=REASON")?;
                config.skipped.push((name.to_string(), reason.to_string()));
            }
            "--require-all" => require_all = true,
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    if require_all && !config.skipped.is_empty() {
        let missing: Vec<String> = config
            .skipped
            .iter()
            .map(|(name, reason)| format!("{name} ({reason})"))
            .collect();
        return Err(format!(
            "--require-all: every flavour must take part, but these cannot run: {}",
            missing.join("; ")
        ));
    }
    Ok(config)
}

/// Blocks until stdin is closed, or `limit` passes.
async fn stdin_closed(limit: Duration) {
    // A plain thread: a runtime waits for its blocking tasks at shutdown, and this one may
    // never return.
    let (closed, stdin) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
        let _ = closed.send(());
    });
    let _ = tokio::time::timeout(limit, stdin).await;
}

/// The security fixtures (see `secure.rs`), until stdin closes (at most 30 minutes).
fn serve_secure(args: &[String]) -> Result<bool, String> {
    let server_bin = match args {
        [flag, path] if flag == "--server-bin" => PathBuf::from(path),
        [] => std::env::current_exe()
            .map_err(|e| e.to_string())?
            .with_file_name("statestore-server"),
        _ => return Err("secure [--server-bin PATH]".into()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("statestore-secure-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let description = secure::prepare(&dir)?;
        let plain = description["ports"]["plain"].as_u64().unwrap_or(0) as u16;
        let files = dir.clone();
        let broker = run::off_the_runtime(move || Mosquitto::start_configured(&files, plain))
            .await?
            .map_err(|e| e.to_string())?;
        let server = procs::ServerProcess::start(
            &server_bin,
            vec![
                "--broker".into(),
                format!("mqtt://127.0.0.1:{plain}"),
                "--log-level".into(),
                "warn".into(),
            ],
            dir.join("server.log"),
        )
        .await?;
        // K8S-SAT: an mqtt5 broker of our own (Mosquitto has no K8S-SAT), with a second
        // state store attached.
        let sat_broker = SatBroker::accepting(secure::SAT_TOKEN.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let sat = sat_broker.addr();
        let sat_server = procs::ServerProcess::start(
            &server_bin,
            vec![
                "--broker".into(),
                format!("mqtt://{sat}"),
                "--log-level".into(),
                "warn".into(),
            ],
            dir.join("sat-server.log"),
        )
        .await?;
        let mut description = description;
        description["ports"]["sat"] = sat.port().into();
        println!("{description}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        stdin_closed(Duration::from_secs(1800)).await;
        drop(sat_server);
        drop(sat_broker);
        drop(server);
        drop(broker);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(true)
    })
}

/// Mosquitto plus the malicious responder, until stdin closes or the time runs out.
fn serve_hostile(args: &[String]) -> Result<bool, String> {
    let limit = match args {
        [flag, value] if flag == "--for" => parse_duration(value)?,
        [] => Duration::from_secs(600),
        _ => return Err("hostile [--for DURATION]".into()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("statestore-hostile-{}", std::process::id()));
        let files = dir.clone();
        let broker = run::off_the_runtime(move || Mosquitto::start_persistent(&files))
            .await?
            .map_err(|e| e.to_string())?;
        let service = hostile::start(broker.addr()).await?;
        println!("hostile ready on {}", broker.addr());
        use std::io::Write;
        let _ = std::io::stdout().flush();
        stdin_closed(limit).await;
        service.abort();
        drop(broker);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(true)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => parse_run(&args[1..]).and_then(|config| {
            println!(
                "chaos: {} s, seed {}, output in {}",
                config.duration.as_secs(),
                config.seed,
                config.out.display()
            );
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(run::run(config))
        }),
        Some("writer") => {
            let flavour = args.get(1).map(String::as_str);
            writer::Params::parse(args.get(2..).unwrap_or(&[])).and_then(|params| match flavour {
                Some("async") => writer::run_async(params).map(|()| true),
                Some("blocking") => writer::run_blocking(params).map(|()| true),
                _ => Err("writer async|blocking ...".into()),
            })
        }
        Some("hostile") => serve_hostile(&args[1..]),
        Some("secure") => serve_secure(&args[1..]),
        Some("check") => match args.get(1) {
            Some(dir) => check::check_dir(std::path::Path::new(dir)),
            None => Err("check DIR".into()),
        },
        _ => Err("usage: statestore-chaos run|writer|check ... (see tests/chaos/README.md)".into()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("statestore-chaos: {error}");
            ExitCode::from(2)
        }
    }
}
