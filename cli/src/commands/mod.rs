//! The subcommands, one module each.

mod keys;
mod kv;
mod lock;
mod tour;
mod watch;

use std::process::ExitCode;

use statestore::Client;

use crate::args::Command;
use crate::connection::ConnectionArgs;
use crate::exit::Failure;

/// Runs `command`; its exit code on success.
pub async fn run(command: Command) -> Result<ExitCode, Failure> {
    let done = |()| ExitCode::SUCCESS;
    match command {
        Command::Get(args) => kv::get(args).await.map(done),
        Command::Set(args) => kv::set(args).await.map(done),
        Command::Delete(args) => kv::delete(args).await.map(done),
        Command::Vdel(args) => kv::vdel(args).await.map(done),
        Command::Keys(args) => keys::run(args).await.map(done),
        Command::Watch(args) => watch::run(args).await.map(done),
        Command::Lock(args) => lock::run(args).await,
        Command::Serve(args) => serve(&args).await,
        Command::Tour => tour::run().await.map(done),
    }
}

/// `statestore serve`: `statestore-server`'s own program, which handles SIGINT and SIGTERM.
async fn serve(args: &statestore_server::cli::ServeArgs) -> Result<ExitCode, Failure> {
    Ok(statestore_server::cli::serve(args).await)
}

/// A client connected as the flags and environment say.
async fn connect(connection: &ConnectionArgs) -> Result<Client, Failure> {
    Ok(Client::connect(connection.options()?).await?)
}

/// Closes `client` and passes `result` on: every command says goodbye to the broker
/// (DISCONNECT) whatever happened.
async fn closing<T>(client: Client, result: Result<T, Failure>) -> Result<T, Failure> {
    // Closing only fails if the client is already closed, which is what was wanted.
    let _ = client.close().await;
    result
}
