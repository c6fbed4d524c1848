//! `tour`: a guided session on an in-process state store. Each step is a `statestore` command
//! line run through the tool's own parser and subcommands, printed with its output.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use statestore::lease::Lock;
use statestore::{Client, ConnectOptions, Observation};
use statestore_server::{Server, ServerConfig};

use super::watch::event_line;
use crate::args::Cli;
use crate::exit::Failure;
use crate::output::{line, quoted};

/// How long the tour waits for a notification before it gives up (it comes within
/// milliseconds on loopback).
const NOTIFICATION_WAIT: Duration = Duration::from_secs(10);

/// `statestore tour`.
pub async fn run() -> Result<(), Failure> {
    let server = Server::start(ServerConfig::default())
        .await
        .map_err(|e| Failure::other(format!("cannot start the local state store: {e}")))?;
    let addr = server.local_addr();
    let options = ConnectOptions::new(addr.ip().to_string(), addr.port());
    let result = match Client::connect(options).await {
        Ok(client) => {
            let tour = Tour { addr, client };
            let result = tour.steps().await;
            let _ = tour.client.close().await;
            result
        }
        Err(error) => Err(error.into()),
    };
    server.shutdown().await;
    result
}

struct Tour {
    addr: SocketAddr,
    /// The tour's own client: it watches keys and takes the lock.
    client: Client,
}

impl Tour {
    async fn steps(&self) -> Result<(), Failure> {
        say(&format!(
            "A local state store is running on {} (what `statestore serve` starts).\n\
             # The commands below connect to it with --host {} --port {} (left out here).",
            self.addr,
            self.addr.ip(),
            self.addr.port()
        ))?;

        say("Set a key. The tool prints the key's new version, a hybrid logical clock.")?;
        self.shell("set greeting hello").await?;

        say("Read it back with its version (plain `get` prints the value's raw bytes).")?;
        self.shell("get greeting --json").await?;

        say("Set only if absent (--nx): the key exists, so nothing changes.")?;
        self.shell("set greeting hi --nx").await?;

        say("Watch the key (as `statestore watch greeting` does) while it changes.")?;
        let mut greeting = self.client.observe("greeting").await?;
        self.shell("set greeting bonjour").await?;
        self.notified(&mut greeting).await?;

        say(
            "A lock. `statestore lock NAME --ttl 10s -- COMMAND` runs COMMAND while holding it,\n\
             # with the fencing token in $STATESTORE_FENCING_TOKEN. The tour takes it itself:",
        )?;
        let guard = Lock::new(&self.client, "locks/report", Duration::from_secs(10))?
            .lock()
            .await?;
        let token = guard.fencing_token().to_string();
        line(&format!(
            "  (lock {} held, fencing token {token})",
            quoted(guard.name())
        ))?;
        self.shell(&format!("set report done --fencing-token {token}"))
            .await?;
        say("The key is now fenced: a write without a token (a stale holder) is refused.")?;
        self.shell("set report stale").await?;
        guard.release().await?;
        line("  (lock released)")?;

        say("Expiry: --px 300 (or --expiry 300ms). The watcher sees the key go.")?;
        let mut session = self.client.observe("session").await?;
        self.shell("set session abc --px 300").await?;
        self.notified(&mut session).await?;
        self.notified(&mut session).await?;

        say("Delete. Reading a missing key exits with status 3.")?;
        self.shell("delete greeting").await?;
        self.notified(&mut greeting).await?;
        self.shell("get greeting").await?;

        say(
            "That's it. Try it yourself: `statestore serve` in one terminal, then\n\
             # `statestore set color blue`, `statestore watch color`, `statestore --help`.",
        )
    }

    /// Prints `$ statestore WORDS` and runs it; a failure is shown with its exit status.
    async fn shell(&self, words: &str) -> Result<(), Failure> {
        line(&format!("$ statestore {words}"))?;
        let port = self.addr.port().to_string();
        let host = self.addr.ip().to_string();
        let argv = std::iter::once("statestore")
            .chain(words.split_whitespace())
            .chain(["--host", &host, "--port", &port, "--no-env"]);
        let cli = Cli::try_parse_from(argv)
            .map_err(|e| Failure::other(format!("tour step {words:?}: {e}")))?;
        // The tour is itself a subcommand, hence the box.
        if let Err(failure) = Box::pin(super::run(cli.command)).await {
            line(&format!(
                "{}   [exit status {}]",
                failure.line(),
                failure.status as u8
            ))?;
        }
        Ok(())
    }

    /// Waits for the next event of `observation` and prints it as `watch` would.
    async fn notified(&self, observation: &mut Observation) -> Result<(), Failure> {
        let key = observation.key().clone();
        match tokio::time::timeout(NOTIFICATION_WAIT, observation.next()).await {
            Ok(Some(event)) => line(&format!("  watch: {}", event_line(&key, &event))),
            Ok(None) => Err(Failure::other("the observation ended")),
            Err(_) => Err(Failure::other(format!(
                "no notification for {} within {NOTIFICATION_WAIT:?}",
                quoted(&key)
            ))),
        }
    }
}

/// A comment line of the transcript, after a blank line.
fn say(text: &str) -> Result<(), Failure> {
    line(&format!("\n# {text}"))
}
