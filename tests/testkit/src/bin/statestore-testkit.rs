//! `statestore-testkit serve [embedded|mosquitto|mosquitto-alone]`: the test kit's servers for
//! the Python, Node and C suites, started the way the Rust tests start them
//! ([`statestore_testkit::embedded`], [`statestore_testkit::on_mosquitto`],
//! [`statestore_testkit::Mosquitto`]), each on a free loopback port.
//!
//! It prints one line once clients can connect, `ready on 127.0.0.1:PORT` (PORT: the embedded
//! broker's, or Mosquitto's), then serves until its standard input ends: the test process
//! holds the other end, so the servers end with it however it ends. A line `restart` on
//! standard input restarts Mosquitto on the same port, losing its sessions (as a crash does),
//! and is answered `restarted` once it accepts connections again; the state store reconnects
//! by itself. For the embedded server, `stop` shuts it down (answered `stopped`: its clients'
//! connections are gone) and `start` starts it again on the same port (answered `started`).
//! `leftover CLIENT_ID` takes over the session the broker kept for a state store client that
//! has gone and answers `leftover none`, or `leftover TOPIC` when the session still held a
//! subscription to one of the client's topics ([`statestore_testkit::leftover_subscription`]).

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use statestore_server::{Mode, Server, ServerConfig};
use statestore_testkit::Mosquitto;

const USAGE: &str = "usage: statestore-testkit serve [embedded|mosquitto|mosquitto-alone]
  embedded         the state store on its embedded broker
  mosquitto        Mosquitto, with the state store attached to it
  mosquitto-alone  Mosquitto without a state store (requests get no answer)
prints `ready on 127.0.0.1:PORT`, serves until standard input ends; `restart` restarts Mosquitto,
`stop` and `start` stop and start the embedded server on the same port, `leftover CLIENT_ID`
tells whether the session kept for a client that has gone still holds its subscriptions";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["serve"] => "embedded",
        ["serve", kind @ ("embedded" | "mosquitto" | "mosquitto-alone")] => kind,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(kind) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("statestore-testkit serve {kind}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn serve(kind: &str) -> io::Result<()> {
    let runtime = statestore_testkit::host();
    let mut broker = if kind == "embedded" {
        None
    } else {
        Some(Mosquitto::start().map_err(|error| {
            io::Error::other(format!(
                "cannot start mosquitto (scripts/setup.sh installs it): {error}"
            ))
        })?)
    };
    let mode = match &broker {
        None => Some(Mode::default()),
        Some(_) if kind == "mosquitto-alone" => None,
        Some(broker) => Some(Mode::External {
            host: broker.addr().ip().to_string(),
            port: broker.port(),
        }),
    };
    let mut server = match mode {
        None => None,
        Some(mode) => {
            let config = ServerConfig {
                mode,
                ..ServerConfig::default()
            };
            let started = runtime.block_on(Server::start(config));
            Some(started.map_err(|error| io::Error::other(format!("the state store: {error}")))?)
        }
    };
    // Clients connect to the broker: Mosquitto when there is one, else the embedded one.
    let addr = broker
        .as_ref()
        .map(Mosquitto::addr)
        .or(server.as_ref().map(Server::local_addr))
        .ok_or_else(|| io::Error::other("neither a broker nor a server started"))?;
    let mut out = io::stdout().lock();
    writeln!(out, "ready on {addr}")?;
    out.flush()?;
    for line in io::stdin().lock().lines() {
        match (line?.trim(), broker.as_mut()) {
            ("restart", Some(broker)) => {
                broker.restart()?;
                writeln!(out, "restarted")?;
            }
            ("stop", None) => {
                if let Some(server) = server.take() {
                    runtime.block_on(server.shutdown());
                }
                writeln!(out, "stopped")?;
            }
            ("start", None) if server.is_none() => {
                let config = ServerConfig {
                    mode: Mode::Embedded { listen: addr },
                    ..ServerConfig::default()
                };
                let started = runtime.block_on(Server::start(config));
                server = Some(started.map_err(|error| {
                    io::Error::other(format!("the state store again on {addr}: {error}"))
                })?);
                writeln!(out, "started")?;
            }
            (command, _) if command.starts_with("leftover ") => {
                let client_id = command["leftover ".len()..].trim();
                match runtime.block_on(statestore_testkit::leftover_subscription(addr, client_id)) {
                    Ok(None) => writeln!(out, "leftover none")?,
                    Ok(Some(topic)) => writeln!(out, "leftover {topic}")?,
                    Err(error) => writeln!(out, "error: leftover {client_id}: {error}")?,
                }
            }
            ("", _) => continue,
            (other, _) => writeln!(
                out,
                "error: {other:?}: the commands are `restart` (with mosquitto), `stop` and \
                 `start` (embedded), `leftover CLIENT_ID`"
            )?,
        }
        out.flush()?;
    }
    if let Some(server) = server {
        runtime.block_on(server.shutdown());
    }
    Ok(())
}
