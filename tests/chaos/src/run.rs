//! The chaos run: two rings (an embedded `statestore-server --data-dir` behind a proxy, and
//! Mosquitto with a `statestore-server --broker` behind a proxy), writers of every flavour on
//! each, a fault driver per ring, a memory sampler, then the final reads and the checker.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use statestore::{Client, ConnectOptions};
use statestore_testkit::{rss_kib, Mosquitto, Proxy};
use tokio::process::{Child, Command};

use crate::check;
use crate::procs::ServerProcess;
use crate::record::now_ms;

/// The run's settings (command line of `statestore-chaos run`).
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub duration: Duration,
    pub out: PathBuf,
    pub server_bin: PathBuf,
    pub seed: u64,
    pub call_timeout: Duration,
    /// Extra flavours: name and command (program and leading arguments).
    pub writers: Vec<(String, Vec<String>)>,
    /// Flavours that cannot run here, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Which rings to run (`embedded`, `mosquitto`).
    pub rings: Vec<String>,
    /// Fault kinds not to inject (by name, e.g. `server_sigkill`).
    pub skip_faults: Vec<String>,
}

/// The faults one ring suffers, in the order the driver cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every client link cut at once.
    Cut,
    /// Links cut and new ones refused for a while.
    Outage,
    /// Every chunk delayed in both directions for a while.
    Delay,
    /// `statestore-server --data-dir` killed with SIGKILL and restarted.
    ServerKill,
    /// Mosquitto stopped with SIGTERM (sessions saved) and restarted.
    BrokerRestartKeepingSessions,
    /// Mosquitto killed with SIGKILL, its database removed, restarted.
    BrokerRestartLosingSessions,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Cut => "cut",
            Fault::Outage => "outage",
            Fault::Delay => "delay",
            Fault::ServerKill => "server_sigkill",
            Fault::BrokerRestartKeepingSessions => "mosquitto_restart_persistent",
            Fault::BrokerRestartLosingSessions => "mosquitto_restart_clean",
        }
    }

    /// Whether clients lose their connection (and observations must resync).
    fn disconnects(self) -> bool {
        self != Fault::Delay
    }
}

/// A ring's processes: the state store, and in the Mosquitto ring the broker it attaches to.
struct Backend {
    server: ServerProcess,
    broker: Option<Mosquitto>,
}

struct Ring {
    name: &'static str,
    backend: tokio::sync::Mutex<Backend>,
    proxy: Proxy,
}

impl Ring {
    async fn direct_addr(&self) -> Option<SocketAddr> {
        let backend = self.backend.lock().await;
        match &backend.broker {
            Some(broker) => Some(broker.addr()),
            None => backend.server.addr(),
        }
    }

    async fn pids(&self) -> Vec<(String, u32)> {
        let mut pids = Vec::new();
        let backend = self.backend.lock().await;
        pids.extend(backend.server.pid().map(|p| ("server".into(), p)));
        if let Some(broker) = &backend.broker {
            pids.extend(broker.pid().map(|p| ("mosquitto".into(), p)));
        }
        pids
    }

    fn faults(&self) -> &'static [Fault] {
        match self.name {
            "embedded" => &[Fault::Cut, Fault::Delay, Fault::ServerKill, Fault::Outage],
            _ => &[
                Fault::Cut,
                Fault::BrokerRestartKeepingSessions,
                Fault::Delay,
                Fault::BrokerRestartLosingSessions,
                Fault::Outage,
            ],
        }
    }

    async fn inject(&self, fault: Fault) -> Result<(), String> {
        match fault {
            Fault::Cut => self.proxy.cut(),
            Fault::Outage => {
                self.proxy.refuse(true);
                self.proxy.cut();
                // Longer than a call's timeout (2 s) and most of a lock TTL (3 s): calls time
                // out, renewals fail, some holdings are lost.
                tokio::time::sleep(Duration::from_millis(2500)).await;
                self.proxy.refuse(false);
            }
            Fault::Delay => {
                // A round trip of 1.2 s: some calls time out without any link going down.
                self.proxy.delay(Duration::from_millis(600));
                tokio::time::sleep(Duration::from_millis(3000)).await;
                self.proxy.delay(Duration::ZERO);
            }
            Fault::ServerKill => {
                let mut backend = self.backend.lock().await;
                backend.server.kill_and_restart().await?;
                if backend.broker.is_none() {
                    // The embedded broker listens on a new port after the restart.
                    if let Some(addr) = backend.server.addr() {
                        self.proxy.retarget(addr);
                    }
                }
            }
            Fault::BrokerRestartKeepingSessions | Fault::BrokerRestartLosingSessions => {
                let mut backend = self.backend.lock().await;
                if let Some(mut broker) = backend.broker.take() {
                    let keep = fault == Fault::BrokerRestartKeepingSessions;
                    let (broker, restarted) = off_the_runtime(move || {
                        let restarted = match keep {
                            true => broker.restart_keeping_sessions(),
                            false => broker.restart(),
                        };
                        (broker, restarted)
                    })
                    .await?;
                    backend.broker = Some(broker);
                    restarted.map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    }
}

/// Runs `work`, which blocks (Mosquitto's starts and restarts wait for the process), on
/// tokio's blocking pool. Not with `block_in_place`: that hands the calling worker's place to
/// a new thread and leaves the caller a passing one, and a state store started later from a
/// passing thread dies with it (`procs::die_with_parent` ties the child to the thread).
pub async fn off_the_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("a blocking task failed: {e}"))
}

