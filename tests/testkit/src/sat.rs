//! An in-process MQTT 5 broker (the `mqtt5` crate, as in the embedded server) with `K8S-SAT`
//! enhanced authentication, which Mosquitto lacks. It records every token presented and
//! counts the subscriptions it checks; plain connections, without authentication, are
//! accepted too (for a state store or a stand-in attached to it).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mqtt5::broker::config::{StorageBackend, StorageConfig};
use mqtt5::broker::{
    AuthProvider, AuthResult, BrokerConfig, BrokerShutdownHandle, EnhancedAuthResult, MqttBroker,
};
use mqtt5::packet::connect::ConnectPacket;
use mqtt5::protocol::v5::reason_codes::ReasonCode;
use tokio::sync::Notify;

/// The authentication method it accepts.
const METHOD: &str = "K8S-SAT";

/// The broker, on `127.0.0.1:<free port>`; shut down on drop.
pub struct SatBroker {
    addr: SocketAddr,
    auth: Arc<SatAuth>,
    shutdown: BrokerShutdownHandle,
}

impl std::fmt::Debug for SatBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SatBroker")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

struct SatAuth {
    /// The only token accepted, if set; otherwise every token not refused is.
    only: Option<Vec<u8>>,
    /// Tokens presented, in order.
    seen: Mutex<Vec<Vec<u8>>>,
    /// Tokens that are refused.
    refused: Mutex<Vec<Vec<u8>>>,
    /// Whether subscriptions are refused.
    deny_subscriptions: AtomicBool,
    /// Topic filters checked for a subscription so far, granted or not.
    subscription_checks: AtomicUsize,
    /// Topic filters granted so far.
    subscriptions_granted: AtomicUsize,
    /// Told of every token presented and every subscription checked.
    changed: Notify,
}

