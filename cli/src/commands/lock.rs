//! `lock`: run a command while holding a lock, and stop it if the lock is lost.

use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use statestore::lease::{Lock, LockGuard, Loss, LossReason};
use statestore::{Client, Error};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::{closing, connect};
use crate::args::LockArgs;
use crate::exit::{Failure, Status};
use crate::input::arg_bytes;
use crate::output::quoted;

/// Environment variable with the fencing token of the holding.
pub const TOKEN_VARIABLE: &str = "STATESTORE_FENCING_TOKEN";
/// Environment variable with the lock's name.
pub const NAME_VARIABLE: &str = "STATESTORE_LOCK";

/// `statestore lock`.
pub async fn run(args: LockArgs) -> Result<ExitCode, Failure> {
    // Set up before the command starts so that no signal can kill us while it runs.
    let signals = Signals::new()?;
    let client = connect(&args.connection).await?;
    let result = hold_and_run(&client, &args, signals).await;
    closing(client, result).await
}

async fn hold_and_run(
    client: &Client,
    args: &LockArgs,
    mut signals: Signals,
) -> Result<ExitCode, Failure> {
    let name = arg_bytes(&args.name);
    let mut lock = Lock::new(client, name.clone(), args.ttl)?;
    if let Some(timeout) = args.connection.timeout {
        lock = lock.timeout(timeout);
    }
    let acquired = tokio::select! {
        acquired = lock.lock() => acquired,
        signal = signals.next() => {
            return Err(Failure::new(
                Status::Interrupted,
                format!("interrupted by signal {signal} while waiting for lock {}", quoted(&name)),
            ));
        }
    };
    let guard = acquired.map_err(|error| match error {
        Error::Timeout(waited) => Failure::new(
            Status::Timeout,
            format!(
                "lock {} not acquired within {}",
                quoted(&name),
                humantime::format_duration(waited)
            ),
        ),
        error => Failure::from(error).context(format!("lock {}", quoted(&name))),
    })?;
    let mut child = match spawn(args, &guard) {
        Ok(child) => child,
        Err(failure) => {
            release(guard).await;
            return Err(failure);
        }
    };
    loop {
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(|e| Failure::other(format!("waiting for the command: {e}")))?;
                release(guard).await;
                return Ok(exit_code(status));
            }
            loss = lost(&guard) => {
                let ended = stop(&mut child, args.kill_after).await;
                let loss = with_holder(client, &guard, loss).await;
                return Err(Failure::new(
                    Status::LockLost,
                    format!(
                        "lock {} lost while the command ran ({loss}); the command was sent \
                         SIGTERM{ended}",
                        quoted(&name)
                    ),
                ));
            }
            signal = signals.next() => {
                // The terminal sends SIGINT to the command as well.
                if signal != libc::SIGINT {
                    send(&child, signal);
                }
            }
        }
    }
}

fn spawn(args: &LockArgs, guard: &LockGuard) -> Result<Child, Failure> {
    let (program, arguments) = args
        .command
        .split_first()
        .ok_or_else(|| Failure::new(Status::Usage, "no command given after --"))?;
    Command::new(program)
        .args(arguments)
        .env(TOKEN_VARIABLE, guard.fencing_token().to_string())
        .env(NAME_VARIABLE, OsStr::from_bytes(guard.name()))
        .spawn()
        .map_err(|error| {
            let status = match error.kind() {
                ErrorKind::NotFound => Status::CommandNotFound,
                _ => Status::CannotExecute,
            };
            Failure::new(
                status,
                format!("cannot run {}: {error}", program.to_string_lossy()),
            )
        })
}

/// The loss of the lock; never resolves while it is held (a released guard is not lost).
async fn lost(guard: &LockGuard) -> Loss {
    match guard.lost().await {
        Some(loss) => loss,
        None => std::future::pending().await,
    }
}

/// `loss` with the name of the holder that took the lock over. The library declares a
/// takeover at once and reads the new holder afterwards: use its answer if it came, else
/// read the holder now (the command is stopped already, so this delays nothing).
async fn with_holder(client: &Client, guard: &LockGuard, loss: Loss) -> Loss {
    if loss.reason != LossReason::TakenOver || loss.holder.is_some() {
        return loss;
    }
    if let Some(known) = guard.state().loss().filter(|l| l.holder.is_some()) {
        return known.clone();
    }
    match client.get(guard.name().clone()).await {
        Ok(Some(value)) => Loss {
            holder: Some(value.value),
            ..loss
        },
        _ => loss,
    }
}

/// Sends SIGTERM, then SIGKILL if the command outlives `grace`; says how it ended.
async fn stop(child: &mut Child, grace: Duration) -> &'static str {
    send(child, libc::SIGTERM);
    if let Ok(Ok(_)) = tokio::time::timeout(grace, child.wait()).await {
        return "";
    }
    // Killing fails only if the command is gone already.
    let _ = child.kill().await;
    " and, still running after --kill-after, SIGKILL"
}

fn send(child: &Child, signal: libc::c_int) {
    // No id: the command has been reaped, there is nothing to signal.
    let Some(pid) = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok()) else {
        return;
    };
    // SAFETY: kill(2) has no memory effects; `pid` is our child, not yet reaped, so the id
    // cannot belong to another process.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Releases the lock after the command; a failure is worth a warning, not the status, which
/// is the command's (the lock expires on its own after its TTL).
async fn release(guard: LockGuard) {
    let name = quoted(guard.name());
    if let Err(error) = guard.release().await {
        eprintln!("statestore: warning: releasing lock {name}: {error}");
    }
}

/// The status a shell would report for the command.
fn exit_code(status: ExitStatus) -> ExitCode {
    let code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The signals the tool handles: they end the wait for the lock; while the command runs,
/// SIGTERM and SIGHUP are passed on to it and SIGINT is only kept from killing the tool.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    fn new() -> Result<Self, Failure> {
        let handle =
            |kind| signal(kind).map_err(|e| Failure::other(format!("cannot handle signals: {e}")));
        Ok(Self {
            interrupt: handle(SignalKind::interrupt())?,
            terminate: handle(SignalKind::terminate())?,
            hangup: handle(SignalKind::hangup())?,
        })
    }

    /// The next signal received.
    async fn next(&mut self) -> libc::c_int {
        tokio::select! {
            _ = self.interrupt.recv() => libc::SIGINT,
            _ = self.terminate.recv() => libc::SIGTERM,
            _ = self.hangup.recv() => libc::SIGHUP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_what_a_shell_reports() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), ExitCode::from(3));
        assert_eq!(
            exit_code(ExitStatus::from_raw(libc::SIGKILL)),
            ExitCode::from(137)
        );
    }
}