async fn start_ring(name: &'static str, config: &RunConfig) -> Result<Ring, String> {
    let dir = config.out.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    // --fsync always: an acknowledged persisted write is on disk before its answer leaves, so
    // it survives the SIGKILL (every mode would survive a process kill; `always` also keeps
    // the promise for a power loss, which is what the README promises users). At info level
    // the log shows how many persisted keys each restart brought back and every compaction:
    // the evidence for the lock overlaps after a restart that are still unexplained.
    let persistence = [
        "--data-dir".to_string(),
        dir.join("data").display().to_string(),
        "--fsync".into(),
        "always".into(),
        "--log-level".into(),
        "info".into(),
    ];
    let backend = match name {
        "embedded" => {
            let mut args = vec!["--listen".to_string(), "127.0.0.1:0".into()];
            args.extend(persistence);
            Backend {
                server: ServerProcess::start(&config.server_bin, args, dir.join("server.log"))
                    .await?,
                broker: None,
            }
        }
        "mosquitto" => {
            let files = dir.join("mosquitto");
            let broker = off_the_runtime(move || Mosquitto::start_persistent(&files))
                .await?
                .map_err(|e| e.to_string())?;
            let mut args = vec!["--broker".to_string(), format!("mqtt://{}", broker.addr())];
            args.extend(persistence);
            let server =
                ServerProcess::start(&config.server_bin, args, dir.join("server.log")).await?;
            Backend {
                server,
                broker: Some(broker),
            }
        }
        other => return Err(format!("unknown ring {other:?} (embedded, mosquitto)")),
    };
    let upstream = match &backend.broker {
        Some(broker) => broker.addr(),
        None => backend
            .server
            .addr()
            .ok_or("no address in the ready line")?,
    };
    let proxy = Proxy::start(upstream).await.map_err(|e| e.to_string())?;
    Ok(Ring {
        name,
        backend: tokio::sync::Mutex::new(backend),
        proxy,
    })
}

struct WriterProcess {
    ring: &'static str,
    flavour: String,
    log: PathBuf,
    child: Child,
    pid: Option<u32>,
}

/// One injected fault, for `run.json`.
fn fault_record(ring: &str, fault: Fault, start: u64, error: Option<String>) -> Value {
    json!({
        "ring": ring, "kind": fault.name(), "disconnects": fault.disconnects(),
        "start": start, "end": now_ms(), "error": error,
    })
}

async fn drive_faults(
    ring: Arc<Ring>,
    until: Instant,
    seed: u64,
    skip: Vec<String>,
    records: Arc<Mutex<Vec<Value>>>,
) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let faults: Vec<Fault> = ring
        .faults()
        .iter()
        .copied()
        .filter(|f| !skip.iter().any(|name| name == f.name()))
        .collect();
    if faults.is_empty() {
        return;
    }
    let mut next = rng.usize(..faults.len());
    // Let every writer connect and observe before the first fault.
    tokio::time::sleep(Duration::from_secs(3)).await;
    while Instant::now() + Duration::from_secs(3) < until {
        let fault = faults[next % faults.len()];
        next += 1;
        let start = now_ms();
        let error = ring.inject(fault).await.err();
        eprintln!(
            "chaos: {} {}{}",
            ring.name,
            fault.name(),
            error
                .as_ref()
                .map(|e| format!(" FAILED: {e}"))
                .unwrap_or_default()
        );
        records
            .lock()
            .unwrap()
            .push(fault_record(ring.name, fault, start, error));
        // Time to recover (reconnect, resync) before the next fault.
        tokio::time::sleep(Duration::from_millis(2500 + rng.u64(..1500))).await;
    }
}

