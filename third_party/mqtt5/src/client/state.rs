//! Connection state management and reconnection logic

use crate::callback::CallbackId;
use crate::error::{MqttError, Result};
use crate::packet::subscribe::SubscribePacket;
use crate::packet::subscribe::SubscriptionOptions;
use crate::protocol::v5::properties::Properties;
use tokio::time::Duration;

use super::connection::{ConnectionEvent, ReconnectConfig};
use super::direct::AutomaticReconnectLifecycle;
use super::direct::{StoredSubscription, SubscriptionPersistence};
use super::MqttClient;

#[cfg(feature = "transport-websocket")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WebSocketSettings {
    Configured,
    Default,
}

#[derive(Debug, Clone)]
pub(crate) enum ClientTransportType {
    Tcp,
    Tls,
    #[cfg(feature = "transport-websocket")]
    WebSocket(String, WebSocketSettings),
    #[cfg(feature = "transport-websocket")]
    WebSocketSecure(String, WebSocketSettings),
    #[cfg(feature = "transport-quic")]
    Quic,
    #[cfg(feature = "transport-quic")]
    QuicSecure,
}

impl ClientTransportType {
    pub(crate) fn redirected(self) -> Self {
        match self {
            #[cfg(feature = "transport-websocket")]
            Self::WebSocket(url, _) => Self::WebSocket(url, WebSocketSettings::Default),
            #[cfg(feature = "transport-websocket")]
            Self::WebSocketSecure(url, _) => Self::WebSocketSecure(url, WebSocketSettings::Default),
            other => other,
        }
    }

    pub(crate) fn dials_by_url(&self) -> bool {
        match self {
            #[cfg(feature = "transport-websocket")]
            Self::WebSocket(..) | Self::WebSocketSecure(..) => true,
            _ => false,
        }
    }
}

impl MqttClient {
    pub(crate) async fn trigger_connection_event(&self, event: ConnectionEvent) {
        super::fire_connection_event(&self.connection_event_callbacks, event).await;
    }

    pub(crate) async fn reset_reconnect_counter(&self) {
        let mut inner = self.inner.write().await;
        inner.reconnect_attempt = 0;
    }

