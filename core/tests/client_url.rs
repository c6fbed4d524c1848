//! Connecting with a connection URL end to end: credentials, TLS options in the query, IPv6
//! hosts, and both clients.

use std::net::{Ipv6Addr, SocketAddr};

use statestore::{Client, Error, SetOptions};
use statestore_server::{Mode, Server, ServerConfig};
use statestore_testkit as kit;
use statestore_testkit::tls::{embedded_over_tls, write_file};

async fn works(client: &Client) {
    let set = kit::within("a SET", client.set("k", "v", SetOptions::default())).await;
    assert!(set.unwrap().applied);
    let got = kit::within("a GET", client.get("k")).await.unwrap();
    assert_eq!(got.unwrap().value, "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn percent_encoded_credentials_log_in() {
    let server = kit::embedded_with_credentials("ann@corp", "p:w/d@1 é").await;
    let addr = server.local_addr();
    let url = format!("mqtt://ann%40corp:p%3Aw%2Fd%401%20%C3%A9@{addr}?client_id=url-user");
    let client = kit::within("a connection", Client::connect_url(&url))
        .await
        .unwrap();
    assert_eq!(client.client_id(), "url-user");
    works(&client).await;

    let wrong = format!("mqtt://ann%40corp:Not-This-One@{addr}");
    let err = kit::within("a refusal", Client::connect_url(&wrong))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
    assert!(!err.to_string().contains("Not-This-One"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtts_with_the_ca_file_in_the_query() {
    let dir = tempfile::tempdir().unwrap();
    let (server, cert) = embedded_over_tls(dir.path()).await;
    let ca = write_file(dir.path(), "ca.pem", &cert);
    let url = format!(
        "mqtts://localhost:{}?ca_file={}",
        server.local_addr().port(),
        ca.display()
    );
    works(
        &kit::within("a TLS connection", Client::connect_url(&url))
            .await
            .unwrap(),
    )
    .await;
    // Without the CA the broker's certificate is not trusted: TLS was on.
    let plain_roots = format!("mqtts://localhost:{}", server.local_addr().port());
    let err = kit::within("a refusal", Client::connect_url(&plain_roots))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv6_host_in_brackets() {
    let server = Server::start(ServerConfig {
        mode: Mode::Embedded {
            listen: SocketAddr::from((Ipv6Addr::LOCALHOST, 0)),
        },
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let url = format!("mqtt://[::1]:{}", server.local_addr().port());
    works(
        &kit::within("a connection", Client::connect_url(&url))
            .await
            .unwrap(),
    )
    .await;
}

#[test]
fn the_blocking_client_connects_with_a_url() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client =
        statestore::blocking::Client::connect_url(&format!("mqtt://{}", server.local_addr()))
            .unwrap();
    assert!(client.set("k", "v", SetOptions::default()).unwrap().applied);
    let err = statestore::blocking::Client::connect_url("mqtt://u:Secret-42@127.0.0.1:70000")
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.to_string().contains("u:***@"), "{err}");
    drop(client);
    host.block_on(server.shutdown());
}
