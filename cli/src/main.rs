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

use clap::Parser;

use crate::args::Cli;
use crate::exit::Failure;

fn main() -> ExitCode {
    // clap prints usage errors itself and exits with status 2.
    let cli = Cli::parse();
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
