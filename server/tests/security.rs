//! The embedded broker's login and TLS options, and credentials in external mode.

mod support;

use std::net::SocketAddr;

use statestore_server::{Credentials, Mode, Server, ServerConfig, TlsFiles};
use support::probe::Login;
use support::{unique, Probe};

fn credentials() -> Credentials {
    Credentials {
        username: "alice".to_owned(),
        password: "s3cret".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_broker_with_a_password_refuses_anonymous_and_wrong_logins() {
    let server = Server::start(ServerConfig {
        credentials: Some(credentials()),
        ..ServerConfig::default()
    })
    .await
    .expect("starts");
    let addr = server.local_addr();
    let anonymous = Probe::connect_with(addr, &unique("anon"), &Login::default()).await;
    assert!(anonymous.is_err(), "anonymous client accepted");
    let wrong = Login {
        credentials: Some(("alice".to_owned(), "guess".to_owned())),
        ..Login::default()
    };
    assert!(Probe::connect_with(addr, &unique("wrong"), &wrong)
        .await
        .is_err());
    let right = Login {
        credentials: Some(("alice".to_owned(), "s3cret".to_owned())),
        ..Login::default()
    };
    let mut probe = Probe::connect_with(addr, &unique("alice"), &right)
        .await
        .expect("the right password is accepted");
    probe.serves().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_broker_serves_over_tls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, ca) = statestore_testkit::tls::embedded_over_tls(dir.path()).await;
    let addr: SocketAddr = server.local_addr();
    let tls = Login {
        tls_ca: Some(ca.into_bytes()),
        ..Login::default()
    };
    let mut probe = Probe::connect_with(addr, &unique("tls"), &tls)
        .await
        .expect("TLS client connects");
    probe.serves().await;
    // The listener speaks only TLS.
    assert!(
        Probe::connect_with(addr, &unique("plain"), &Login::default())
            .await
            .is_err()
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_files_are_refused_in_external_mode_and_missing_files_fail_to_start() {
    let external = Server::start(ServerConfig {
        mode: Mode::External {
            host: "127.0.0.1".to_owned(),
            port: 1,
        },
        tls: Some(TlsFiles {
            cert: "c.pem".into(),
            key: "k.pem".into(),
        }),
        ..ServerConfig::default()
    })
    .await;
    assert!(external.is_err());
    let missing = Server::start(ServerConfig {
        tls: Some(TlsFiles {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        }),
        ..ServerConfig::default()
    })
    .await;
    assert!(missing.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_mode_fails_fast_when_no_broker_listens() {
    let port = statestore_testkit::free_port().expect("free port");
    let result = Server::start(ServerConfig {
        mode: Mode::External {
            host: "127.0.0.1".to_owned(),
            port,
        },
        ..ServerConfig::default()
    })
    .await;
    assert!(result.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_url_carries_the_account_and_the_scheme_a_client_needs() {
    let server = Server::start(ServerConfig {
        credentials: Some(Credentials {
            username: "al ice@example".to_owned(),
            password: "p:w/d%?#".to_owned(),
        }),
        ..ServerConfig::default()
    })
    .await
    .expect("starts");
    let url = server.url().to_owned();
    assert_eq!(
        url,
        format!(
            "mqtt://al%20ice%40example:p%3Aw%2Fd%25%3F%23@{}",
            server.local_addr()
        )
    );
    serves_a_client_of(&url).await;
    server.shutdown().await;

    let dir = tempfile::tempdir().expect("temp dir");
    let (server, ca) = statestore_testkit::tls::embedded_over_tls(dir.path()).await;
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca).expect("CA file");
    assert_eq!(server.url(), format!("mqtts://{}", server.local_addr()));
    serves_a_client_of(&format!("{}?ca_file={}", server.url(), ca_file.display())).await;
    server.shutdown().await;
}

/// Connects a client with `url`, sets a key and closes it.
async fn serves_a_client_of(url: &str) {
    let client = statestore::Client::connect_url(url)
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    client
        .set("k", "v", statestore::SetOptions::default())
        .await
        .expect("set");
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_listen_address_gives_a_loopback_url() {
    let server = Server::start(ServerConfig {
        mode: Mode::Embedded {
            listen: SocketAddr::from(([0, 0, 0, 0], 0)),
        },
        ..ServerConfig::default()
    })
    .await
    .expect("starts");
    assert_eq!(
        server.url(),
        format!("mqtt://127.0.0.1:{}", server.local_addr().port())
    );
    server.shutdown().await;
}