    #[cfg(feature = "transport-quic")]
    pub(crate) async fn recover_quic_flows(&self) {
        let inner = self.inner.read().await;
        match inner.recover_flows().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(recovered = n, "Recovered QUIC flows after reconnect"),
            Err(e) => tracing::warn!(error = %e, "Failed to recover QUIC flows"),
        }
    }

    pub(crate) async fn restore_subscriptions_after_connect(
        &self,
        stored_subs: Vec<StoredSubscription>,
        session_present: bool,
    ) {
        if stored_subs.is_empty() {
            return;
        }

        if session_present {
            tracing::info!("Session resumed, restoring {} callbacks", stored_subs.len());
            let inner = self.inner.read().await;
            for (topic, _, _, callback_id) in stored_subs {
                if !inner.callback_manager.restore_callback(callback_id) {
                    tracing::warn!("Failed to restore callback for {topic}: not found in registry");
                }
            }
        } else {
            tracing::info!(
                "Session not resumed, restoring {} subscriptions",
                stored_subs.len()
            );
            for (topic, options, subscription_identifier, callback_id) in stored_subs {
                if let Err(e) = self
                    .resubscribe_internal(&topic, options, subscription_identifier, callback_id)
                    .await
                {
                    tracing::warn!("Failed to restore subscription to {}: {}", topic, e);
                }
            }
        }
    }

    /// Re-sends the SUBSCRIBE for every deferred-ack subscription after the broker reports no
    /// session. `subscribe_with_ack` uses `SubscriptionPersistence::Skip`, so ack subscriptions
    /// are not in `stored_subscriptions` and the regular restore path never touches them; without
    /// this, a `session_present = 0` reconnect would leave the client silently unsubscribed from
    /// its ack topics (the broker discarded the subscription with the session). The ack callback
    /// is already registered in `AckCallbackManager` and survives the disconnect, so only the
    /// SUBSCRIBE is resent — the regular `CallbackManager` (a distinct `CallbackId` space) is not
    /// touched.
    pub(crate) async fn restore_ack_subscriptions_after_lost_session(&self) {
        let inner = self.inner.read().await;
        let subs = inner.stored_ack_subscriptions.lock().clone();
        drop(inner);
        if subs.is_empty() {
            return;
        }
        tracing::info!(
            "Session not resumed, re-subscribing {} deferred-ack subscription(s)",
            subs.len()
        );
        for (topic, options, subscription_identifier, callback_id) in subs {
            if let Err(e) = self
                .resubscribe_ack_internal(&topic, options, subscription_identifier, callback_id)
                .await
            {
                tracing::warn!("Failed to re-subscribe deferred-ack topic {topic}: {e}");
            }
        }
    }

    async fn resubscribe_ack_internal(
        &self,
        topic: &str,
        options: SubscriptionOptions,
        subscription_identifier: Option<u32>,
        callback_id: CallbackId,
    ) -> Result<()> {
        let inner = self.inner.read().await;
        let mut properties = Properties::new();
        if let Some(id) = subscription_identifier {
            properties.set_subscription_identifier(id);
        }
        let packet = SubscribePacket {
            packet_id: 0,
            filters: vec![crate::packet::subscribe::TopicFilter {
                filter: topic.to_string(),
                options,
            }],
            properties,
            protocol_version: inner.options.protocol_version.as_u8(),
        };
        inner
            .subscribe_with_callback_internal(packet, callback_id, SubscriptionPersistence::Skip)
            .await?;
        Ok(())
    }

    async fn is_reconnect_stopped(&self) -> bool {
        let inner = self.inner.read().await;
        inner.automatic_reconnect_lifecycle == AutomaticReconnectLifecycle::Stopped
    }

    pub(crate) async fn monitor_connection(&self) {
        tracing::info!("Starting connection monitor task");

        loop {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = self.monitor_wakeup.notified() => {}
            }

            if self.is_reconnect_stopped().await {
                tracing::info!("Reconnection disabled, exiting connection monitor");
                break;
            }

            let inner = self.inner.read().await;
            if !inner.is_connected() {
                tracing::info!(
                    "Connection monitor detected disconnection, triggering reconnection logic"
                );

                let reconnect_config = inner.options.reconnect_config.clone();
                let last_address = inner.last_address.clone();
                drop(inner);

                if !reconnect_config.enabled {
                    tracing::info!("Reconnection disabled, exiting connection monitor");
                    break;
                }

                if let Some(address) = last_address {
                    tracing::info!(
                        address = %address,
                        "Starting reconnection attempt"
                    );

                    if let Err(e) = self.attempt_reconnection(&address, &reconnect_config).await {
                        tracing::error!("Reconnection failed: {e}");
                        self.trigger_connection_event(ConnectionEvent::ReconnectFailed {
                            error: e,
                        })
                        .await;
                        break;
                    }
                } else {
                    tracing::info!("No last address available for reconnection");
                    self.trigger_connection_event(ConnectionEvent::ReconnectFailed {
                        error: MqttError::ConnectionError(
                            "no address recorded for reconnection".to_string(),
                        ),
                    })
                    .await;
                    break;
                }
            }
        }
    }

    /// Attempt reconnection with exponential backoff
    ///
    /// # Errors
    ///
    /// Returns an error if max reconnection attempts exceeded
    pub(crate) async fn attempt_reconnection(
        &self,
        address: &str,
        config: &ReconnectConfig,
    ) -> Result<()> {
        tracing::info!(
            address = %address,
            max_attempts = ?config.max_attempts,
            initial_delay = ?config.initial_delay,
            "Starting reconnection loop"
        );

        let mut delay = config.initial_delay;

        loop {
            if self.is_reconnect_stopped().await {
                tracing::info!("Automatic reconnect disabled, exiting reconnection loop");
                return Ok(());
            }

            if self.is_connected().await {
                tracing::info!("Already connected, stopping reconnection attempts");
                return Ok(());
            }

            let attempt = {
                let mut inner = self.inner.write().await;
                inner.reconnect_attempt += 1;
                inner.reconnect_attempt
            };

            tracing::info!(
                attempt = attempt,
                max_attempts = ?config.max_attempts,
                delay = ?delay,
                "Attempting reconnection #{}", attempt
            );

            if let Some(max) = config.max_attempts {
                if attempt > max {
                    tracing::error!(
                        attempt = attempt,
                        max_attempts = max,
                        "Max reconnection attempts exceeded"
                    );
                    return Err(MqttError::ConnectionError(
                        "Max reconnection attempts exceeded".to_string(),
                    ));
                }
            }

            self.trigger_connection_event(ConnectionEvent::Reconnecting { attempt })
                .await;

            tokio::time::sleep(delay).await;

            let connection_guard = self.connection_mutex.lock().await;

            if self.is_reconnect_stopped().await {
                tracing::info!("Automatic reconnect disabled before attempt, exiting");
                drop(connection_guard);
                return Ok(());
            }

            if self.is_connected().await {
                tracing::info!("Connected during wait, stopping reconnection attempts");
                return Ok(());
            }

            tracing::info!(
                attempt = attempt,
                address = %address,
                "Making connection attempt #{} to {}", attempt, address
            );
            let reconnection_result = self.connect_internal(address).await;

            drop(connection_guard);

            match reconnection_result {
                Ok(_) => {
                    tracing::info!("Reconnected successfully after {} attempts", attempt);
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!("Reconnection attempt {} failed: {}", attempt, e);

                    delay =
                        Duration::try_from_secs_f64(delay.as_secs_f64() * config.backoff_factor())
                            .map_or(config.max_delay, |next| next.min(config.max_delay));
                }
            }
        }
    }

    /// Internal method to resubscribe with stored options and callback
    ///
    /// # Errors
    ///
    /// Returns an error if resubscription fails
    pub(crate) async fn resubscribe_internal(
        &self,
        topic: &str,
        options: SubscriptionOptions,
        subscription_identifier: Option<u32>,
        callback_id: CallbackId,
    ) -> Result<()> {
        let inner = self.inner.read().await;
        let _ = inner.callback_manager.restore_callback(callback_id);
        drop(inner);

        let inner = self.inner.read().await;
        let mut properties = Properties::new();
        if let Some(id) = subscription_identifier {
            properties.set_subscription_identifier(id);
        }
        let packet = SubscribePacket {
            packet_id: 0,
            filters: vec![crate::packet::subscribe::TopicFilter {
                filter: topic.to_string(),
                options,
            }],
            properties,
            protocol_version: inner.options.protocol_version.as_u8(),
        };
        inner
            .subscribe_with_callback_internal(packet, callback_id, SubscriptionPersistence::Skip)
            .await?;
        Ok(())
    }
}
