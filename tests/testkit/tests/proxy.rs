//! The kit's proxy in front of echo servers: cutting, refusing, swallowing and retargeting
//! links, and what it counts.

use std::net::SocketAddr;

use statestore_testkit::{within, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Length of every echo server's tag.
const TAG: usize = 2;

/// A server that answers every chunk with `tag` followed by the chunk.
async fn echo(tag: &'static [u8; TAG]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut link, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 1024];
                while let Ok(n @ 1..) = link.read(&mut buffer).await {
                    let answer = [&tag[..], &buffer[..n]].concat();
                    if link.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Sends `bytes` and reads the whole answer (`None`: the link was closed first).
async fn ask(link: &mut TcpStream, bytes: &[u8]) -> Option<Vec<u8>> {
    link.write_all(bytes).await.ok()?;
    let mut answer = vec![0u8; TAG + bytes.len()];
    let read = within(
        "an answer or the end of the link",
        link.read_exact(&mut answer),
    )
    .await;
    read.ok().map(|_| answer)
}

/// Whether the link was closed (rather than answering).
async fn closed(link: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 1];
    let read = within("the end of the link", link.read(&mut buffer)).await;
    matches!(read, Ok(0) | Err(_))
}

async fn connect(proxy: &Proxy) -> TcpStream {
    TcpStream::connect(proxy.addr()).await.expect("connect")
}

#[tokio::test]
async fn a_cut_closes_every_link_and_new_ones_are_served() {
    let proxy = Proxy::start(echo(b"a:").await).await.expect("proxy");
    let mut first = connect(&proxy).await;
    let mut second = connect(&proxy).await;
    assert_eq!(ask(&mut first, b"1").await.as_deref(), Some(&b"a:1"[..]));
    assert_eq!(ask(&mut second, b"2").await.as_deref(), Some(&b"a:2"[..]));
    assert_eq!(proxy.accepted(), 2);

    proxy.cut();
    assert!(closed(&mut first).await);
    assert!(closed(&mut second).await);
    proxy.ended(2).await;
    let mut third = connect(&proxy).await;
    assert_eq!(ask(&mut third, b"3").await.as_deref(), Some(&b"a:3"[..]));
    proxy.accepted_at_least(3).await;
}

#[tokio::test]
async fn refused_links_are_closed_until_the_proxy_serves_again() {
    let proxy = Proxy::start(echo(b"a:").await).await.expect("proxy");
    proxy.refuse(true);
    let mut refused = connect(&proxy).await;
    assert_eq!(ask(&mut refused, b"1").await, None);
    assert_eq!(proxy.accepted(), 0);
    proxy.refuse(false);
    let mut served = connect(&proxy).await;
    assert_eq!(ask(&mut served, b"2").await.as_deref(), Some(&b"a:2"[..]));
}

#[tokio::test]
async fn swallowed_bytes_never_reach_the_upstream() {
    let proxy = Proxy::start(echo(b"a:").await).await.expect("proxy");
    let mut link = connect(&proxy).await;
    assert_eq!(ask(&mut link, b"1").await.as_deref(), Some(&b"a:1"[..]));
    proxy.swallow(true);
    link.write_all(b"lost").await.expect("write");
    proxy.swallowed_at_least(4).await;
    assert_eq!(proxy.swallowed(), 4);
    proxy.swallow(false);
    // Only what was sent after the swallowing comes back.
    assert_eq!(ask(&mut link, b"2").await.as_deref(), Some(&b"a:2"[..]));
    drop(link);
    assert_eq!(proxy.ended(1).await, b"1lost2");
}

#[tokio::test]
async fn new_links_follow_a_retarget_and_current_ones_stay() {
    let proxy = Proxy::start(echo(b"a:").await).await.expect("proxy");
    let mut before = connect(&proxy).await;
    assert_eq!(ask(&mut before, b"1").await.as_deref(), Some(&b"a:1"[..]));
    proxy.retarget(echo(b"b:").await);
    let mut after = connect(&proxy).await;
    assert_eq!(ask(&mut after, b"2").await.as_deref(), Some(&b"b:2"[..]));
    assert_eq!(ask(&mut before, b"3").await.as_deref(), Some(&b"a:3"[..]));
}
