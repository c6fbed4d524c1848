//! An in-process MQTT 5 broker (mqtt5) that accepts `K8S-SAT` enhanced authentication with
//! an allowed token, and records every token presented. Plain connections are accepted too
//! (for the scripted service).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use mqtt5::broker::config::{StorageBackend, StorageConfig};
use mqtt5::broker::{
    AuthProvider, AuthResult, BrokerConfig, BrokerShutdownHandle, EnhancedAuthResult, MqttBroker,
};
use mqtt5::packet::connect::ConnectPacket;
use mqtt5::protocol::v5::reason_codes::ReasonCode;
use tokio::sync::Notify;

/// The broker; shut down on drop.
pub struct SatBroker {
    addr: SocketAddr,
    auth: Arc<SatAuth>,
    shutdown: BrokerShutdownHandle,
}

struct SatAuth {
    /// Tokens presented, in order.
    seen: Mutex<Vec<Vec<u8>>>,
    /// Tokens that are refused.
    refused: Mutex<Vec<Vec<u8>>>,
    /// Whether subscriptions are refused.
    deny_subscriptions: std::sync::atomic::AtomicBool,
    /// Topic filters checked for a subscription so far, granted or not.
    subscription_checks: std::sync::atomic::AtomicUsize,
    /// Topic filters granted so far.
    subscriptions_granted: std::sync::atomic::AtomicUsize,
    changed: Notify,
}

impl SatBroker {
    pub async fn start() -> SatBroker {
        let config = BrokerConfig::default()
            .with_bind_address(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_storage(StorageConfig::default().with_backend(StorageBackend::Memory))
            .with_sys_topics_enabled(false);
        let auth = Arc::new(SatAuth {
            seen: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            deny_subscriptions: std::sync::atomic::AtomicBool::new(false),
            subscription_checks: std::sync::atomic::AtomicUsize::new(0),
            subscriptions_granted: std::sync::atomic::AtomicUsize::new(0),
            changed: Notify::new(),
        });
        let mut broker = MqttBroker::with_config(config)
            .await
            .expect("start the SAT broker")
            .with_auth_provider(auth.clone());
        let addr = broker.local_addr().expect("SAT broker address");
        let shutdown = broker.shutdown_handle();
        let mut ready = broker.ready_receiver();
        tokio::spawn(async move {
            let _ = broker.run().await;
        });
        ready
            .wait_for(|ready| *ready)
            .await
            .expect("SAT broker ready");
        SatBroker {
            addr,
            auth,
            shutdown,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Refuses `token` from now on.
    pub fn refuse(&self, token: &[u8]) {
        self.auth.refused.lock().unwrap().push(token.to_vec());
    }

    /// Refuses every subscription from now on.
    pub fn deny_subscriptions(&self) {
        self.auth
            .deny_subscriptions
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Grants subscriptions again.
    pub fn allow_subscriptions(&self) {
        self.auth
            .deny_subscriptions
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Topic filters checked for a subscription so far (two per SUBSCRIBE of the client).
    pub fn subscription_checks(&self) -> usize {
        self.auth
            .subscription_checks
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until `count` topic filters have been checked for a subscription.
    pub async fn subscription_checked(&self, count: usize) {
        self.wait_for(&format!("{count} subscription checks"), || {
            self.subscription_checks() >= count
        })
        .await;
    }

    /// Topic filters granted so far.
    pub fn subscriptions_granted(&self) -> usize {
        self.auth
            .subscriptions_granted
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until `count` topic filters have been granted.
    pub async fn subscriptions_granted_at_least(&self, count: usize) {
        self.wait_for(&format!("{count} granted subscriptions"), || {
            self.subscriptions_granted() >= count
        })
        .await;
    }

    async fn wait_for(&self, what: &str, done: impl Fn() -> bool) {
        super::within(what, async {
            loop {
                let changed = self.auth.changed.notified();
                if done() {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }

    /// Waits until `token` has been presented.
    pub async fn presented(&self, token: &[u8]) {
        super::within("presentation of the token", async {
            loop {
                let changed = self.auth.changed.notified();
                if self.auth.seen.lock().unwrap().iter().any(|t| t == token) {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }

    /// Every token presented so far.
    pub fn tokens(&self) -> Vec<Vec<u8>> {
        self.auth.seen.lock().unwrap().clone()
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
        let allowed = !self
            .deny_subscriptions
            .load(std::sync::atomic::Ordering::SeqCst);
        self.subscription_checks
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if allowed {
            self.subscriptions_granted
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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
        let refused = self.refused.lock().unwrap().contains(&token);
        self.seen.lock().unwrap().push(token);
        self.changed.notify_waiters();
        let method = auth_method.to_owned();
        Box::pin(async move {
            Ok(if method == "K8S-SAT" && !refused {
                EnhancedAuthResult::success(method)
            } else {
                EnhancedAuthResult::fail(method, ReasonCode::NotAuthorized)
            })
        })
    }
}
