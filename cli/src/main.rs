//! `statestore`: the command line tool of the MQTT broker state store. See `--help` and
//! docs/cli.md.

mod args;
mod commands;
mod connection;
mod durations;
mod exit;
mod input;
mod output;

use std::process::ExitCode;

use crate::args::{Cli, Command};
use crate::exit::{Failure, Status};

/// mimalloc rather than the system's allocator: `serve` allocates and frees per packet, and
/// glibc's malloc took a fifth of its CPU under load (docs/server.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // clap prints usage errors itself and exits with status 2.
    let cli = Cli::parse_args();
    if let Err(failure) = start_logging(&cli) {
        return failure.report();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return Failure::other(format!("cannot start the async runtime: {error}")).report()
        }
    };
    runtime
        .block_on(commands::run(cli.command))
        .unwrap_or_else(|failure| failure.report())
}

/// Logs to stderr as `--verbose` asks.
fn start_logging(cli: &Cli) -> Result<(), Failure> {
    let Some(filter) = cli.log_filter() else {
        return Ok(());
    };
    if matches!(cli.command, Command::Serve(_)) {
        return Err(Failure::new(
            Status::Usage,
            "serve logs as --log-level says (e.g. `--log-level debug`), not --verbose",
        ));
    }
    statestore_server::cli::init_logging(filter).map_err(Failure::other)
}
