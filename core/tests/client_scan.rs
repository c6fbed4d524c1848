//! Listing keys (`Client::keys`, `keys_all`, blocking forms) against the embedded server and
//! a scripted service, and `SetOptions::persist` across a server restart.

use std::collections::BTreeSet;
use std::future::poll_fn;
use std::pin::Pin;

use bytes::Bytes;
use futures_core::Stream;
use statestore::protocol::Request;
use statestore::{Client, Error, ServiceError, SetOptions};
use statestore_server::{EngineConfig, PersistenceConfig, Server, ServerConfig};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Received, Reply, Scripted};
use statestore_testkit::Mosquitto;

fn set() -> SetOptions {
    SetOptions::default()
}

fn keys(names: &[&[u8]]) -> BTreeSet<Bytes> {
    names.iter().map(|k| Bytes::copy_from_slice(k)).collect()
}

/// An embedded server whose SCAN pages hold at most `page` keys.
async fn server_with_pages(page: usize) -> Server {
    kit::embedded_with_engine(EngineConfig {
        scan_page_keys: page,
        ..EngineConfig::default()
    })
    .await
}

#[tokio::test]
async fn keys_all_lists_the_matching_keys_binary_ones_included() {
    let (_server, client) = kit::embedded_with_client().await;
    let names: [&[u8]; 6] = [
        b"user:1",
        b"user:2",
        b"user:\x00\xff",
        b"users",
        b"other",
        b"user:\r\n",
    ];
    kit::set_all(&client, &names).await;
    let listed: BTreeSet<Bytes> = client
        .keys_all("user:*")
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(
        listed,
        keys(&[b"user:1", b"user:2", b"user:\x00\xff", b"user:\r\n"])
    );
    let listed: BTreeSet<Bytes> = client.keys_all("*").await.unwrap().into_iter().collect();
    assert_eq!(listed, keys(&names));
    assert_eq!(client.keys_all("user:[0-9]").await.unwrap().len(), 2);
    assert!(client.keys_all("none:*").await.unwrap().is_empty());
}

#[tokio::test]
async fn pages_keys_and_the_stream_agree() {
    let server = server_with_pages(3).await;
    let client = kit::client(&server).await;
    let names: Vec<Vec<u8>> = (0..10).map(|i| format!("k{i:02}").into_bytes()).collect();
    let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    kit::set_all(&client, &refs).await;
    let all = keys(&refs);

    let mut pager = client.keys("k*").unwrap();
    let mut pages = Vec::new();
    while let Some(page) = pager.next_page().await.unwrap() {
        assert!(!page.is_empty() && page.len() <= 3, "page {page:?}");
        pages.push(page);
    }
    assert!(pager.is_exhausted());
    assert_eq!(pages.len(), 4);
    assert_eq!(pages.concat().into_iter().collect::<BTreeSet<_>>(), all);

    // Key by key, then the rest by pages: nothing repeated, nothing missed.
    let mut pager = client.keys("k*").unwrap();
    let mut seen = vec![pager.next().await.unwrap().expect("a key")];
    while let Some(page) = pager.next_page().await.unwrap() {
        seen.extend(page);
    }
    assert_eq!(seen.len(), 10);
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), all);

    // As a Stream.
    let mut stream = client.keys("k*").unwrap();
    let mut streamed = Vec::new();
    while let Some(key) = poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await {
        streamed.push(key.unwrap());
    }
    assert_eq!(streamed.into_iter().collect::<BTreeSet<_>>(), all);
}

#[tokio::test]
async fn an_empty_pattern_is_rejected_before_anything_is_sent() {
    let (_server, client) = kit::embedded_with_client().await;
    assert!(matches!(client.keys(""), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        client.keys_all(Bytes::new()).await,
        Err(Error::InvalidArgument(_))
    ));
}

