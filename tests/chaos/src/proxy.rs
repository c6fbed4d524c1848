//! A loopback TCP proxy in front of a broker, driven by the fault driver: cut every link,
//! refuse new ones (an outage), delay every chunk in both directions, or point at another
//! upstream (a server restarted on a new port).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Forwards `127.0.0.1:<free port>` to an upstream address.
pub struct Proxy {
    addr: SocketAddr,
    control: Arc<Control>,
    task: JoinHandle<()>,
}

struct Control {
    upstream: Mutex<SocketAddr>,
    /// Bumped to close every current link.
    cuts: watch::Sender<u64>,
    refusing: AtomicBool,
    /// Added before forwarding each chunk, in milliseconds (0: none).
    delay_ms: AtomicU64,
    accepted: AtomicU64,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let control = Arc::new(Control {
            upstream: Mutex::new(upstream),
            cuts: watch::Sender::new(0),
            refusing: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        });
        let task = tokio::spawn(accept(listener, control.clone()));
        Ok(Proxy {
            addr,
            control,
            task,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every current link (new ones are accepted unless refusing).
    pub fn cut(&self) {
        self.control.cuts.send_modify(|n| *n += 1);
    }

    /// Closes new links at once (`true`: the broker looks down) or serves them again.
    pub fn refuse(&self, on: bool) {
        self.control.refusing.store(on, Ordering::SeqCst);
    }

    /// Delays every chunk by `delay` in both directions (zero: no delay).
    pub fn delay(&self, delay: Duration) {
        self.control
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Forwards new links to `upstream` (current ones are left alone).
    pub fn retarget(&self, upstream: SocketAddr) {
        *self.control.upstream.lock().unwrap() = upstream;
    }

    /// Links accepted so far.
    pub fn accepted(&self) -> u64 {
        self.control.accepted.load(Ordering::SeqCst)
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
        let upstream = *control.upstream.lock().unwrap();
        let control = control.clone();
        tokio::spawn(async move {
            // Bounded: a broker that is down refuses at once, one that hangs is cut off.
            let connected =
                tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(upstream)).await;
            let Ok(Ok(upstream)) = connected else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            control.accepted.fetch_add(1, Ordering::SeqCst);
            relay(client, upstream, control).await;
        });
    }
}

async fn relay(client: TcpStream, upstream: TcpStream, control: Arc<Control>) {
    let mut cuts = control.cuts.subscribe();
    cuts.borrow_and_update();
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    tokio::select! {
        _ = cuts.changed() => {}
        () = pump(client_read, upstream_write, &control) => {}
        () = pump(upstream_read, client_write, &control) => {}
    }
}

async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, control: &Control) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let delay = control.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
