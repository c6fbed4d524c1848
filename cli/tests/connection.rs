//! Connection flags end to end: TLS with a CA file and a client certificate, user name with a
//! password file, and the statuses of refused connections.

mod support;

use std::path::Path;

use statestore_server::{Credentials, Server, ServerConfig};
use statestore_testkit::tls::{embedded_over_tls, self_signed, write_file};
use support::{bare_command, check, finish, status, Tool};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_flags() {
    let dir = tempfile::tempdir().unwrap();
    let (server, cert) = embedded_over_tls(dir.path()).await;
    let tool = Tool::new(server.local_addr());
    let ca = write_file(dir.path(), "ca.pem", &cert);
    let ca = ca.to_str().unwrap();
    // --tls-ca alone turns TLS on.
    tool.expect(&["set", "--tls-ca", ca, "k", "v"], 0).await;
    let (client_cert, client_key) = self_signed();
    let client_cert = write_file(dir.path(), "client.pem", client_cert);
    let client_key = write_file(dir.path(), "client.key", client_key);
    let get = tool
        .expect(
            &[
                "get",
                "--tls",
                "--tls-ca",
                ca,
                "--tls-cert",
                client_cert.to_str().unwrap(),
                "--tls-key",
                client_key.to_str().unwrap(),
                "k",
            ],
            0,
        )
        .await;
    assert_eq!(get.stdout, b"v");

    // A CA that does not vouch for the broker, and plain TCP to a TLS port, are refused.
    let (other, _) = self_signed();
    let other = write_file(dir.path(), "other.pem", other);
    tool.expect(
        &[
            "get",
            "--tls-ca",
            other.to_str().unwrap(),
            "--timeout",
            "2s",
            "k",
        ],
        status::CONNECTION,
    )
    .await;
    tool.expect(
        &["get", "--tls-ca", ca, "--no-tls", "--timeout", "2s", "k"],
        status::CONNECTION,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn username_and_password_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(ServerConfig {
        credentials: Some(Credentials {
            username: "operator".into(),
            password: "s3cret".into(),
        }),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let tool = Tool::new(server.local_addr());
    let good = write_file(dir.path(), "good", "s3cret\n");
    let bad = write_file(dir.path(), "bad", "guess");
    // A refused login is answered at once; the time only bounds a loaded machine.
    let login = |file: &Path| {
        [
            "set".to_owned(),
            "--username".into(),
            "operator".into(),
            "--password-file".into(),
            file.to_str().unwrap().into(),
            "--timeout".into(),
            "10s".into(),
            "k".into(),
            "v".into(),
        ]
    };
    tool.expect(&login(&good), 0).await;
    let refused = tool.expect(&login(&bad), status::CONNECTION).await;
    assert!(String::from_utf8_lossy(&refused.stderr).contains("connect"));
    tool.expect(&["get", "--timeout", "2s", "k"], status::CONNECTION)
        .await;
    tool.expect(&["get", "--password-file", "x", "k"], status::USAGE)
        .await;
}

/// A loopback port where nothing listens.
fn closed_port() -> std::net::SocketAddr {
    (
        std::net::Ipv4Addr::LOCALHOST,
        statestore_testkit::free_port().unwrap(),
    )
        .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_brokers_are_named_with_what_to_try() {
    // Nothing listening: refused, with the address and how to start a local state store.
    let refused = Tool::new(closed_port());
    let output = refused.expect(&["get", "k"], status::CONNECTION).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!("cannot connect to {}: connection refused", refused.addr);
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("statestore serve"), "{stderr}");

    // A port that accepts TCP and never answers: the address and the time waited.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tool = Tool::new(silent.local_addr().unwrap());
    let output = tool
        .expect(&["get", "--timeout", "1s", "k"], status::CONNECTION)
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&tool.addr.to_string()), "{stderr}");
    assert!(
        stderr.contains("no answer from an MQTT broker within 1s"),
        "{stderr}"
    );

    // A port that answers in another protocol (an HTTP server): it does not speak MQTT 5.
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tool = Tool::new(http.local_addr().unwrap());
    let answering = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut socket, _) = http.accept().await.unwrap();
        let mut request = [0u8; 64];
        let _ = socket.read(&mut request).await;
        let _ = socket
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await;
    });
    let output = tool
        .expect(&["get", "--timeout", "5s", "k"], status::CONNECTION)
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&tool.addr.to_string()), "{stderr}");
    assert!(stderr.contains("does not speak MQTT 5"), "{stderr}");
    answering.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_url_from_the_flag_or_the_environment() {
    let server = statestore_testkit::embedded_with_credentials("alice", "s3cr@t").await;
    let addr = server.local_addr();
    let url = format!("mqtt://alice:s3cr%40t@{addr}?client_id=cli-url");
    let run = |args: Vec<String>, env: Option<String>| {
        let mut command = bare_command();
        command.args(args);
        if let Some(url) = env {
            command.env("STATESTORE_URL", url);
        }
        finish(command, b"")
    };
    let set = run(
        vec![
            "set".into(),
            "--url".into(),
            url.clone(),
            "k".into(),
            "v".into(),
        ],
        None,
    )
    .await;
    check(&set, 0, "set --url");
    let get = run(vec!["get".into(), "k".into()], Some(url.clone())).await;
    check(&get, 0, "get with STATESTORE_URL");
    assert_eq!(get.stdout, b"v");

    // A flag wins over the URL: this port has nothing listening.
    let closed = statestore_testkit::free_port().unwrap().to_string();
    let flagged = run(
        vec![
            "get".into(),
            "--port".into(),
            closed,
            "--timeout".into(),
            "2s".into(),
            "k".into(),
        ],
        Some(url),
    )
    .await;
    check(&flagged, status::CONNECTION, "--port over STATESTORE_URL");

    // A malformed URL is a usage error naming the part, without the password.
    let bad = run(
        vec![
            "get".into(),
            "--url".into(),
            "mqtt://alice:Not-Shown@h:99999".into(),
            "k".into(),
        ],
        None,
    )
    .await;
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_ne!(bad.status.code(), Some(0));
    assert!(
        stderr.contains("port") && !stderr.contains("Not-Shown"),
        "{stderr}"
    );
}