/// A service paging like the real one: binary opaque tokens, an empty page on the way.
fn paging_service(request: &Received) -> Option<Reply> {
    let Request::Scan { pattern, token } = &request.request else {
        return Some(Reply::ok(b"+OK\r\n"));
    };
    if &pattern[..] == b"broken*" {
        return Some(Reply::ok(b"-ERR syntax error\r\n"));
    }
    Some(Reply::ok(match token.as_deref() {
        None => b"*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\n1;1;\r\n",
        Some(b"1;1;") => b"*2\r\n*0\r\n$3\r\n\x00\xff\n\r\n",
        Some(b"\x00\xff\n") => b"*1\r\n*1\r\n$4\r\nkey3\r\n",
        Some(_) => b"-ERR unexpected token\r\n",
    }))
}

#[tokio::test]
async fn tokens_stay_inside_and_are_sent_back_verbatim() {
    let broker = Mosquitto::start().expect("mosquitto");
    let service = Scripted::start(broker.addr(), paging_service).await;
    let client = Client::connect(kit::quick(broker.addr()))
        .await
        .expect("connect");

    let mut pager = client.keys("key*").unwrap();
    assert!(
        service.received().is_empty(),
        "nothing is sent before it is needed"
    );
    assert_eq!(
        pager.next_page().await.unwrap(),
        Some(vec![
            Bytes::from_static(b"key1"),
            Bytes::from_static(b"key2")
        ])
    );
    assert_eq!(service.received().len(), 1);
    // The empty page is skipped: the next page asked for is the third.
    assert_eq!(
        pager.next_page().await.unwrap(),
        Some(vec![Bytes::from_static(b"key3")])
    );
    assert_eq!(pager.next_page().await.unwrap(), None);
    let tokens: Vec<Option<Bytes>> = service
        .received()
        .into_iter()
        .map(|r| match r.request {
            Request::Scan { token, .. } => token,
            other => panic!("not a SCAN: {other:?}"),
        })
        .collect();
    assert_eq!(
        tokens,
        [
            None,
            Some(Bytes::from_static(b"1;1;")),
            Some(Bytes::from_static(b"\x00\xff\n"))
        ]
    );

    assert_eq!(
        client.keys_all("broken*").await.unwrap_err(),
        Error::Service(ServiceError::SyntaxError)
    );
}

#[test]
fn the_blocking_client_iterates_and_collects() {
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = host.block_on(server_with_pages(2));
    let client = statestore::blocking::Client::connect(kit::options(server.local_addr())).unwrap();
    for i in 0..5 {
        client.set(format!("b{i}"), "v", set()).unwrap();
    }
    client.set("other", "v", set()).unwrap();
    let iterated: Vec<Bytes> = client
        .keys("b*")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(iterated.len(), 5);
    let mut pager = client.keys("b*").unwrap();
    assert_eq!(pager.pattern(), "b*");
    assert_eq!(pager.next_page().unwrap().map(|p| p.len()), Some(2));
    assert_eq!(client.keys_all("*").unwrap().len(), 6);
    assert!(matches!(client.keys(""), Err(Error::InvalidArgument(_))));
    client.close().unwrap();
    drop(server);
}

#[tokio::test]
async fn persisted_keys_survive_a_restart_of_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = ServerConfig {
        persistence: Some(PersistenceConfig::new(dir.path())),
        ..ServerConfig::default()
    };
    let server = Server::start(config.clone()).await.expect("starts");
    let client = kit::client(&server).await;
    let written = client
        .set("kept", "value", set().persist(true))
        .await
        .unwrap();
    client.set("dropped", "value", set()).await.unwrap();
    client.close().await.unwrap();
    server.shutdown().await;

    let server = Server::start(config).await.expect("restarts");
    let client = kit::client(&server).await;
    let kept = client.get("kept").await.unwrap().expect("persisted");
    assert_eq!(kept.value, "value");
    assert_eq!(kept.version, written.version);
    assert_eq!(client.get("dropped").await.unwrap(), None);
    assert_eq!(client.keys_all("*").await.unwrap(), ["kept"]);
    client.close().await.unwrap();
    server.shutdown().await;
}
