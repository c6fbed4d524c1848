//! `statestore serve`: the ready line, serving, and a clean end on SIGTERM and SIGINT.

mod support;

use std::net::SocketAddr;

use support::{status, Running, Tool};

/// Starts `statestore serve` on a free port with `flags`, and reads its address from the
/// ready line.
async fn serve(flags: &[&str]) -> (Running, Tool) {
    let mut command = support::bare_command();
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(flags);
    let mut server = Running::start(command);
    let ready = server.line().await;
    let addr: SocketAddr = ready
        .strip_prefix("statestore-server ready on ")
        .and_then(|rest| rest.strip_suffix(" (embedded broker)"))
        .unwrap_or_else(|| panic!("ready line: {ready:?}"))
        .parse()
        .expect("an address");
    (server, Tool::new(addr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_until_sigterm() {
    let (server, tool) = serve(&[]).await;
    tool.expect(&["set", "k", "v"], 0).await;
    assert_eq!(tool.expect(&["get", "k"], 0).await.stdout, b"v");
    server.signal(libc::SIGTERM);
    let (code, rest, stderr) = server.finish().await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(rest.is_empty(), "one line on stdout: {rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ends_on_sigint() {
    let (server, _tool) = serve(&[]).await;
    server.signal(libc::SIGINT);
    assert_eq!(server.finish().await.0, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takes_the_server_flags() {
    // --max-keys gives the quota error.
    let (server, tool) = serve(&["--max-keys", "1"]).await;
    tool.expect(&["set", "a", "1"], 0).await;
    let refused = tool.expect(&["set", "b", "2"], status::SERVICE).await;
    assert!(String::from_utf8_lossy(&refused.stderr).contains("quota"));
    server.signal(libc::SIGTERM);
    assert_eq!(server.finish().await.0, Some(0));

    let mut command = support::bare_command();
    command.args(["serve", "--max-clock-skew", "soon"]);
    let output = support::finish(command, b"").await;
    assert_eq!(output.status.code(), Some(status::USAGE));
}
