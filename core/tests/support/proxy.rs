//! A loopback TCP proxy that can cut its connections or swallow traffic, to make a client
//! lose its connection at a chosen moment.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

/// Forwards 127.0.0.1:<free port> to an upstream address.
pub struct Proxy {
    addr: SocketAddr,
    control: Arc<Control>,
    task: JoinHandle<()>,
}

struct Control {
    upstream: SocketAddr,
    /// Bumped to close every current connection.
    cuts: watch::Sender<u64>,
    /// While set, bytes from the client are read and dropped instead of forwarded.
    swallowing: AtomicBool,
    swallowed: AtomicU64,
    /// While set, new connections are closed at once (the broker looks down).
    refusing: AtomicBool,
    accepted: AtomicU64,
    /// Connections that ended, and the last bytes the client sent on the latest of them.
    ended: AtomicU64,
    last_bytes: std::sync::Mutex<Vec<u8>>,
    changed: Notify,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let control = Arc::new(Control {
            upstream,
            cuts: watch::Sender::new(0),
            swallowing: AtomicBool::new(false),
            swallowed: AtomicU64::new(0),
            refusing: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            last_bytes: std::sync::Mutex::new(Vec::new()),
            changed: Notify::new(),
        });
        let task = tokio::spawn(accept(listener, control.clone()));
        Proxy {
            addr,
            control,
            task,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Closes every current connection (new ones are accepted).
    pub fn cut(&self) {
        self.control.cuts.send_modify(|n| *n += 1);
    }

    /// Drops (`true`) or forwards (`false`) what clients send.
    pub fn swallow(&self, on: bool) {
        self.control.swallowing.store(on, Ordering::SeqCst);
    }

    /// Closes new connections at once (`true`) or serves them again (`false`).
    pub fn refuse(&self, on: bool) {
        self.control.refusing.store(on, Ordering::SeqCst);
    }

    /// Waits until at least `bytes` bytes have been swallowed.
    pub async fn swallowed_at_least(&self, bytes: u64) {
        self.wait(&format!("{bytes} swallowed bytes"), |c| {
            c.swallowed.load(Ordering::SeqCst) >= bytes
        })
        .await;
    }

    /// Waits until at least `count` connections have been accepted in total.
    pub async fn accepted_at_least(&self, count: u64) {
        self.wait(&format!("{count} accepted connections"), |c| {
            c.accepted.load(Ordering::SeqCst) >= count
        })
        .await;
    }

    /// Bytes swallowed so far.
    pub fn swallowed(&self) -> u64 {
        self.control.swallowed.load(Ordering::SeqCst)
    }

    /// Waits until `count` connections have ended; returns the last bytes (at most 16) the
    /// client sent on the latest one.
    pub async fn ended(&self, count: u64) -> Vec<u8> {
        self.wait(&format!("{count} ended connections"), |c| {
            c.ended.load(Ordering::SeqCst) >= count
        })
        .await;
        self.control.last_bytes.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.control.accepted.load(Ordering::SeqCst)
    }

    async fn wait(&self, what: &str, done: impl Fn(&Control) -> bool) {
        super::within(what, async {
            loop {
                let changed = self.control.changed.notified();
                if done(&self.control) {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

async fn accept(listener: TcpListener, control: Arc<Control>) {
    while let Ok((client, _)) = listener.accept().await {
        if control.refusing.load(Ordering::SeqCst) {
            continue; // Dropping the socket closes it.
        }
        let Ok(upstream) = TcpStream::connect(control.upstream).await else {
            continue; // Upstream down: the client sees its connection closed.
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        control.accepted.fetch_add(1, Ordering::SeqCst);
        control.changed.notify_waiters();
        tokio::spawn(relay(client, upstream, control.clone()));
    }
}

async fn relay(client: TcpStream, upstream: TcpStream, control: Arc<Control>) {
    let mut cuts = control.cuts.subscribe();
    cuts.borrow_and_update();
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let upward = {
        let control = control.clone();
        async move {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let n = client_read.read(&mut buffer).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                {
                    let mut last = control.last_bytes.lock().unwrap();
                    last.extend_from_slice(&buffer[..n]);
                    let excess = last.len().saturating_sub(16);
                    last.drain(..excess);
                }
                if control.swallowing.load(Ordering::SeqCst) {
                    control.swallowed.fetch_add(n as u64, Ordering::SeqCst);
                    control.changed.notify_waiters();
                } else if upstream_write.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    let downward = async move {
        let _ = tokio::io::copy(&mut upstream_read, &mut client_write).await;
    };
    tokio::select! {
        _ = cuts.changed() => {}
        () = upward => {}
        () = downward => {}
    }
    control.ended.fetch_add(1, Ordering::SeqCst);
    control.changed.notify_waiters();
}