fn spawn_writer(
    ring: &'static str,
    proxy: SocketAddr,
    flavour: &str,
    command: &[String],
    config: &RunConfig,
) -> Result<WriterProcess, String> {
    let log = config.out.join(format!("{ring}-{flavour}.jsonl"));
    let stderr = std::fs::File::create(config.out.join(format!("{ring}-{flavour}.stderr")))
        .map_err(|e| e.to_string())?;
    let (program, leading) = command.split_first().ok_or("empty writer command")?;
    let child = crate::procs::die_with_parent(&mut Command::new(program))
        .args(leading)
        .args([
            proxy.ip().to_string(),
            proxy.port().to_string(),
            "chaos/lock".into(),
            "chaos/counter".into(),
            format!("chaos/{flavour}/"),
            config.duration.as_millis().to_string(),
            config.call_timeout.as_millis().to_string(),
            log.display().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{flavour}: cannot start {program}: {e}"))?;
    let pid = child.id();
    Ok(WriterProcess {
        ring,
        flavour: flavour.to_string(),
        log,
        child,
        pid,
    })
}

fn log_has(path: &Path, pred: impl Fn(&Value) -> bool) -> bool {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|v| pred(&v))
}

/// Keys the writers of `ring` wrote (from their logs).
fn written_keys(writers: &[WriterProcess], ring: &str) -> Vec<String> {
    let mut keys = std::collections::BTreeSet::new();
    for writer in writers.iter().filter(|w| w.ring == ring) {
        for line in std::fs::read_to_string(&writer.log)
            .unwrap_or_default()
            .lines()
        {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                if v["t"] == "op" && v["op"] == "set" {
                    if let Some(key) = v["key"].as_str() {
                        keys.insert(key.to_string());
                    }
                }
            }
        }
    }
    keys.into_iter().collect()
}

/// Reads the counter and every written key straight from the ring's broker (no proxy),
/// retrying failures a few times: the faults are over, but a server may still reconnect.
async fn final_state(addr: SocketAddr, keys: &[String]) -> Result<Value, String> {
    let options = ConnectOptions::new(addr.ip().to_string(), addr.port())
        .default_timeout(Duration::from_secs(5));
    let client = Client::connect(options)
        .await
        .map_err(|e| format!("final connect: {e}"))?;
    let mut values = serde_json::Map::new();
    for key in std::iter::once(&"chaos/counter".to_string()).chain(keys) {
        let mut attempts = 0;
        let value = loop {
            match client.get(key.clone()).await {
                Ok(value) => break value,
                Err(error) if attempts < 5 => {
                    attempts += 1;
                    eprintln!("chaos: final read of {key}: {error}; again");
                }
                Err(error) => return Err(format!("final read of {key}: {error}")),
            }
        };
        values.insert(
            key.clone(),
            json!(value.map(|v| String::from_utf8_lossy(&v.value).into_owned())),
        );
    }
    let _ = client.close().await;
    Ok(Value::Object(values))
}

