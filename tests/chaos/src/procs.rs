//! The real processes the faults hit: `statestore-server` (killed with SIGKILL and restarted
//! on its `--data-dir`) and Mosquitto (restarted with its sessions saved, or forgotten).

use std::fs::OpenOptions;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a process may take to be ready.
const START_DEADLINE: Duration = Duration::from_secs(20);

type Result<T> = std::result::Result<T, String>;

/// Makes the kernel kill the child when this process dies, however it dies: a killed run or
/// test leaves no broker or server behind.
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

/// Mosquitto on a fixed loopback port with persistence on: a restart after SIGTERM resumes
/// every session (it saves them on exit), a restart after SIGKILL with the database removed
/// forgets them.
pub struct MosquittoProcess {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl MosquittoProcess {
    /// Starts Mosquitto on a free port with its files in `dir`.
    pub async fn start(dir: &Path) -> Result<MosquittoProcess> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let port = free_port()?;
        let config = format!(
            "listener {port} 127.0.0.1\n\
             allow_anonymous true\n\
             persistence true\n\
             persistence_location {}/\n\
             autosave_interval 0\n\
             set_tcp_nodelay true\n\
             max_queued_messages 10000\n\
             user root\n\
             log_dest stdout\n\
             log_type error\n\
             log_type warning\n",
            dir.display()
        );
        std::fs::write(dir.join("mosquitto.conf"), config).map_err(|e| e.to_string())?;
        Self::start_configured(dir, port).await
    }

    /// Starts Mosquitto on the configuration `dir/mosquitto.conf` written by the caller, and
    /// waits until `port` (one of its listeners) accepts connections.
    pub async fn start_configured(dir: &Path, port: u16) -> Result<MosquittoProcess> {
        let mut broker = MosquittoProcess {
            port,
            dir: dir.to_path_buf(),
            child: None,
        };
        broker.spawn().await?;
        Ok(broker)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// SIGTERM (Mosquitto saves its sessions), wait, start again: clients resume their
    /// sessions.
    pub async fn restart_keeping_sessions(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = child.id() {
                // SAFETY: plain kill(2) on our own child's pid.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            }
            if tokio::time::timeout(Duration::from_secs(10), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
                return Err("mosquitto did not stop on SIGTERM within 10 s".into());
            }
        }
        self.spawn().await
    }

    /// SIGKILL, remove the saved database, start again: every session is gone.
    pub async fn restart_losing_sessions(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
        let _ = std::fs::remove_file(self.dir.join("mosquitto.db"));
        self.spawn().await
    }

    async fn spawn(&mut self) -> Result<()> {
        let log = append(&self.dir.join("mosquitto.log"))?;
        let mut child = die_with_parent(&mut Command::new(binary()))
            .arg("-c")
            .arg(self.dir.join("mosquitto.conf"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("mosquitto: {e} (apt-get install mosquitto)"))?;
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if TcpStream::connect(self.addr()).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "mosquitto exited with {status}; see {}/mosquitto.log",
                    self.dir.display()
                ));
            }
            if Instant::now() >= deadline {
                let _ = child.kill().await;
                return Err(format!("mosquitto not listening within {START_DEADLINE:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn binary() -> PathBuf {
    let installed = Path::new("/usr/sbin/mosquitto");
    if installed.exists() {
        installed.to_path_buf()
    } else {
        PathBuf::from("mosquitto")
    }
}

fn free_port() -> Result<u16> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Resident memory of a process in KiB (`None` once it is gone).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}