/// Connection flags may come before the subcommand, as redis-cli takes them; a flag's value
/// that names a subcommand is read as the value; an unknown flag there is still a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_before_the_subcommand() {
    let server = statestore_testkit::embedded().await;
    let (host, port) = (
        server.local_addr().ip().to_string(),
        server.local_addr().port().to_string(),
    );
    let run = |args: &[&str]| {
        let mut command = bare_command();
        command.args(args);
        finish(command, b"")
    };
    let set = run(&["--host", &host, "--port", &port, "set", "k", "v"]).await;
    check(&set, 0, "--host --port set");
    let get = run(&["--port", &port, "-v", "--host", &host, "get", "k"]).await;
    assert_eq!(get.status.code(), Some(0), "--port -v --host get");
    assert_eq!(get.stdout, b"v");
    let stderr = String::from_utf8_lossy(&get.stderr);
    assert!(stderr.contains("connected to the broker"), "-v: {stderr}");
    let named = run(&[
        "--client-id",
        "get",
        "--host",
        &host,
        "--port",
        &port,
        "get",
        "k",
    ])
    .await;
    check(&named, 0, "--client-id get ... get");
    assert_eq!(named.stdout, b"v");

    let unknown = run(&["--bogus", "get", "k"]).await;
    check(&unknown, status::USAGE, "--bogus get");
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("--bogus"), "{stderr}");
    // The subcommand's own usage error, not the flag's place.
    let keyless = run(&["--port", &port, "get"]).await;
    check(&keyless, status::USAGE, "--port get");
    let stderr = String::from_utf8_lossy(&keyless.stderr);
    assert!(stderr.contains("<KEY>"), "{stderr}");
}
