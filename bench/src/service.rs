//! The service side of a scenario (broker, echo responder or state store server) runs in a
//! child process, so that the measuring process holds only the requester or client: its CPU
//! time and memory are the client's alone.
//!
//! The child is this benchmark's own binary, `statestore-bench serve ...`. It prints
//! `READY <address>` once clients can connect there, and exits when its stdin closes. It
//! allocates with mimalloc, as the server's binaries do ([`crate::allocator`]).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use statestore_server::{Mode, Server, ServerConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::echo::Echo;

/// What answers the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Responder {
    /// The echo responder (the floor), next to an idle state store.
    Echo,
    /// The state store server.
    Server,
}

/// Where the service side runs: an embedded broker, or a broker already listening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceSpec {
    /// What answers.
    pub responder: Responder,
    /// An external broker (Mosquitto); `None` starts the server's embedded broker.
    pub broker: Option<SocketAddr>,
}

/// How long the child may take to get ready.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the child may take to exit once told to.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// A running service-side child process.
pub struct ServiceProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Kept open: the child must never write into a closed pipe.
    _stdout: BufReader<tokio::process::ChildStdout>,
    addr: SocketAddr,
}

impl ServiceProcess {
    /// Starts `exe serve ...` for `spec` and waits until it is ready.
    pub async fn spawn(exe: &Path, spec: ServiceSpec) -> Result<ServiceProcess, String> {
        let mut command = Command::new(exe);
        command
            .env(crate::allocator::SERVICE_ALLOCATOR_VAR, "1")
            .arg("serve")
            .arg("--responder")
            .arg(match spec.responder {
                Responder::Echo => "echo",
                Responder::Server => "server",
            });
        if let Some(broker) = spec.broker {
            command.arg("--broker").arg(broker.to_string());
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or("the service process has no stdout")?;
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        match tokio::time::timeout(READY_TIMEOUT, read).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("reading the service process: {e}")),
            Err(_) => {
                return Err(format!(
                    "the service process was not ready within {READY_TIMEOUT:?}"
                ))
            }
        }
        let addr = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("the service process did not start: {:?}", line.trim()))?;
        Ok(ServiceProcess {
            child,
            stdin,
            _stdout: stdout,
            addr,
        })
    }

    /// Where requesters connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Tells the child to exit and waits for it (killing it if it does not).
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(EXIT_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// The child's side: starts the service, prints `READY <address>`, serves until stdin closes.
pub async fn serve(spec: ServiceSpec) -> Result<(), String> {
    let config = ServerConfig {
        mode: match spec.broker {
            Some(broker) => Mode::External {
                host: broker.ip().to_string(),
                port: broker.port(),
            },
            None => Mode::default(),
        },
        ..ServerConfig::default()
    };
    // The floor's broker is the server's own embedded broker (the server idles on the invoke
    // topic); on an external broker the echo responder needs no server.
    let (server, addr) = match spec.broker {
        Some(broker) if spec.responder == Responder::Echo => (None, broker),
        _ => {
            let server = Server::start(config)
                .await
                .map_err(|e| format!("cannot start the state store server: {e}"))?;
            let addr = spec.broker.unwrap_or_else(|| server.local_addr());
            (Some(server), addr)
        }
    };
    let echo = match spec.responder {
        Responder::Echo => Some(Echo::start(addr).await?),
        Responder::Server => None,
    };
    println!("READY {addr}");
    let responder = async move {
        match echo {
            Some(echo) => echo.run().await,
            None => std::future::pending().await,
        }
    };
    let result = tokio::select! {
        failure = responder => Err(failure),
        () = stdin_closed() => Ok(()),
    };
    if let Some(server) = server {
        server.shutdown().await;
    }
    result
}

async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buffer = [0u8; 64];
    while matches!(stdin.read(&mut buffer).await, Ok(n) if n > 0) {}
}
