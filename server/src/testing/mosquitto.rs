//! A real Mosquitto process on a free loopback port, for tests.

use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Where `scripts/setup.sh` (apt package `mosquitto`) installs the broker; `PATH` is tried
/// when it is not there.
const MOSQUITTO: &str = "/usr/sbin/mosquitto";
/// How long the broker may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// Pause between connection attempts while waiting for the broker.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// A Mosquitto process listening on `127.0.0.1:<free port>` with TCP_NODELAY on, anonymous
/// access and no persistence. Killed on drop.
#[derive(Debug)]
pub struct Mosquitto {
    port: u16,
    dir: TempDir,
    child: Option<Child>,
}

impl Mosquitto {
    /// Starts a broker on a free loopback port and waits until it accepts connections.
    pub fn start() -> io::Result<Mosquitto> {
        let port = free_port()?;
        let dir = tempfile::Builder::new()
            .prefix("statestore-mosquitto")
            .tempdir()?;
        write_config(dir.path(), port)?;
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

    /// Kills the process and starts it again on the same port (for reconnect tests). All
    /// sessions are lost, as after a real broker restart without persistence.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
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
        let log = std::fs::File::create(self.dir.path().join("mosquitto.log"))?;
        let mut child = Command::new(binary())
            .arg("-c")
            .arg(self.dir.path().join("mosquitto.conf"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
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
        let log =
            std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default();
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

/// A port the OS considers free right now (it could be taken before Mosquitto binds it;
/// the start then fails with Mosquitto's log, and a rerun picks another port).
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

fn write_config(dir: &Path, port: u16) -> io::Result<()> {
    let mut file = std::fs::File::create(dir.join("mosquitto.conf"))?;
    // `user root`: started as root, Mosquitto would otherwise switch to user `mosquitto`,
    // who cannot read this private temp dir. Ignored when not started as root.
    write!(
        file,
        "listener {port} 127.0.0.1\n\
         allow_anonymous true\n\
         persistence false\n\
         set_tcp_nodelay true\n\
         user root\n\
         log_dest stdout\n\
         log_type error\n\
         log_type warning\n"
    )
}
