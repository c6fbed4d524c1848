//! `statestore-server` as a child process, killed with SIGKILL and restarted on its
//! `--data-dir` by the faults (Mosquitto, restarted with its sessions saved or forgotten, is
//! the test kit's).

use std::fs::OpenOptions;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a process may take to be ready.
const START_DEADLINE: Duration = Duration::from_secs(20);

type Result<T> = std::result::Result<T, String>;

/// Makes the kernel kill the child when this process dies, however it dies: a killed run or
/// test leaves no server or writer behind. The kernel ties the signal to the thread that
/// spawns the child: spawn from the runtime's worker threads, which live as long as the run
/// (never from a blocking task or inside `block_in_place`).
pub fn die_with_parent(command: &mut Command) -> &mut Command {
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

fn append(path: &Path) -> Result<std::fs::File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `statestore-server` as a child process.
pub struct ServerProcess {
    binary: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
    addr: Option<SocketAddr>,
}

impl ServerProcess {
    /// Starts `binary ARGS` and waits for its ready line. `--listen 127.0.0.1:0` servers get a
    /// new port at each start: [`ServerProcess::addr`] says which.
    pub async fn start(binary: &Path, args: Vec<String>, log: PathBuf) -> Result<ServerProcess> {
        let mut server = ServerProcess {
            binary: binary.to_path_buf(),
            args,
            log,
            child: None,
            addr: None,
        };
        server.spawn().await?;
        Ok(server)
    }

    /// The embedded broker's address (embedded mode).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// SIGKILL, then a new process on the same arguments (and data directory).
    pub async fn kill_and_restart(&mut self) -> Result<()> {
        self.kill().await;
        self.spawn().await
    }

    /// SIGKILL and reap.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    async fn spawn(&mut self) -> Result<()> {
        let mut child = die_with_parent(&mut Command::new(&self.binary))
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(append(&self.log)?)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", self.binary.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(START_DEADLINE, lines.next_line())
            .await
            .map_err(|_| format!("statestore-server not ready within {START_DEADLINE:?}"))?
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("statestore-server exited; see {}", self.log.display()))?;
        // "statestore-server ready on 127.0.0.1:PORT (embedded broker)"
        self.addr = line
            .strip_prefix("statestore-server ready on ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|addr| addr.parse().ok());
        if !line.starts_with("statestore-server ready") {
            return Err(format!("unexpected first line {line:?}"));
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child = Some(child);
        Ok(())
    }
}
