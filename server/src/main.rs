//! `statestore-server`: a local MQTT broker state store. See `--help`.

use std::process::ExitCode;

use clap::Parser;
use statestore_server::cli::{self, ServeArgs};

/// mimalloc rather than the system's allocator: the server allocates and frees per packet, and
/// glibc's malloc took a fifth of its CPU under load (docs/server.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A faithful local state store (the key-value store of the Azure IoT Operations MQTT
/// broker): by default an embedded MQTT 5 broker with the state store attached; with
/// --broker, attached to an existing MQTT 5 broker.
#[derive(Debug, Parser)]
#[command(name = "statestore-server", version)]
struct Command {
    #[command(flatten)]
    serve: ServeArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    cli::serve(&Command::parse().serve).await
}
