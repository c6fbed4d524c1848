//! A loopback TCP proxy in front of a broker, to make clients lose their connection at a
//! chosen moment: cut every link, refuse new ones (the broker looks down), swallow what
//! clients send, delay every chunk, add a link's latency, or point new links at another
//! upstream.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long a new link may take to reach its upstream: a broker that is down refuses at
/// once, one that hangs is given up on (the client sees its connection closed).
const UPSTREAM_CONNECT: Duration = Duration::from_secs(5);
/// How many of the last bytes a client sent are kept ([`Proxy::ended`]).
const LAST_BYTES: usize = 16;

/// Forwards `127.0.0.1:<free port>` to an upstream address; stops (and cuts every link) when
/// dropped. Runs on the tokio runtime that started it.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    control: Arc<Control>,
    task: JoinHandle<()>,
}

#[derive(Debug)]
struct Control {
    upstream: Mutex<SocketAddr>,
    /// Bumped to close every current link.
    cuts: watch::Sender<u64>,
    /// While set, bytes from clients are read and dropped instead of forwarded.
    swallowing: AtomicBool,
    swallowed: AtomicU64,
    /// While set, new links are closed at once.
    refusing: AtomicBool,
    /// Added before forwarding each chunk, in milliseconds (0: none).
    delay_ms: AtomicU64,
    /// Each chunk is forwarded this long after it was read, while reading goes on, in
    /// microseconds (0: none).
    latency_us: AtomicU64,
    accepted: AtomicU64,
    /// Links that ended, and the last bytes the client sent on the latest of them.
    ended: AtomicU64,
    last_bytes: Mutex<Vec<u8>>,
    /// Told of every change of the counters above.
    changed: Notify,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let control = Arc::new(Control {
            upstream: Mutex::new(upstream),
            cuts: watch::Sender::new(0),
            swallowing: AtomicBool::new(false),
            swallowed: AtomicU64::new(0),
            refusing: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            latency_us: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            last_bytes: Mutex::new(Vec::new()),
            changed: Notify::new(),
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

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Closes every current link (new ones are accepted unless refusing).
    pub fn cut(&self) {
        self.control.cuts.send_modify(|n| *n += 1);
    }

    /// Drops (`true`) or forwards (`false`) what clients send.
    pub fn swallow(&self, on: bool) {
        self.control.swallowing.store(on, Ordering::SeqCst);
    }

    /// Closes new links at once (`true`: the broker looks down) or serves them again.
    pub fn refuse(&self, on: bool) {
        self.control.refusing.store(on, Ordering::SeqCst);
    }

    /// Delays every chunk by `delay` in both directions (zero: no delay).
    pub fn delay(&self, delay: Duration) {
        let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.control.delay_ms.store(millis, Ordering::SeqCst);
    }

    /// Forwards every chunk `latency` after it was read, in both directions, while later
    /// chunks keep being read (zero: none): a link with that one-way latency, where requests
    /// sent back to back are all under way at once. [`Proxy::delay`] instead holds the link
    /// still for its delay before each chunk, which also throttles it.
    pub fn latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.control.latency_us.store(micros, Ordering::SeqCst);
    }

    /// Forwards new links to `upstream` (current ones are left alone).
    pub fn retarget(&self, upstream: SocketAddr) {
        *lock(&self.control.upstream) = upstream;
    }

    /// Links accepted (and connected upstream) so far.
    pub fn accepted(&self) -> u64 {
        self.control.accepted.load(Ordering::SeqCst)
    }

    /// Bytes swallowed so far.
    pub fn swallowed(&self) -> u64 {
        self.control.swallowed.load(Ordering::SeqCst)
    }

    /// Waits until at least `bytes` bytes have been swallowed, within [`crate::DEADLINE`].
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn swallowed_at_least(&self, bytes: u64) {
        self.wait(&format!("{bytes} swallowed bytes"), |c| {
            c.swallowed.load(Ordering::SeqCst) >= bytes
        })
        .await;
    }

    /// Waits until at least `count` links have been accepted in total, within
    /// [`crate::DEADLINE`].
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn accepted_at_least(&self, count: u64) {
        self.wait(&format!("{count} accepted connections"), |c| {
            c.accepted.load(Ordering::SeqCst) >= count
        })
        .await;
    }

    /// Waits until `count` links have ended, within [`crate::DEADLINE`]; returns the last
    /// bytes (at most 16) the client sent on the latest one.
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn ended(&self, count: u64) -> Vec<u8> {
        self.wait(&format!("{count} ended connections"), |c| {
            c.ended.load(Ordering::SeqCst) >= count
        })
        .await;
        lock(&self.control.last_bytes).clone()
    }

    async fn wait(&self, what: &str, done: impl Fn(&Control) -> bool) {
        let control = &self.control;
        crate::until(what, &control.changed, || done(control).then_some(())).await;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

/// Every critical section is one assignment or copy: a poisoned lock is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn accept(listener: TcpListener, control: Arc<Control>) {
    while let Ok((client, _)) = listener.accept().await {
        if control.refusing.load(Ordering::SeqCst) {
            continue; // Dropping the socket closes it.
        }
        let upstream = *lock(&control.upstream);
        let control = control.clone();
        tokio::spawn(async move {
            let connected = tokio::time::timeout(UPSTREAM_CONNECT, TcpStream::connect(upstream));
            let Ok(Ok(upstream)) = connected.await else {
                return; // Upstream down: the client sees its connection closed.
            };
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            control.accepted.fetch_add(1, Ordering::SeqCst);
            control.changed.notify_waiters();
            relay(client, upstream, &control).await;
            control.ended.fetch_add(1, Ordering::SeqCst);
            control.changed.notify_waiters();
        });
    }
}

async fn relay(client: TcpStream, upstream: TcpStream, control: &Control) {
    let mut cuts = control.cuts.subscribe();
    cuts.borrow_and_update();
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    tokio::select! {
        _ = cuts.changed() => {}
        () = pump(client_read, upstream_write, control, Direction::Upward) => {}
        () = pump(upstream_read, client_write, control, Direction::Downward) => {}
    }
}

/// Which way a pump forwards: only what clients send is recorded and may be swallowed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Upward,
    Downward,
}

async fn pump(from: OwnedReadHalf, mut to: OwnedWriteHalf, control: &Control, way: Direction) {
    // Reading and writing are apart so that a chunk waiting out its latency does not stop the
    // next ones from being read: each carries the time it is due.
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let mut write = std::pin::pin!(async move {
        while let Some((at, chunk)) = due.recv().await {
            if at > Instant::now() {
                tokio::time::sleep_until(at).await;
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
    });
    tokio::select! {
        // The writing side failed: the link is over.
        () = &mut write => {}
        // The reading side ended: what was read still goes through, then the link ends.
        () = read(from, chunks, control, way) => write.await,
    }
}

async fn read(
    mut from: OwnedReadHalf,
    chunks: mpsc::UnboundedSender<(Instant, Vec<u8>)>,
    control: &Control,
    way: Direction,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let latency = Duration::from_micros(control.latency_us.load(Ordering::SeqCst));
        let at = Instant::now() + latency;
        if way == Direction::Upward {
            let mut last = lock(&control.last_bytes);
            last.extend_from_slice(&buffer[..n]);
            let excess = last.len().saturating_sub(LAST_BYTES);
            last.drain(..excess);
        }
        let delay = control.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if way == Direction::Upward && control.swallowing.load(Ordering::SeqCst) {
            control.swallowed.fetch_add(n as u64, Ordering::SeqCst);
            control.changed.notify_waiters();
        } else if chunks.send((at, buffer[..n].to_vec())).is_err() {
            return;
        }
    }
}
