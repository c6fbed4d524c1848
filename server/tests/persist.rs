//! Crash and restart of the real `statestore-server` binary with `--data-dir`: driven over
//! MQTT with a plain client, killed with SIGKILL, restarted on the same directory.
//! Every acknowledged persisted write must be back (value, version, fencing token,
//! deadline), none half-written; keys without `aio-persistence`, and persisted keys later
//! overwritten without it, deleted or expired, must be gone.

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use support::wire::{bulk, err, hlc, hlc_now, now_ms, resp, Ts, FT_REQUIRED};
use support::{unique, Probe};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_statestore-server");
const WAIT: Duration = Duration::from_secs(20);
const PERSIST: (&str, &str) = ("aio-persistence", "true");
const OK: &[u8] = b"+OK\r\n";
const NIL: &[u8] = b"$-1\r\n";

/// A running server binary.
struct Running {
    child: Child,
    addr: SocketAddr,
}

impl Running {
    async fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(["--listen", "127.0.0.1:0", "--log-level", "warn"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout");
        let line = tokio::time::timeout(WAIT, BufReader::new(stdout).lines().next_line())
            .await
            .expect("ready in time")
            .expect("stdout readable")
            .expect("a ready line");
        let addr = line
            .strip_prefix("statestore-server ready on ")
            .and_then(|rest| rest.strip_suffix(" (embedded broker)"))
            .unwrap_or_else(|| panic!("not a ready line: {line:?}"))
            .parse()
            .expect("an address");
        Running { child, addr }
    }

    async fn with_data(dir: &Path, fsync: &str) -> Running {
        let dir = dir.to_str().expect("a UTF-8 temp dir");
        Running::start(&["--data-dir", dir, "--fsync", fsync]).await
    }

    async fn client(&self) -> Probe {
        Probe::connect(self.addr, &unique("persist")).await
    }

    /// SIGKILL: no chance to flush or clean up.
    async fn kill(mut self) {
        self.child.start_kill().expect("kill sent");
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("dies in time")
            .expect("wait");
        assert!(!status.success());
    }
}

async fn set_persisted(probe: &mut Probe, key: &[u8], value: &[u8]) -> Ts {
    probe
        .request_props(&resp(&[b"SET", key, value]), &[PERSIST])
        .await
        .expect(OK)
        .ts()
}

async fn get(probe: &mut Probe, key: &[u8]) -> support::probe::Reply {
    probe.request(&resp(&[b"GET", key])).await
}

/// The value that burst write `i` stores: long enough to span several disk blocks now and
/// then, and recognisable so that a torn value cannot pass for a whole one.
fn burst_value(i: usize) -> Vec<u8> {
    let mut value = format!("value-{i}-").into_bytes();
    value.resize(100 + (i * 37) % 9_000, b'a' + (i % 26) as u8);
    value
}

#[tokio::test]
async fn acknowledged_persisted_writes_survive_kill_9_and_others_are_gone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Running::with_data(dir.path(), "always").await;
    let mut c = server.client().await;

    let kept_version = set_persisted(&mut c, b"kept", b"value").await;
    c.request(&resp(&[b"SET", b"volatile", b"v"]))
        .await
        .expect(OK);
    // Fenced and persisted: the token must come back with the key.
    let token = hlc_now("locker");
    c.request_props(
        &resp(&[b"SET", b"fenced", b"v1"]),
        &[PERSIST, ("__ft", &token)],
    )
    .await
    .expect(OK);
    // A deadline far away is kept.
    c.request_props(
        &resp(&[b"SET", b"expires-later", b"v", b"PX", b"3600000"]),
        &[PERSIST],
    )
    .await
    .expect(OK);
    // Persisted, then no longer: each must stay gone.
    set_persisted(&mut c, b"demoted", b"v").await;
    c.request(&resp(&[b"SET", b"demoted", b"v2"]))
        .await
        .expect(OK);
    set_persisted(&mut c, b"deleted", b"v").await;
    c.request(&resp(&[b"DEL", b"deleted"]))
        .await
        .expect(b":1\r\n");
    set_persisted(&mut c, b"vdeleted", b"v").await;
    c.request(&resp(&[b"VDEL", b"vdeleted", b"v"]))
        .await
        .expect(b":1\r\n");
    c.request(&resp(&[b"KEYNOTIFY", b"expired"]))
        .await
        .expect(OK);
    c.request_props(&resp(&[b"SET", b"expired", b"v", b"PX", b"1"]), &[PERSIST])
        .await
        .expect(OK);
    // Wait for the expiry itself (its DELETE notification), not for time to pass.
    while c.next_notification().await.payload[..] != resp(&[b"NOTIFY", b"DELETE"])[..] {}
    // A version from the future (within the skew): versions after the restart must still
    // be greater.
    let future = c
        .request_props(
            &resp(&[b"SET", b"future", b"v"]),
            &[PERSIST, ("__ts", &hlc(now_ms() + 50_000, 0, "c"))],
        )
        .await
        .expect(OK)
        .ts();
    server.kill().await;

