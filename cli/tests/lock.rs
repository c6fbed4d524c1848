//! `statestore lock`: the token and name in the command's environment, the command's status,
//! mutual exclusion, loss, signals and failures to start.

mod support;

use statestore::{Client, Hlc, SetOptions};
use statestore_testkit as kit;
use support::{status, text, Tool};

async fn setup() -> (statestore_server::Server, Tool, Client) {
    let server = kit::embedded().await;
    let addr = server.local_addr();
    let client = kit::connect(addr).await;
    (server, Tool::new(addr), client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_gets_the_token_and_name_and_its_status_is_returned() {
    let (_server, tool, client) = setup().await;
    let script = r#"echo "$STATESTORE_LOCK $STATESTORE_FENCING_TOKEN"; exit 3"#;
    let output = tool
        .run(
            &["lock", "locks/a", "--ttl", "10s", "--", "sh", "-c", script],
            b"",
        )
        .await;
    assert_eq!(output.status.code(), Some(3), "the command's status");
    assert!(output.stderr.is_empty(), "the tool adds nothing");
    let line = text(&output);
    let (name, token) = line.split_once(' ').expect("name and token");
    assert_eq!(name, "locks/a");
    let token: Hlc = token.parse().expect("the token is an HLC");

    // Released on exit, and the token fences: a write with it is accepted.
    assert_eq!(client.get("locks/a").await.unwrap(), None);
    let fenced = client
        .set("data", "v", SetOptions::default().fencing_token(token))
        .await
        .unwrap();
    assert!(fenced.applied);

    let ok = tool
        .run(&["lock", "locks/a", "--ttl", "10s", "--", "true"], b"")
        .await;
    support::check(&ok, 0, "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_are_mutually_exclusive() {
    let (_server, tool, client) = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // The critical section is a read-modify-write of a counter through the tool itself,
    // fenced with the token; start and end are logged around it.
    let script = format!(
        r#"set -e
echo "start $$" >> '{log}'
n=$("$STATESTORE_BIN" get --host 127.0.0.1 --port "$PORT" counter)
"$STATESTORE_BIN" set --host 127.0.0.1 --port "$PORT" counter $((n + 1)) --fencing-token "$STATESTORE_FENCING_TOKEN" > /dev/null
echo "end $$" >> '{log}'"#,
        log = log.display()
    );
    client
        .set("counter", "0", SetOptions::default())
        .await
        .unwrap();
    const RUNS: usize = 4;
    let runs = (0..RUNS).map(|_| {
        let mut command = tool.command(&[
            "lock",
            "locks/counter",
            "--ttl",
            "10s",
            "--",
            "sh",
            "-c",
            &script,
        ]);
        command
            .env("STATESTORE_BIN", support::BIN)
            .env("PORT", tool.addr.port().to_string());
        support::finish(command, b"")
    });
    for output in futures_join(runs).await {
        support::check(&output, 0, "a locked run");
    }
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2 * RUNS, "{log}");
    for pair in lines.chunks(2) {
        let start = pair[0].strip_prefix("start ").expect(&log);
        let end = pair[1].strip_prefix("end ").expect(&log);
        assert_eq!(start, end, "interleaved:\n{log}");
    }
    let counter = client.get("counter").await.unwrap().unwrap().value;
    assert_eq!(counter, RUNS.to_string().as_bytes(), "no update lost");
}

/// Runs the futures concurrently on the test's runtime and collects their outputs.
async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(tasks.len());
    for task in tasks {
        outputs.push(task.await.expect("task"));
    }
    outputs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_terminates_the_command_with_status_8() {
    let (_server, tool, client) = setup().await;
    let mut run = tool.spawn(&[
        "lock",
        "locks/b",
        "--ttl",
        "1s",
        "--",
        "sh",
        "-c",
        "echo started; exec sleep 600",
    ]);
    assert_eq!(run.line().await, "started");
    // Someone takes the lock over; the next renewal finds out.
    client
        .set("locks/b", "intruder", SetOptions::default())
        .await
        .unwrap();
    let (code, rest, stderr) = run.finish().await;
    assert_eq!(code, Some(status::LOCK_LOST), "stderr: {stderr}");
    assert!(rest.is_empty());
    assert!(
        stderr.starts_with("statestore: error: lock \"locks/b\" lost")
            && stderr.contains("intruder")
            && stderr.contains("SIGTERM"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_is_renewed_while_the_command_outlives_its_ttl() {
    let (_server, tool, _client) = setup().await;
    let output = tool
        .run(
            &["lock", "locks/c", "--ttl", "1500ms", "--", "sleep", "4"],
            b"",
        )
        .await;
    support::check(&output, 0, "a command longer than the TTL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_is_passed_on_and_the_lock_released() {
    let (_server, tool, client) = setup().await;
    let mut run = tool.spawn(&[
        "lock",
        "locks/d",
        "--ttl",
        "10s",
        "--",
        "sh",
        "-c",
        "echo started; exec sleep 600",
    ]);
    assert_eq!(run.line().await, "started");
    run.signal(libc::SIGTERM);
    let (code, _, stderr) = run.finish().await;
    assert_eq!(code, Some(128 + libc::SIGTERM), "stderr: {stderr}");
    assert_eq!(client.get("locks/d").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_to_acquire_or_to_start_the_command() {
    let (_server, tool, client) = setup().await;
    let missing = tool
        .expect(
            &["lock", "locks/e", "--ttl", "10s", "--", "/no/such/command"],
            status::COMMAND_NOT_FOUND,
        )
        .await;
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/command"));
    assert_eq!(client.get("locks/e").await.unwrap(), None, "released");

    let dir = tempfile::tempdir().unwrap();
    tool.expect(
        &[
            "lock".as_ref(),
            "locks/e".as_ref(),
            "--ttl".as_ref(),
            "10s".as_ref(),
            "--".as_ref(),
            dir.path().as_os_str(),
        ],
        status::NOT_EXECUTABLE,
    )
    .await;

    // Held by someone else for longer than we wait.
    client
        .set(
            "locks/e",
            "other",
            SetOptions::default().expiry(std::time::Duration::from_secs(600)),
        )
        .await
        .unwrap();
    let output = tool
        .expect(
            &[
                "lock",
                "locks/e",
                "--ttl",
                "1s",
                "--timeout",
                "300ms",
                "--",
                "true",
            ],
            status::TIMEOUT,
        )
        .await;
    assert!(String::from_utf8_lossy(&output.stderr).contains("not acquired"));

    for usage in [
        &["lock", "locks/e", "--", "true"][..],            // no --ttl
        &["lock", "locks/e", "--ttl", "10s"],              // no command
        &["lock", "locks/e", "--ttl", "0s", "--", "true"], // TTL under 1 ms
    ] {
        let output = tool.run(usage, b"").await;
        assert_eq!(output.status.code(), Some(status::USAGE), "{usage:?}");
    }
}
