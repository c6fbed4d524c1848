//! Runs the built `statestore` binary against a state store of the test.
#![allow(dead_code)] // each test file uses part of it

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::process::{Output, Stdio};

use serde_json::Value as Json;
use statestore_testkit::within;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_statestore");

/// Exit statuses the tool documents.
pub mod status {
    pub const USAGE: i32 = 2;
    pub const NOT_FOUND: i32 = 3;
    pub const CONDITION: i32 = 4;
    pub const CONNECTION: i32 = 5;
    pub const TIMEOUT: i32 = 6;
    pub const SERVICE: i32 = 7;
    pub const LOCK_LOST: i32 = 8;
    pub const NOT_EXECUTABLE: i32 = 126;
    pub const COMMAND_NOT_FOUND: i32 = 127;
}

/// The tool pointed at a broker: connection flags go right after the subcommand.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub addr: SocketAddr,
}

impl Tool {
    pub fn new(addr: SocketAddr) -> Self {
        Self { addr }
    }

    /// `statestore SUBCOMMAND --host H --port P REST...` with no `AIO_*` variables.
    pub fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut command = bare_command();
        let (subcommand, rest) = args.split_first().expect("a subcommand");
        command.arg(subcommand);
        command.args(["--host".into(), self.addr.ip().to_string()]);
        command.args(["--port".into(), self.addr.port().to_string()]);
        command.args(rest);
        command
    }

    /// Runs to completion with `stdin` as input.
    pub async fn run<S: AsRef<OsStr>>(&self, args: &[S], stdin: &[u8]) -> Output {
        finish(self.command(args), stdin).await
    }

    /// Runs, and checks the status and that stderr is empty on success or one
    /// `statestore: error:` line otherwise.
    pub async fn expect<S: AsRef<OsStr>>(&self, args: &[S], code: i32) -> Output {
        let output = self.run(args, b"").await;
        check(&output, code, &describe(args));
        output
    }

    /// Starts it with stdout piped, to be read line by line.
    pub fn spawn<S: AsRef<OsStr>>(&self, args: &[S]) -> Running {
        Running::start(self.command(args))
    }
}

/// The binary with no `AIO_*` variables (nor `STATESTORE_URL`) from the test's environment.
pub fn bare_command() -> Command {
    let mut command = Command::new(BIN);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("AIO_") || name == "STATESTORE_URL" {
            command.env_remove(name);
        }
    }
    command.kill_on_drop(true);
    command
}

/// Runs `command` to completion with `stdin` as input.
pub async fn finish(mut command: Command, stdin: &[u8]) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start statestore");
    let mut input = child.stdin.take().expect("piped stdin");
    input.write_all(stdin).await.expect("write stdin");
    drop(input);
    within("end of statestore", child.wait_with_output())
        .await
        .expect("wait for statestore")
}

/// Checks the status, and stderr: empty on success, one `statestore: error:` line otherwise.
pub fn check(output: &Output, code: i32, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{what}: status; stderr: {stderr}"
    );
    if code == 0 {
        assert!(stderr.is_empty(), "{what}: stderr {stderr}");
    } else if code != status::USAGE {
        assert_eq!(stderr.lines().count(), 1, "{what}: stderr {stderr}");
        assert!(
            stderr.starts_with("statestore: error: "),
            "{what}: {stderr}"
        );
    }
}

fn describe<S: AsRef<OsStr>>(args: &[S]) -> String {
    let words: Vec<OsString> = args.iter().map(|a| a.as_ref().to_owned()).collect();
    format!("statestore {words:?}")
}

/// The stdout of a run parsed as one JSON object.
pub fn json(output: &Output) -> Json {
    let text = String::from_utf8(output.stdout.clone()).expect("UTF-8 JSON");
    assert_eq!(text.lines().count(), 1, "one JSON line: {text}");
    serde_json::from_str(&text).expect("valid JSON")
}

/// The stdout of a run as text, without the trailing newline.
pub fn text(output: &Output) -> String {
    String::from_utf8(output.stdout.clone())
        .expect("UTF-8 output")
        .trim_end_matches('\n')
        .to_owned()
}

/// A running tool whose stdout is read line by line.
pub struct Running {
    pub child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Running {
    pub fn start(mut command: Command) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start statestore");
        let stdout = child.stdout.take().expect("piped stdout");
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// The next line of stdout (panics at the end of it, or if none comes within the kit's
    /// deadline: a hung test should fail with a message, not hang CI).
    pub async fn line(&mut self) -> String {
        let next = within("line on the tool's stdout", self.lines.next_line()).await;
        match next.expect("read stdout") {
            Some(line) => line,
            None => panic!("stdout ended; {}", self.stderr_so_far().await),
        }
    }

    /// The next line, parsed as JSON.
    pub async fn json_line(&mut self) -> Json {
        let line = self.line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    /// Sends `signal` to the tool.
    pub fn signal(&self, signal: libc::c_int) {
        let pid = self.child.id().expect("running") as libc::pid_t;
        // SAFETY: kill(2) on our own, not yet reaped child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    /// Waits for the end: status, the rest of stdout, and stderr (fails if the tool is still
    /// running after the kit's deadline).
    pub async fn finish(mut self) -> (Option<i32>, Vec<String>, String) {
        let ending = async {
            let mut rest = Vec::new();
            while let Some(line) = self.lines.next_line().await.expect("read stdout") {
                rest.push(line);
            }
            let output = self.child.wait_with_output().await.expect("wait");
            (
                output.status.code(),
                rest,
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        };
        within("end of the tool", ending).await
    }

    async fn stderr_so_far(&mut self) -> String {
        let _ = self.child.wait().await;
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = stderr.read_to_string(&mut text).await;
        }
        format!("status {:?}, stderr: {text}", self.child.try_wait())
    }
}