    let server = Running::with_data(dir.path(), "always").await;
    let mut c = server.client().await;
    let kept = get(&mut c, b"kept").await;
    kept.expect(&bulk(b"value"));
    assert_eq!(kept.ts(), kept_version, "the version is kept");
    for gone in [
        &b"volatile"[..],
        b"demoted",
        b"deleted",
        b"vdeleted",
        b"expired",
    ] {
        get(&mut c, gone).await.expect(NIL);
    }
    get(&mut c, b"expires-later").await.expect(&bulk(b"v"));
    get(&mut c, b"fenced").await.expect(&bulk(b"v1"));
    c.request(&resp(&[b"SET", b"fenced", b"v2"]))
        .await
        .expect(&err(FT_REQUIRED));
    c.request_props(&resp(&[b"SET", b"fenced", b"v2"]), &[("__ft", &token)])
        .await
        .expect(OK);
    let after = c
        .request(&resp(&[b"SET", b"after", b"v"]))
        .await
        .expect(OK)
        .ts();
    assert!(
        after > future,
        "version {after:?} not above the persisted {future:?}"
    );
    server.kill().await;
}

/// Many persisted writes in flight when the server is killed: those acknowledged are all
/// back, the others are either whole or absent. In every fsync mode (a killed process
/// loses nothing the kernel has; the modes differ on a power loss only).
#[tokio::test]
async fn writes_in_flight_at_the_kill_are_whole_or_absent() {
    for fsync in ["always", "interval", "never"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let server = Running::with_data(dir.path(), fsync).await;
        let mut c = server.client().await;
        const WRITES: usize = 2_000;
        let mut pending = HashMap::new();
        for i in 0..WRITES {
            let mut send = c.envelope();
            send.properties.push((PERSIST.0.into(), PERSIST.1.into()));
            let correlation = send.correlation.clone().expect("correlation data");
            pending.insert(correlation, i);
            let key = format!("burst:{i}");
            c.publish(&resp(&[b"SET", key.as_bytes(), &burst_value(i)]), send)
                .await;
        }
        let mut acknowledged = Vec::new();
        // Kill early, while most writes are still queued or being stored.
        while acknowledged.len() < WRITES / 40 {
            let reply = c.next_reply().await;
            reply.expect(OK);
            let correlation = reply.correlation.clone().unwrap_or_default();
            acknowledged.push(pending.remove(&correlation).expect("a reply to a write"));
        }
        server.kill().await;

        let server = Running::with_data(dir.path(), fsync).await;
        let mut c = server.client().await;
        for &i in &acknowledged {
            let key = format!("burst:{i}");
            get(&mut c, key.as_bytes())
                .await
                .expect(&bulk(&burst_value(i)));
        }
        let mut whole = 0;
        for &i in pending.values() {
            let key = format!("burst:{i}");
            let reply = get(&mut c, key.as_bytes()).await;
            if reply.payload[..] != *NIL {
                reply.expect(&bulk(&burst_value(i)));
                whole += 1;
            }
        }
        eprintln!(
            "fsync {fsync}: {} acknowledged before the kill, {whole} of the {} others made it",
            acknowledged.len(),
            pending.len()
        );
        server.kill().await;
    }
}

#[tokio::test]
async fn without_a_data_dir_the_option_is_accepted_and_ignored() {
    let server = Running::start(&[]).await;
    let mut c = server.client().await;
    set_persisted(&mut c, b"k", b"v").await;
    get(&mut c, b"k").await.expect(&bulk(b"v"));
    server.kill().await;
    let server = Running::start(&[]).await;
    let mut c = server.client().await;
    get(&mut c, b"k").await.expect(NIL);
    server.kill().await;
}

#[tokio::test]
async fn a_clean_stop_and_many_restarts_keep_the_latest_values() {
    let dir = tempfile::tempdir().expect("temp dir");
    for round in 0..3u8 {
        let server = Running::with_data(dir.path(), "interval").await;
        let mut c = server.client().await;
        if round > 0 {
            get(&mut c, b"counter")
                .await
                .expect(&bulk(&[b'0' + round - 1]));
        }
        set_persisted(&mut c, b"counter", &[b'0' + round]).await;
        let pid = server.child.id().expect("running") as libc::pid_t;
        // SAFETY: kill(2) with the pid of our own child process and a valid signal number.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let mut child = server.child;
        let status = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("stops in time")
            .expect("wait");
        assert!(status.success(), "exit status {status}");
    }
}

#[tokio::test]
async fn a_second_server_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Running::with_data(dir.path(), "always").await;
    let output = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .await
        .expect("runs");
    assert!(!output.status.success());
    assert!(
        output.stdout.is_empty(),
        "the second server said it was ready"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("in use"), "{stderr}");
    first.kill().await;
}

#[tokio::test]
async fn help_documents_the_options_and_fsync_needs_a_data_dir() {
    let output = Command::new(BIN)
        .arg("--help")
        .output()
        .await
        .expect("runs");
    let help = String::from_utf8_lossy(&output.stdout);
    for option in [
        "--data-dir",
        "--fsync",
        "--fsync-interval",
        "always",
        "interval",
        "never",
    ] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
    for bad in [
        &["--fsync", "never"][..],
        &["--data-dir", "d", "--fsync", "sometimes"],
    ] {
        let output = Command::new(BIN).args(bad).output().await.expect("runs");
        assert!(!output.status.success(), "{bad:?} was accepted");
    }
}
