//! A real Mosquitto process on a free loopback port.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::process::{spawn_tied, wait_or_kill};

/// Where `scripts/setup.sh` (apt package `mosquitto`) installs the broker; `PATH` is tried
/// when it is not there.
const MOSQUITTO: &str = "/usr/sbin/mosquitto";
/// How long the broker may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// Pause between connection attempts while waiting for the broker: it says nothing when its
/// listener is open, so readiness is a connection that succeeds.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long the broker may take to save its sessions and end after SIGTERM.
const STOP_DEADLINE: Duration = Duration::from_secs(10);
/// Its configuration, log and saved sessions, in its folder.
const CONFIG: &str = "mosquitto.conf";
const LOG: &str = "mosquitto.log";
const SESSIONS: &str = "mosquitto.db";

/// A Mosquitto process listening on `127.0.0.1:<port>` with TCP_NODELAY on and anonymous
/// access; killed on drop, and with the process that started it.
///
/// [`Mosquitto::start`] keeps no sessions (a restart loses them all, as a broker without
/// persistence does); [`Mosquitto::start_persistent`] saves them when asked to stop
/// ([`Mosquitto::restart_keeping_sessions`]); [`Mosquitto::start_configured`] runs a
/// configuration of the caller's (several listeners, TLS, passwords).
#[derive(Debug)]
pub struct Mosquitto {
    port: u16,
    dir: Folder,
    child: Option<Child>,
}

/// Where the broker's files live: a temporary folder it owns, or one of the caller's.
#[derive(Debug)]
enum Folder {
    Temporary(TempDir),
    Given(PathBuf),
}

impl Folder {
    fn path(&self) -> &Path {
        match self {
            Folder::Temporary(dir) => dir.path(),
            Folder::Given(path) => path,
        }
    }
}

impl Mosquitto {
    /// Starts a broker without persistence on a free port, with its files in a temporary
    /// folder, and waits until it accepts connections.
    pub fn start() -> io::Result<Mosquitto> {
        let dir = tempfile::Builder::new()
            .prefix("statestore-mosquitto")
            .tempdir()?;
        let port = crate::free_port()?;
        write_config(dir.path(), port, None)?;
        Mosquitto::launch(port, Folder::Temporary(dir))
    }

    /// Starts a broker on a free port that keeps its sessions in `dir` (created if missing),
    /// saved when it is asked to stop: [`Mosquitto::restart_keeping_sessions`] resumes every
    /// session, [`Mosquitto::restart`] forgets them.
    pub fn start_persistent(dir: &Path) -> io::Result<Mosquitto> {
        std::fs::create_dir_all(dir)?;
        let port = crate::free_port()?;
        write_config(dir, port, Some(dir))?;
        Mosquitto::launch(port, Folder::Given(dir.to_path_buf()))
    }

    /// Starts a broker on the configuration `dir/mosquitto.conf` that the caller wrote, and
    /// waits until `port` (one of its listeners) accepts connections.
    pub fn start_configured(dir: &Path, port: u16) -> io::Result<Mosquitto> {
        Mosquitto::launch(port, Folder::Given(dir.to_path_buf()))
    }

    fn launch(port: u16, dir: Folder) -> io::Result<Mosquitto> {
        let mut broker = Mosquitto {
            port,
            dir,
            child: None,
        };
        broker.spawn()?;
        Ok(broker)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the process (SIGKILL) and starts it again on the same port: every session is
    /// lost (saved ones too), as after a crash of a broker without persistence. Clients see
    /// their connection drop.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        match std::fs::remove_file(self.dir.path().join(SESSIONS)) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
            _ => {}
        }
        self.spawn()
    }

    /// Asks the process to stop (SIGTERM: a persistent broker saves its sessions), waits for
    /// it, and starts it again on the same port: clients resume their sessions. Fails if it
    /// has not ended within 10 s (it is then killed, and not started again).
    pub fn restart_keeping_sessions(&mut self) -> io::Result<()> {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on our own child, not reaped yet.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            if !wait_or_kill(&mut child, STOP_DEADLINE) {
                return Err(io::Error::other(format!(
                    "mosquitto on port {} did not stop on SIGTERM within {STOP_DEADLINE:?}",
                    self.port
                )));
            }
        }
        self.spawn()
    }

    /// Kills the process (clients see the connection drop).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn spawn(&mut self) -> io::Result<()> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(LOG))?;
        let mut command = Command::new(binary());
        command
            .arg("-c")
            .arg(self.dir.path().join(CONFIG))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut child = spawn_tied(command)
            .map_err(|error| io::Error::new(error.kind(), format!("mosquitto: {error}")))?;
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if TcpStream::connect(self.addr()).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if let Some(status) = child.try_wait()? {
                return Err(self.failure(format!("mosquitto exited with {status}")));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(self.failure(format!(
                    "mosquitto did not accept connections within {START_DEADLINE:?}"
                )));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    fn failure(&self, what: String) -> io::Error {
        let log = std::fs::read_to_string(self.dir.path().join(LOG)).unwrap_or_default();
        io::Error::other(format!("{what} on port {}; its log:\n{log}", self.port))
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        self.stop();
    }
}

fn binary() -> PathBuf {
    let installed = Path::new(MOSQUITTO);
    if installed.exists() {
        installed.to_path_buf()
    } else {
        PathBuf::from("mosquitto")
    }
}

/// Writes the configuration of a broker on `port`, keeping its sessions in `sessions` if set.
fn write_config(dir: &Path, port: u16, sessions: Option<&Path>) -> io::Result<()> {
    let mut file = std::fs::File::create(dir.join(CONFIG))?;
    // `user root`: started as root, Mosquitto would otherwise switch to user `mosquitto`,
    // who cannot read a private temporary folder. Ignored when not started as root.
    write!(
        file,
        "listener {port} 127.0.0.1\n\
         allow_anonymous true\n\
         set_tcp_nodelay true\n\
         user root\n\
         log_dest stdout\n\
         log_type error\n\
         log_type warning\n"
    )?;
    match sessions {
        None => writeln!(file, "persistence false"),
        // Saved only when it stops: a SIGKILL loses what changed since the start. Resumed
        // sessions bring their queued messages back, hence the larger queue.
        Some(dir) => write!(
            file,
            "persistence true\n\
             persistence_location {}/\n\
             autosave_interval 0\n\
             max_queued_messages 10000\n",
            dir.display()
        ),
    }
}
