//! The `statestore-server` binary: starts, prints its one ready line, serves, and exits
//! cleanly on SIGTERM and SIGINT.

mod support;

use std::process::Stdio;
use std::time::Duration;

use support::{unique, Probe};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_statestore-server");
const WAIT: Duration = Duration::from_secs(20);

type Stdout = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

async fn start(args: &[&str]) -> (Child, String, Stdout) {
    start_with(args, Stdio::null()).await
}

/// [`start`] with the binary's standard error (its log) going to `stderr`.
async fn start_with(args: &[&str], stderr: Stdio) -> (Child, String, Stdout) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("ready in time")
        .expect("stdout readable")
        .expect("a ready line");
    (child, line, lines)
}

fn address(line: &str, kind: &str) -> std::net::SocketAddr {
    let rest = line
        .strip_prefix("statestore-server ready on ")
        .unwrap_or_else(|| panic!("not a ready line: {line:?}"));
    let addr = rest
        .strip_suffix(&format!(" ({kind})"))
        .unwrap_or_else(|| panic!("not a {kind} ready line: {line:?}"));
    addr.parse().expect("an address")
}

async fn serves(addr: std::net::SocketAddr) {
    Probe::connect(addr, &unique("bin")).await.serves().await;
}

async fn stops_cleanly_on(mut child: Child, mut stdout: Stdout, signal: libc::c_int) {
    let pid = child.id().expect("running") as libc::pid_t;
    // SAFETY: kill(2) with the pid of our own child process and a valid signal number.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits in time")
        .expect("wait");
    assert!(status.success(), "exit status {status}");
    // The ready line was the only line on stdout.
    assert_eq!(stdout.next_line().await.expect("stdout readable"), None);
}

#[tokio::test]
async fn embedded_binary_serves_and_stops_on_sigterm() {
    let (child, line, stdout) = start(&["--listen", "127.0.0.1:0", "--log-level", "warn"]).await;
    serves(address(&line, "embedded broker")).await;
    stops_cleanly_on(child, stdout, libc::SIGTERM).await;
}

#[tokio::test]
async fn port_is_a_shorthand_for_a_loopback_listen_address() {
    let (child, line, stdout) = start(&["--port", "0", "--log-level", "warn"]).await;
    let addr = address(&line, "embedded broker");
    assert_eq!(addr.ip(), std::net::Ipv4Addr::LOCALHOST);
    assert_ne!(addr.port(), 0);
    serves(addr).await;
    stops_cleanly_on(child, stdout, libc::SIGTERM).await;
}

#[tokio::test]
async fn external_binary_serves_and_stops_on_sigint() {
    let broker = statestore_testkit::Mosquitto::start().expect("mosquitto");
    let url = format!("mqtt://127.0.0.1:{}", broker.port());
    let (child, line, stdout) = start(&[
        "--broker",
        &url,
        "--max-keys",
        "10",
        "--max-clock-skew",
        "30s",
    ])
    .await;
    let addr = address(&line, "external broker");
    assert_eq!(addr, broker.addr());
    serves(addr).await;
    stops_cleanly_on(child, stdout, libc::SIGINT).await;
}

/// Stopped, the server leaves the broker's session it keeps for a while (in case the server
/// comes back) with no subscription to the invoke topic, so that the broker queues no
/// requests for a server that is gone. Its client id is the one its log names.
#[tokio::test]
async fn external_binary_leaves_no_invoke_subscription_when_it_stops() {
    let broker = statestore_testkit::Mosquitto::start().expect("mosquitto");
    let url = format!("mqtt://127.0.0.1:{}", broker.port());
    let (mut child, line, stdout) =
        start_with(&["--broker", &url, "--log-level", "info"], Stdio::piped()).await;
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    serves(address(&line, "external broker")).await;
    // The connection is logged before the server is ready.
    let client_id = tokio::time::timeout(WAIT, async {
        while let Some(line) = stderr.next_line().await.expect("stderr readable") {
            if let Some(id) = logged_client_id(&line) {
                return id;
            }
        }
        panic!("the log never named the server's client id");
    })
    .await
    .expect("the connection logged in time");
    stops_cleanly_on(child, stdout, libc::SIGTERM).await;
    let invoke = statestore::protocol::topics::INVOKE_TOPIC.to_owned();
    let left = statestore_testkit::leftover_subscription_to(broker.addr(), &client_id, &[invoke])
        .await
        .expect("the broker kept the server's session");
    assert_eq!(
        left, None,
        "the stopped server's session is still subscribed"
    );
}

/// `statestore-server-` and 16 hex digits, in a log line of the connection.
fn logged_client_id(line: &str) -> Option<String> {
    if !line.contains("connected to the broker") {
        return None;
    }
    let start = line.find("statestore-server-")?;
    let id: String = line[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    (id.len() == "statestore-server-".len() + 16).then_some(id)
}

#[tokio::test]
async fn help_documents_every_option_and_bad_options_fail() {
    let output = Command::new(BIN)
        .arg("--help")
        .output()
        .await
        .expect("runs");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for option in [
        "--listen",
        "--port",
        "--broker",
        "--max-keys",
        "--max-clock-skew",
        "--log-level",
        "--tls-cert",
        "--tls-key",
        "--username",
        "--password",
        "--max-packet-size",
    ] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
    for bad in [
        &["--max-clock-skew", "soon"][..],
        &["--listen", "nowhere"],
        &["--tls-cert", "c.pem"],
        &["--broker", "mqtts://h:1"],
        &["--username", "u"],
        &["--port", "1", "--listen", "127.0.0.1:2"],
        &["--port", "1", "--broker", "mqtt://h:1"],
        &["--port", "65536"],
    ] {
        let output = Command::new(BIN).args(bad).output().await.expect("runs");
        assert!(!output.status.success(), "{bad:?} was accepted");
        assert!(output.stdout.is_empty(), "{bad:?} printed a ready line");
    }
}