/// Runs the whole thing and returns the checker's verdict (`true`: every promise held).
pub async fn run(config: RunConfig) -> Result<bool, String> {
    std::fs::create_dir_all(&config.out).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut rings = Vec::new();
    for name in &config.rings {
        let name: &'static str = match name.as_str() {
            "embedded" => "embedded",
            "mosquitto" => "mosquitto",
            other => return Err(format!("unknown ring {other:?}")),
        };
        rings.push(Arc::new(start_ring(name, &config).await?));
    }
    let mut flavours: Vec<(String, Vec<String>)> = vec![];
    let me = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .display()
        .to_string();
    for flavour in ["async", "blocking"] {
        flavours.push((
            format!("rust-{flavour}"),
            vec![me.clone(), "writer".into(), flavour.into()],
        ));
    }
    flavours.extend(config.writers.iter().cloned());

    let mut writers = Vec::new();
    for ring in &rings {
        for (flavour, command) in &flavours {
            writers.push(spawn_writer(
                ring.name,
                ring.proxy.addr(),
                flavour,
                command,
                &config,
            )?);
        }
    }
    let writing_ends = Instant::now() + config.duration;
    let faults = Arc::new(Mutex::new(Vec::new()));
    let drivers: Vec<_> = rings
        .iter()
        .enumerate()
        .map(|(i, ring)| {
            tokio::spawn(drive_faults(
                ring.clone(),
                writing_ends,
                config.seed.wrapping_add(i as u64),
                config.skip_faults.clone(),
                faults.clone(),
            ))
        })
        .collect();

    // Memory of every process, every second, until the end.
    let memory = Arc::new(Mutex::new(Vec::new()));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let memory = memory.clone();
        let sampling = sampling.clone();
        let mut targets: Vec<(String, u32)> = writers
            .iter()
            .filter_map(|w| w.pid.map(|p| (format!("{}-{}", w.ring, w.flavour), p)))
            .collect();
        let rings = rings.clone();
        tokio::spawn(async move {
            while sampling.load(std::sync::atomic::Ordering::SeqCst) {
                let mut all = targets.clone();
                for ring in &rings {
                    for (who, pid) in ring.pids().await {
                        all.push((format!("{}-{who}", ring.name), pid));
                    }
                }
                let ts = now_ms();
                {
                    let mut memory = memory.lock().unwrap();
                    for (who, pid) in &all {
                        if let Some(kib) = rss_kib(*pid) {
                            memory.push(json!({"who": who, "ts": ts, "rss_kib": kib}));
                        }
                    }
                }
                targets.retain(|(_, pid)| rss_kib(*pid).is_some());
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };

    for driver in drivers {
        let _ = driver.await;
    }
    for ring in &rings {
        ring.proxy.refuse(false);
        ring.proxy.delay(Duration::ZERO);
    }
    // Wait until every writer has stopped writing (or died).
    let quiet_deadline = writing_ends + Duration::from_secs(60);
    for writer in &mut writers {
        while Instant::now() < quiet_deadline
            && !log_has(&writer.log, |v| v["t"] == "quiet")
            && matches!(writer.child.try_wait(), Ok(None))
        {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    // Writes whose outcome was unknown may still be in a queue somewhere: let them land.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut finals = serde_json::Map::new();
    for ring in &rings {
        let addr = ring
            .direct_addr()
            .await
            .ok_or("no address for the final reads")?;
        let keys = written_keys(&writers, ring.name);
        let state = final_state(addr, &keys).await?;
        finals.insert(ring.name.to_string(), state);
    }
    // Every observation must see the final counter; give notifications time to arrive.
    let seen_deadline = Instant::now() + Duration::from_secs(20);
    for writer in &writers {
        let counter = finals[writer.ring]["chaos/counter"].clone();
        while Instant::now() < seen_deadline
            && !log_has(&writer.log, |v| {
                v["t"] == "event" && v["value"] == counter && v["kind"] != "delete"
            })
        {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    // Release the writers and wait for them to end.
    let mut outcomes = Vec::new();
    for writer in &mut writers {
        drop(writer.child.stdin.take());
    }
    for writer in &mut writers {
        let status = tokio::time::timeout(Duration::from_secs(30), writer.child.wait()).await;
        let (exit, signal, hung) = match status {
            Ok(Ok(status)) => {
                use std::os::unix::process::ExitStatusExt;
                (status.code(), status.signal(), false)
            }
            Ok(Err(_)) => (None, None, false),
            Err(_) => {
                let _ = writer.child.kill().await;
                (None, None, true)
            }
        };
        outcomes.push(json!({
            "ring": writer.ring, "flavour": writer.flavour,
            "log": writer.log.file_name().map(|n| n.to_string_lossy().into_owned()),
            "exit": exit, "signal": signal, "hung_at_exit": hung,
        }));
    }
    sampling.store(false, std::sync::atomic::Ordering::SeqCst);
    let _ = sampler.await;
    for ring in &rings {
        ring.backend.lock().await.server.kill().await;
    }

    let links: BTreeMap<_, _> = rings
        .iter()
        .map(|ring| (ring.name, ring.proxy.accepted()))
        .collect();
    let skipped: BTreeMap<_, _> = config.skipped.iter().cloned().collect();
    let manifest = json!({
        "duration_ms": config.duration.as_millis() as u64,
        "wall_ms": started.elapsed().as_millis() as u64,
        "seed": config.seed,
        "call_timeout_ms": config.call_timeout.as_millis() as u64,
        "writers": outcomes,
        "skipped": skipped,
        "skipped_faults": config.skip_faults,
        "links_accepted": links,
        "faults": *faults.lock().unwrap(),
        "finals": finals,
        "memory": *memory.lock().unwrap(),
    });
    let path = config.out.join("run.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    check::check_dir(&config.out)
}
