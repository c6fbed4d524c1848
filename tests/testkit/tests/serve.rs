//! `statestore-testkit serve`, the servers of the Python, Node and C suites: a state store a
//! client can use, on the port of its ready line; Mosquitto restarted on request; the end of
//! the servers once its standard input closes.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use statestore::{blocking, Error, SetOptions};
use statestore_testkit::{options, quick, DEADLINE};

/// The launcher serving `kind`, its output's lines (read on a thread, so that every wait has a
/// deadline) and the address of its ready line.
struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    addr: SocketAddr,
}

impl Served {
    fn start(kind: &str) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_statestore-testkit"))
            .args(["serve", kind])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start statestore-testkit");
        let lines = read_lines(child.stdout.take().expect("piped"));
        let ready = lines.recv_timeout(DEADLINE).expect("a ready line");
        let addr = ready
            .strip_prefix("ready on ")
            .unwrap_or_else(|| panic!("not a ready line: {ready:?}"))
            .parse()
            .expect("an address");
        Served { child, lines, addr }
    }

    fn say(&mut self, line: &str) -> String {
        let stdin = self.child.stdin.as_mut().expect("piped");
        writeln!(stdin, "{line}").expect("write to the launcher");
        self.lines.recv_timeout(DEADLINE).expect("an answer")
    }

    /// Closes its standard input and waits for its end; returns whether it ended with status 0.
    fn close(mut self) -> bool {
        drop(self.child.stdin.take());
        let (done, ended) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(self.child.wait());
        });
        ended
            .recv_timeout(DEADLINE)
            .expect("the launcher ends once its input closes")
            .expect("wait")
            .success()
    }
}

fn read_lines(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

fn set_and_get(addr: SocketAddr, value: &'static str) {
    let client = blocking::Client::connect(options(addr)).expect("connect");
    client.set("k", value, SetOptions::default()).expect("set");
    let got = client.get("k").expect("get").expect("a value");
    assert_eq!(got.value.as_ref(), value.as_bytes());
}

#[test]
fn embedded_serves_until_its_input_closes() {
    let served = Served::start("embedded");
    let addr = served.addr;
    set_and_get(addr, "v");
    assert!(served.close(), "status 0 once its input closed");
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_err(),
        "nothing listens on {addr} once it ended"
    );
}

#[test]
fn mosquitto_restarts_on_the_same_port_and_the_state_store_comes_back() {
    let mut served = Served::start("mosquitto");
    set_and_get(served.addr, "before");
    assert_eq!(served.say("restart"), "restarted");
    // The state store reconnects by itself; a client with retries finds it again.
    let client = blocking::Client::connect(options(served.addr)).expect("connect after restart");
    let mut applied = false;
    for _ in 0..30 {
        match client.set("k", "after", SetOptions::default()) {
            Ok(result) => {
                applied = result.applied;
                break;
            }
            // Sent before the state store subscribed again: no answer.
            Err(Error::Timeout(_) | Error::ConnectionLost) => continue,
            Err(error) => panic!("set after the restart: {error}"),
        }
    }
    assert!(applied, "a SET applied after the restart");
    assert!(served.say("nonsense").starts_with("error: "));
    assert!(served.close());
}

#[test]
fn mosquitto_alone_answers_no_request() {
    let served = Served::start("mosquitto-alone");
    let client = blocking::Client::connect(quick(served.addr)).expect("connect");
    let error = client.get("k").expect_err("no state store answers");
    assert!(matches!(error, Error::Timeout(_)), "{error}");
    assert!(served.close());
}

#[test]
fn an_unknown_kind_is_refused_with_the_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_statestore-testkit"))
        .args(["serve", "redis"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: statestore-testkit serve"));
}