/// Every critical section is one push or copy: a poisoned lock is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl SatBroker {
    /// Starts a broker that accepts every token it has not been told to refuse
    /// ([`SatBroker::refuse`]).
    pub async fn start() -> io::Result<SatBroker> {
        SatBroker::with_tokens(None).await
    }

    /// Starts a broker that accepts `token` only.
    pub async fn accepting(token: &[u8]) -> io::Result<SatBroker> {
        SatBroker::with_tokens(Some(token.to_vec())).await
    }

    async fn with_tokens(only: Option<Vec<u8>>) -> io::Result<SatBroker> {
        let config = BrokerConfig::default()
            .with_bind_address(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_storage(StorageConfig::default().with_backend(StorageBackend::Memory))
            .with_sys_topics_enabled(false);
        let auth = Arc::new(SatAuth {
            only,
            seen: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            deny_subscriptions: AtomicBool::new(false),
            subscription_checks: AtomicUsize::new(0),
            subscriptions_granted: AtomicUsize::new(0),
            changed: Notify::new(),
        });
        let failed = |what: &str, error: &dyn std::fmt::Display| {
            io::Error::other(format!("the SAT broker {what}: {error}"))
        };
        let mut broker = MqttBroker::with_config(config)
            .await
            .map_err(|e| failed("cannot start", &e))?
            .with_auth_provider(auth.clone());
        let addr = broker
            .local_addr()
            .ok_or_else(|| io::Error::other("the SAT broker has no address"))?;
        let shutdown = broker.shutdown_handle();
        let mut ready = broker.ready_receiver();
        tokio::spawn(async move {
            let _ = broker.run().await;
        });
        ready
            .wait_for(|ready| *ready)
            .await
            .map_err(|e| failed("did not get ready", &e))?;
        Ok(SatBroker {
            addr,
            auth,
            shutdown,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Refuses `token` from now on.
    pub fn refuse(&self, token: &[u8]) {
        lock(&self.auth.refused).push(token.to_vec());
    }

    /// Refuses every subscription from now on.
    pub fn deny_subscriptions(&self) {
        self.auth.deny_subscriptions.store(true, Ordering::SeqCst);
    }

    /// Grants subscriptions again.
    pub fn allow_subscriptions(&self) {
        self.auth.deny_subscriptions.store(false, Ordering::SeqCst);
    }

    /// Topic filters checked for a subscription so far (two per SUBSCRIBE of a client).
    pub fn subscription_checks(&self) -> usize {
        self.auth.subscription_checks.load(Ordering::SeqCst)
    }

    /// Waits until `count` topic filters have been checked for a subscription, within
    /// [`crate::DEADLINE`].
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn subscription_checked(&self, count: usize) {
        let checks = &self.auth.subscription_checks;
        self.count_reaches("subscription checks", checks, count)
            .await;
    }

    /// Topic filters granted so far.
    pub fn subscriptions_granted(&self) -> usize {
        self.auth.subscriptions_granted.load(Ordering::SeqCst)
    }

    /// Waits until `count` topic filters have been granted, within [`crate::DEADLINE`].
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn subscriptions_granted_at_least(&self, count: usize) {
        let granted = &self.auth.subscriptions_granted;
        self.count_reaches("granted subscriptions", granted, count)
            .await;
    }

    async fn count_reaches(&self, what: &str, counter: &AtomicUsize, count: usize) {
        let what = format!("{count} {what}");
        self.wait_for(&what, || counter.load(Ordering::SeqCst) >= count)
            .await;
    }

    /// Waits until `token` has been presented, within [`crate::DEADLINE`].
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn presented(&self, token: &[u8]) {
        self.wait_for("presentation of the token", || {
            lock(&self.auth.seen).iter().any(|t| t == token)
        })
        .await;
    }

    /// Every token presented so far.
    pub fn tokens(&self) -> Vec<Vec<u8>> {
        lock(&self.auth.seen).clone()
    }

    async fn wait_for(&self, what: &str, done: impl Fn() -> bool) {
        crate::until(what, &self.auth.changed, || done().then_some(())).await;
    }
}

impl Drop for SatBroker {
    fn drop(&mut self) {
        self.shutdown.shutdown();
    }
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl AuthProvider for SatAuth {
    fn authenticate<'a>(
        &'a self,
        _connect: &'a ConnectPacket,
        _client_addr: SocketAddr,
    ) -> Boxed<'a, mqtt5::Result<AuthResult>> {
        Box::pin(async { Ok(AuthResult::success()) })
    }

    fn authorize_publish<'a>(
        &'a self,
        _client_id: &str,
        _user_id: Option<&'a str>,
        _topic: &'a str,
    ) -> Boxed<'a, bool> {
        Box::pin(async { true })
    }

    fn authorize_subscribe<'a>(
        &'a self,
        _client_id: &str,
        _user_id: Option<&'a str>,
        _topic_filter: &'a str,
    ) -> Boxed<'a, bool> {
        let allowed = !self.deny_subscriptions.load(Ordering::SeqCst);
        self.subscription_checks.fetch_add(1, Ordering::SeqCst);
        if allowed {
            self.subscriptions_granted.fetch_add(1, Ordering::SeqCst);
        }
        self.changed.notify_waiters();
        Box::pin(async move { allowed })
    }

    fn supports_enhanced_auth(&self) -> bool {
        true
    }

    fn authenticate_enhanced<'a>(
        &'a self,
        auth_method: &'a str,
        auth_data: Option<&'a [u8]>,
        _client_id: &'a str,
    ) -> Boxed<'a, mqtt5::Result<EnhancedAuthResult>> {
        let token = auth_data.unwrap_or_default().to_vec();
        let accepted = match &self.only {
            Some(only) => *only == token,
            None => !lock(&self.refused).contains(&token),
        };
        lock(&self.seen).push(token);
        self.changed.notify_waiters();
        let method = auth_method.to_owned();
        Box::pin(async move {
            Ok(if method == METHOD && accepted {
                EnhancedAuthResult::success(method)
            } else {
                EnhancedAuthResult::fail(method, ReasonCode::NotAuthorized)
            })
        })
    }
}
