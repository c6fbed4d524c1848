//! Connection flags end to end: TLS with a CA file and a client certificate, user name with a
//! password file, and the statuses of refused connections.

mod support;

use std::path::{Path, PathBuf};

use statestore_server::{Credentials, Server, ServerConfig, TlsFiles};
use support::{status, Tool};

fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// A self-signed certificate for 127.0.0.1 and localhost, as (certificate, key) PEM.
fn certificate() -> (String, String) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    (certified.cert.pem(), certified.signing_key.serialize_pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_flags() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate();
    let server = Server::start(ServerConfig {
        tls: Some(TlsFiles {
            cert: write(dir.path(), "server.pem", &cert),
            key: write(dir.path(), "server.key", &key),
        }),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let tool = Tool::new(server.local_addr());
    let ca = write(dir.path(), "ca.pem", &cert);
    let ca = ca.to_str().unwrap();
    // --tls-ca alone turns TLS on.
    tool.expect(&["set", "--tls-ca", ca, "k", "v"], 0).await;
    let (client_cert, client_key) = certificate();
    let client_cert = write(dir.path(), "client.pem", client_cert);
    let client_key = write(dir.path(), "client.key", client_key);
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
    let (other, _) = certificate();
    let other = write(dir.path(), "other.pem", other);
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
    let good = write(dir.path(), "good", "s3cret\n");
    let bad = write(dir.path(), "bad", "guess");
    let login = |file: &Path| {
        [
            "set".to_owned(),
            "--username".into(),
            "operator".into(),
            "--password-file".into(),
            file.to_str().unwrap().into(),
            "--timeout".into(),
            "2s".into(),
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
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
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
