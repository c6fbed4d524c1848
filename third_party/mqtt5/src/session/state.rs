use crate::error::{MqttError, Result};
use crate::packet::publish::PublishPacket;
use crate::packet_id::PacketIdGenerator;
use crate::session::flow_control::{FlowControlManager, TopicAliasManager};
use crate::session::limits::LimitsManager;
use crate::session::queue::{MessageQueue, QueuedMessage};
#[cfg(not(target_arch = "wasm32"))]
use crate::session::quic_flow::{FlowRegistry, FlowState};
use crate::session::subscription::{Subscription, SubscriptionManager};
use crate::time::{Duration, Instant};
#[cfg(not(target_arch = "wasm32"))]
use crate::transport::flow::{FlowFlags, FlowId};
use crate::types::WillMessage;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::RwLock;

/// Session configuration
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Session expiry interval in seconds (0 = session ends on disconnect)
    pub session_expiry_interval: u32,
    /// Maximum number of queued messages
    pub max_queued_messages: usize,
    /// Maximum size of queued messages in bytes
    pub max_queued_size: usize,
    /// Whether to persist session state
    pub persistent: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            session_expiry_interval: 0,
            max_queued_messages: 1000,
            max_queued_size: 64 * 1024 * 1024,
            persistent: false,
        }
    }
}

/// MQTT session state
#[derive(Debug)]
pub struct SessionState {
    /// Client identifier
    client_id: String,
    /// Session configuration
    config: SessionConfig,
    /// Subscriptions
    subscriptions: Arc<RwLock<SubscriptionManager>>,
    /// `QoS` 1 and 2 message queue
    message_queue: Arc<RwLock<MessageQueue>>,
    unacked_publishes: Arc<RwLock<HashMap<u16, (u64, PublishPacket)>>>,
    unacked_pubrels: Arc<RwLock<HashMap<u16, (u64, Instant)>>>,
    outbound_send_order: AtomicU64,
    /// Inbound `QoS` 2 packet IDs we have PUBREC'd and owe a PUBCOMP for
    /// (`packet_id` -> timestamp).
    ///
    /// Kept separate from `unacked_pubrels`: inbound and outbound packet IDs are
    /// independent namespaces that both start at 1, so sharing one map lets an
    /// outbound flow mask an inbound packet ID and silently drop a live message.
    inbound_pubrecs: Arc<RwLock<HashMap<u16, Instant>>>,
    /// Deferred-ack dedup guard: inbound `QoS` 1/2 packet IDs already handed to the
    /// application. Distinct from `inbound_pubrecs` (which now means only "PUBREC
    /// written, awaiting PUBREL"): with deferred acknowledgement the PUBREC is not
    /// written until the app resolves its token, so delivery and PUBREC-owed are
    /// separate facts. In-memory only, never persisted: it must survive a transport
    /// reconnect but be lost with the token on a process crash.
    inbound_delivered: Arc<RwLock<HashMap<u16, Instant>>>,
    /// The application's terminal decision per deferred inbound `QoS` 2 packet ID,
    /// used to re-send the matching acknowledgement on a post-reconnect duplicate.
    inbound_resolution: Arc<RwLock<HashMap<u16, AckResolution>>>,
    #[cfg(not(target_arch = "wasm32"))]
    publish_flows: Arc<RwLock<HashMap<u16, FlowId>>>,
    /// Session creation time
    created_at: Instant,
    /// Last activity time
    last_activity: Arc<RwLock<Instant>>,
    /// Whether this is a clean session
    clean_start: bool,
    /// Flow control manager
    flow_control: Arc<RwLock<FlowControlManager>>,
    /// Topic alias manager for outgoing messages
    topic_alias_out: Arc<RwLock<TopicAliasManager>>,
    /// Topic alias manager for incoming messages
    topic_alias_in: Arc<RwLock<TopicAliasManager>>,
    /// Will message (to be published on abnormal disconnection)
    will_message: Arc<RwLock<Option<WillMessage>>>,
    /// Will delay timer handle
    will_delay_handle: Arc<RwLock<Option<tokio::task::JoinHandle<()>>>>,
    /// Limits manager for packet size and message expiry
    limits: Arc<RwLock<LimitsManager>>,
    #[cfg(not(target_arch = "wasm32"))]
    flow_registry: Arc<RwLock<FlowRegistry>>,
}

/// Which acknowledgement an outbound packet identifier is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboundStage {
    /// A `QoS` 1 PUBLISH waiting for PUBACK.
    AwaitingPubAck,
    /// A `QoS` 2 PUBLISH waiting for PUBREC.
    AwaitingPubRec,
    /// A `QoS` 2 PUBREL waiting for PUBCOMP.
    AwaitingPubComp,
}

#[derive(Debug, Clone)]
pub enum OutboundReplay {
    Publish(PublishPacket),
    PubRel(u16),
}

/// The application's decision for a deferred inbound `QoS` 2 message while its handshake
/// is still in flight.
///
/// Only the not-yet-completed states are tracked: a duplicate PUBLISH replayed after a
/// reconnect while the message is `Acked` re-sends the success PUBREC. A rejected or
/// fully completed exchange clears its state entirely (the packet id is then free for
/// reuse), so those are not represented here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckResolution {
    /// The application still holds the token; no PUBREC has been written.
    Unresolved,
    /// The application acked; a success PUBREC was (or must be re-)written.
    Acked,
}

impl SessionState {
    /// Creates a new session state
    #[must_use]
    pub fn new(client_id: String, config: SessionConfig, clean_start: bool) -> Self {
        let now = Instant::now();
        Self {
            client_id,
            subscriptions: Arc::new(RwLock::new(SubscriptionManager::new())),
            message_queue: Arc::new(RwLock::new(MessageQueue::new(
                config.max_queued_messages,
                config.max_queued_size,
            ))),
            config,
            unacked_publishes: Arc::new(RwLock::new(HashMap::new())),
            unacked_pubrels: Arc::new(RwLock::new(HashMap::new())),
            outbound_send_order: AtomicU64::new(0),
            inbound_pubrecs: Arc::new(RwLock::new(HashMap::new())),
            inbound_delivered: Arc::new(RwLock::new(HashMap::new())),
            inbound_resolution: Arc::new(RwLock::new(HashMap::new())),
            #[cfg(not(target_arch = "wasm32"))]
            publish_flows: Arc::new(RwLock::new(HashMap::new())),
            created_at: now,
            last_activity: Arc::new(RwLock::new(now)),
            clean_start,
            flow_control: Arc::new(RwLock::new(FlowControlManager::new(65535))),
            topic_alias_out: Arc::new(RwLock::new(TopicAliasManager::new(0))),
            topic_alias_in: Arc::new(RwLock::new(TopicAliasManager::new(0))),
            will_message: Arc::new(RwLock::new(None)),
            will_delay_handle: Arc::new(RwLock::new(None)),
            limits: Arc::new(RwLock::new(LimitsManager::with_defaults())),
            #[cfg(not(target_arch = "wasm32"))]
            flow_registry: Arc::new(RwLock::new(FlowRegistry::new(256))),
        }
    }

    #[must_use]
    /// Gets the client ID
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    pub fn set_client_id(&mut self, client_id: String) {
        self.client_id = client_id;
    }

    fn next_send_order(&self) -> u64 {
        self.outbound_send_order.fetch_add(1, Ordering::SeqCst)
    }

    #[must_use]
    /// Checks if this is a clean session
    pub fn is_clean(&self) -> bool {
        self.clean_start
    }

    /// Updates last activity time
    pub async fn touch(&self) {
        *self.last_activity.write().await = Instant::now();
    }

    /// Checks if session has expired
    pub async fn is_expired(&self) -> bool {
        if self.config.session_expiry_interval == 0 {
            return false;
        }

        let last_activity = *self.last_activity.read().await;
        let expiry_duration = Duration::from_secs(u64::from(self.config.session_expiry_interval));
        last_activity.elapsed() > expiry_duration
    }

    /// Adds a subscription
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn add_subscription(
        &self,
        topic_filter: String,
        subscription: Subscription,
    ) -> Result<()> {
        self.touch().await;
        self.subscriptions
            .write()
            .await
            .add(topic_filter, subscription)
    }

    /// Removes a subscription
    ///
    /// Returns `Ok(true)` if the subscription existed and was removed,
    /// `Ok(false)` if the subscription did not exist.
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn remove_subscription(&self, topic_filter: &str) -> Result<bool> {
        self.touch().await;
        self.subscriptions.write().await.remove(topic_filter)
    }

    /// Gets subscriptions matching a topic
    pub async fn matching_subscriptions(&self, topic: &str) -> Vec<(String, Subscription)> {
        self.subscriptions
            .read()
            .await
            .matching_subscriptions(topic)
    }

    /// Gets all subscriptions
    pub async fn all_subscriptions(&self) -> HashMap<String, Subscription> {
        self.subscriptions.read().await.all()
    }

    /// Queues a message for delivery
    ///
    /// Returns information about the queue operation including whether the message
    /// was queued and how many messages were dropped to make room.
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn queue_message(
        &self,
        message: QueuedMessage,
    ) -> Result<crate::session::queue::QueueResult> {
        self.touch().await;
        let limits = self.limits.read().await;
        let expiring_message = message.to_expiring(&limits);
        drop(limits);
        self.message_queue.write().await.enqueue(expiring_message)
    }

    /// Dequeues messages up to a limit
    pub async fn dequeue_messages(&self, limit: usize) -> Vec<QueuedMessage> {
        self.touch().await;
        self.message_queue
            .write()
            .await
            .dequeue_batch(limit)
            .into_iter()
            .map(|expiring| QueuedMessage {
                topic: expiring.topic,
                payload: expiring.payload,
                qos: expiring.qos,
                retain: expiring.retain,
                packet_id: expiring.packet_id,
            })
            .collect()
    }

    /// Gets the number of queued messages
    pub async fn queued_message_count(&self) -> usize {
        self.message_queue.read().await.len()
    }

    /// Stores an unacknowledged PUBLISH packet
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn store_unacked_publish(&self, packet: PublishPacket) -> Result<()> {
        if let Some(packet_id) = packet.packet_id {
            self.touch().await;
            let order = self.next_send_order();
            self.unacked_publishes
                .write()
                .await
                .insert(packet_id, (order, packet));
            Ok(())
        } else {
            Err(MqttError::ProtocolError(
                "PUBLISH packet missing packet ID".to_string(),
            ))
        }
    }

    /// Removes an acknowledged PUBLISH packet
    pub async fn remove_unacked_publish(&self, packet_id: u16) -> Option<PublishPacket> {
        self.touch().await;
        self.unacked_publishes
            .write()
            .await
            .remove(&packet_id)
            .map(|(_, packet)| packet)
    }

    /// Gets all unacknowledged PUBLISH packets
    pub async fn get_unacked_publishes(&self) -> Vec<PublishPacket> {
        let mut ordered: Vec<(u64, PublishPacket)> = self
            .unacked_publishes
            .read()
            .await
            .values()
            .cloned()
            .collect();
        ordered.sort_by_key(|(order, _)| *order);
        ordered.into_iter().map(|(_, packet)| packet).collect()
    }

    /// Stores an unacknowledged PUBREL packet
    pub async fn store_unacked_pubrel(&self, packet_id: u16) {
        self.store_pubrel(packet_id).await;
    }

    /// Removes an acknowledged PUBREL packet
    pub async fn remove_unacked_pubrel(&self, packet_id: u16) -> bool {
        self.touch().await;
        self.unacked_pubrels
            .write()
            .await
            .remove(&packet_id)
            .is_some()
    }

    /// Gets all unacknowledged PUBREL packet IDs
    pub async fn get_unacked_pubrels(&self) -> Vec<u16> {
        self.unacked_pubrels.read().await.keys().copied().collect()
    }

    pub async fn outbound_replay(&self) -> Vec<OutboundReplay> {
        let publishes = self.unacked_publishes.read().await;
        let pubrels = self.unacked_pubrels.read().await;
        let mut ordered: Vec<(u64, OutboundReplay)> = publishes
            .values()
            .map(|(order, packet)| (*order, OutboundReplay::Publish(packet.clone())))
            .chain(
                pubrels
                    .iter()
                    .map(|(packet_id, (order, _))| (*order, OutboundReplay::PubRel(*packet_id))),
            )
            .collect();
        drop(pubrels);
        drop(publishes);
        ordered.sort_by_key(|(order, _)| *order);
        ordered.into_iter().map(|(_, item)| item).collect()
    }

    /// Reports which acknowledgement the outbound packet identifier is waiting for.
    pub async fn outbound_stage(&self, packet_id: u16) -> Option<OutboundStage> {
        let publish_qos = self
            .unacked_publishes
            .read()
            .await
            .get(&packet_id)
            .map(|(_, publish)| publish.qos);
        match publish_qos {
            Some(crate::QoS::ExactlyOnce) => Some(OutboundStage::AwaitingPubRec),
            Some(_) => Some(OutboundStage::AwaitingPubAck),
            None => self
                .unacked_pubrels
                .read()
                .await
                .contains_key(&packet_id)
                .then_some(OutboundStage::AwaitingPubComp),
        }
    }

    pub async fn discard_outbound_state(&self) {
        self.unacked_publishes.write().await.clear();
        self.unacked_pubrels.write().await.clear();
    }

    pub async fn complete_outbound(&self, packet_id: u16) {
        self.touch().await;
        self.unacked_publishes.write().await.remove(&packet_id);
        self.unacked_pubrels.write().await.remove(&packet_id);
    }

    pub async fn allocate_packet_id(
        &self,
        generator: &PacketIdGenerator,
        in_use_elsewhere: impl Fn(u16) -> bool,
    ) -> Option<u16> {
        let publishes = self.unacked_publishes.read().await;
        let pubrels = self.unacked_pubrels.read().await;
        generator.next_available(|packet_id| {
            publishes.contains_key(&packet_id)
                || pubrels.contains_key(&packet_id)
                || in_use_elsewhere(packet_id)
        })
    }

    /// Clears all session state
    pub async fn clear(&self) {
        self.subscriptions.write().await.clear();
        self.message_queue.write().await.clear();
        self.unacked_publishes.write().await.clear();
        self.unacked_pubrels.write().await.clear();
        self.inbound_pubrecs.write().await.clear();
        self.inbound_delivered.write().await.clear();
        self.inbound_resolution.write().await.clear();
        #[cfg(not(target_arch = "wasm32"))]
        self.publish_flows.write().await.clear();
    }

    /// Gets session statistics
    pub async fn stats(&self) -> SessionStats {
        SessionStats {
            subscription_count: self.subscriptions.read().await.count(),
            queued_message_count: self.message_queue.read().await.len(),
            unacked_publish_count: self.unacked_publishes.read().await.len(),
            unacked_pubrel_count: self.unacked_pubrels.read().await.len(),
            uptime: self.created_at.elapsed(),
            last_activity: self.last_activity.read().await.elapsed(),
        }
    }

    /// Sets the receive maximum for flow control
    pub async fn set_receive_maximum(&self, receive_maximum: u16) {
        let mut flow_control = self.flow_control.write().await;
        flow_control.set_receive_maximum(receive_maximum).await;
    }

    /// Sets the topic alias maximum for outgoing messages
    pub async fn set_topic_alias_maximum_out(&self, max: u16) {
        let mut topic_alias = self.topic_alias_out.write().await;
        *topic_alias = TopicAliasManager::new(max);
    }

    /// Sets the topic alias maximum for incoming messages
    pub async fn set_topic_alias_maximum_in(&self, max: u16) {
        let mut topic_alias = self.topic_alias_in.write().await;
        *topic_alias = TopicAliasManager::new(max);
    }

    /// Checks if we can send a `QoS` 1/2 message according to flow control
    pub async fn can_send_qos_message(&self) -> bool {
        self.flow_control.read().await.can_send()
    }

    /// Registers a `QoS` 1/2 message as in-flight for flow control
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn register_in_flight(&self, packet_id: u16) -> Result<()> {
        self.flow_control
            .write()
            .await
            .register_send(packet_id)
            .await
    }

    /// Acknowledges a `QoS` 1/2 message for flow control
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn acknowledge_in_flight(&self, packet_id: u16) -> Result<()> {
        self.flow_control.write().await.acknowledge(packet_id).await
    }

    #[must_use]
    /// Gets the flow control manager
    pub fn flow_control(&self) -> &Arc<RwLock<FlowControlManager>> {
        &self.flow_control
    }

    #[must_use]
    /// Gets the outgoing topic alias manager
    pub fn topic_alias_out(&self) -> &Arc<RwLock<TopicAliasManager>> {
        &self.topic_alias_out
    }

    #[must_use]
    /// Gets the limits manager
    pub fn limits(&self) -> &Arc<RwLock<LimitsManager>> {
        &self.limits
    }

    /// Sets the server's maximum packet size from CONNACK
    pub async fn set_server_maximum_packet_size(&self, size: u32) {
        let mut limits = self.limits.write().await;
        limits.set_server_maximum_packet_size(size);
    }

    /// Clears the server's maximum packet size when a CONNACK omits it
    pub async fn reset_server_maximum_packet_size(&self) {
        let mut limits = self.limits.write().await;
        limits.reset_server_maximum_packet_size();
    }

    /// Sets the client's maximum packet size from `ConnectOptions`
    pub async fn set_client_maximum_packet_size(&self, size: u32) {
        let mut limits = self.limits.write().await;
        limits.set_client_maximum_packet_size(size);
    }

    /// Checks if a packet size is within limits
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn check_packet_size(&self, size: usize) -> Result<()> {
        self.limits.read().await.check_packet_size(size)
    }

    /// Gets the effective maximum packet size
    pub async fn effective_maximum_packet_size(&self) -> u32 {
        self.limits.read().await.effective_maximum_packet_size()
    }

    /// Gets or creates a topic alias for outgoing messages
    pub async fn get_or_create_topic_alias(&self, topic: &str) -> Option<u16> {
        self.topic_alias_out
            .write()
            .await
            .get_or_create_alias(topic)
    }

    /// Registers a topic alias from incoming messages
    ///
    /// # Errors
    ///
    /// Returns an error if the operation fails
    pub async fn register_incoming_topic_alias(&self, alias: u16, topic: &str) -> Result<()> {
        self.topic_alias_in
            .write()
            .await
            .register_alias(alias, topic)
    }

    /// Gets the topic for an incoming alias
    pub async fn get_topic_for_alias(&self, alias: u16) -> Option<String> {
        self.topic_alias_in
            .read()
            .await
            .get_topic(alias)
            .map(String::from)
    }

    /// Removes expired messages from the queue
    pub async fn remove_expired_messages(&self, timeout: crate::time::Duration) {
        self.message_queue.write().await.remove_expired(timeout);
    }

    /// Sets the Will message for this session
    pub async fn set_will_message(&self, will: Option<WillMessage>) {
        let mut will_message = self.will_message.write().await;
        *will_message = will;
    }

    /// Gets the Will message for this session
    pub async fn will_message(&self) -> Option<WillMessage> {
        let will_message = self.will_message.read().await;
        will_message.clone()
    }

    /// Triggers Will message publication (called on abnormal disconnection)
    pub async fn trigger_will_message(&self) -> Option<WillMessage> {
        let mut will_message = self.will_message.write().await;
        let will = will_message.take();

        if let Some(ref will) = will {
            if let Some(delay_seconds) = will.properties.will_delay_interval {
                if delay_seconds > 0 {
                    let delay_handle_clone = Arc::clone(&self.will_delay_handle);

                    let handle = tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(u64::from(delay_seconds))).await;
                    });

                    let mut delay_handle = delay_handle_clone.write().await;
                    *delay_handle = Some(handle);

                    return None;
                }
            }
        }

        will
    }

    /// Cancels the Will message (called on normal disconnection)
    pub async fn cancel_will_message(&self) {
        let mut will_message = self.will_message.write().await;
        *will_message = None;

        let mut delay_handle = self.will_delay_handle.write().await;
        if let Some(handle) = delay_handle.take() {
            handle.abort();
        }
    }

    /// Checks if the will delay has completed
    pub async fn is_will_delay_complete(&self) -> bool {
        let delay_handle = self.will_delay_handle.read().await;
        if let Some(ref handle) = *delay_handle {
            handle.is_finished()
        } else {
            true
        }
    }

    /// Complete a publish (`QoS` 1 - after PUBACK received)
    pub async fn complete_publish(&self, packet_id: u16) {
        self.touch().await;
        self.unacked_publishes.write().await.remove(&packet_id);
    }

    /// Records that PUBREC is owed for an inbound `QoS` 2 packet ID, reporting whether this
    /// is the first receipt.
    ///
    /// The check and the insert share one write lock so concurrent readers (QUIC spawns one
    /// task per stream, all sharing this session) cannot both observe a packet ID as new and
    /// deliver it twice.
    pub async fn mark_pubrec_pending(&self, packet_id: u16) -> bool {
        self.touch().await;
        self.inbound_pubrecs
            .write()
            .await
            .insert(packet_id, Instant::now())
            .is_none()
    }

    /// Records that PUBREC has actually been written for a deferred inbound `QoS` 2
    /// packet ID (`has_pubrec` becomes true only at ack time, not at delivery).
    pub async fn mark_pubrec_sent(&self, packet_id: u16) {
        self.touch().await;
        self.inbound_pubrecs
            .write()
            .await
            .insert(packet_id, Instant::now());
    }

    /// Marks an inbound packet ID as delivered to the application, reporting whether
    /// this is the first receipt. The check and insert share one write lock so a
    /// duplicate racing on a shared session cannot be delivered twice.
    pub async fn mark_delivered(&self, packet_id: u16) -> bool {
        self.touch().await;
        self.inbound_delivered
            .write()
            .await
            .insert(packet_id, Instant::now())
            .is_none()
    }

    /// Check whether an inbound packet ID has already been delivered.
    pub async fn is_delivered(&self, packet_id: u16) -> bool {
        self.inbound_delivered.read().await.contains_key(&packet_id)
    }

    /// Records the application's terminal decision for a deferred inbound `QoS` 2 id.
    pub async fn set_resolution(&self, packet_id: u16, resolution: AckResolution) {
        self.inbound_resolution
            .write()
            .await
            .insert(packet_id, resolution);
    }

    /// Returns the application's decision for a deferred inbound id, or `Unresolved`.
    pub async fn get_resolution(&self, packet_id: u16) -> AckResolution {
        self.inbound_resolution
            .read()
            .await
            .get(&packet_id)
            .copied()
            .unwrap_or(AckResolution::Unresolved)
    }

    /// Drops all deferred inbound state for a completed packet ID.
    pub async fn clear_inbound_state(&self, packet_id: u16) {
        self.inbound_delivered.write().await.remove(&packet_id);
        self.inbound_resolution.write().await.remove(&packet_id);
        self.inbound_pubrecs.write().await.remove(&packet_id);
    }

    /// Drops all inbound `QoS` 2 de-duplication state (the delivered guard, the deferred
    /// resolution, and the sent-PUBREC tracking), returning whether any was present.
    ///
    /// Used when the broker reports no session on reconnect (`session_present = 0`): the
    /// retained dedup state is stale against the broker's fresh session and would otherwise
    /// suppress a genuinely new PUBLISH that reuses a packet ID as a duplicate.
    pub async fn clear_all_inbound_state(&self) -> bool {
        let mut had_state = false;
        {
            let mut delivered = self.inbound_delivered.write().await;
            had_state |= !delivered.is_empty();
            delivered.clear();
        }
        {
            let mut resolution = self.inbound_resolution.write().await;
            had_state |= !resolution.is_empty();
            resolution.clear();
        }
        {
            let mut pubrecs = self.inbound_pubrecs.write().await;
            had_state |= !pubrecs.is_empty();
            pubrecs.clear();
        }
        had_state
    }

    /// Frees the inbound receive-maximum slot for a completed inbound packet ID.
    pub async fn acknowledge_inbound(&self, packet_id: u16) {
        self.flow_control
            .read()
            .await
            .acknowledge_inbound(packet_id)
            .await;
    }

    /// Reserves an inbound receive-maximum slot for a newly received packet ID.
    ///
    /// # Errors
    /// Returns `ReceiveMaximumExceeded` if the inbound window is full.
    pub async fn register_inbound(&self, packet_id: u16) -> Result<()> {
        self.flow_control
            .read()
            .await
            .register_inbound_publish(packet_id)
            .await
    }

    /// Sets the inbound receive maximum so held tokens actually bound the window.
    pub async fn set_inbound_receive_maximum(&self, value: u16) {
        self.flow_control
            .write()
            .await
            .set_inbound_receive_maximum(value);
    }

    /// Check if we have a stored PUBREC for the given inbound packet ID
    pub async fn has_pubrec(&self, packet_id: u16) -> bool {
        self.inbound_pubrecs.read().await.contains_key(&packet_id)
    }

    /// Remove PUBREC state for the given packet ID (called when handling PUBREL)
    pub async fn remove_pubrec(&self, packet_id: u16) {
        self.touch().await;
        self.inbound_pubrecs.write().await.remove(&packet_id);
    }

    /// Store PUBREL for `QoS` 2 flow
    pub async fn store_pubrel(&self, packet_id: u16) {
        self.touch().await;
        let order = self.next_send_order();
        self.unacked_pubrels
            .write()
            .await
            .entry(packet_id)
            .or_insert((order, Instant::now()));
    }

    pub async fn complete_pubrec(&self, packet_id: u16) {
        self.touch().await;
        let mut publishes = self.unacked_publishes.write().await;
        let mut pubrels = self.unacked_pubrels.write().await;
        if let Some((order, _)) = publishes.remove(&packet_id) {
            pubrels.insert(packet_id, (order, Instant::now()));
        }
    }

    /// Complete PUBREL (after receiving PUBCOMP)
    pub async fn complete_pubrel(&self, packet_id: u16) {
        self.touch().await;
        self.unacked_pubrels.write().await.remove(&packet_id);
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[must_use]
    pub fn flow_registry(&self) -> &Arc<RwLock<FlowRegistry>> {
        &self.flow_registry
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn register_flow(&self, state: FlowState) -> bool {
        self.touch().await;
        self.flow_registry.write().await.register_flow(state)
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn create_client_flow(
        &self,
        flags: FlowFlags,
        expire_interval: Option<std::time::Duration>,
    ) -> Option<FlowId> {
        self.touch().await;
        self.flow_registry
            .write()
            .await
            .new_client_flow(flags, expire_interval)
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn get_flow(&self, id: FlowId) -> Option<FlowState> {
        self.flow_registry.read().await.get(id).cloned()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn remove_flow(&self, id: FlowId) -> Option<FlowState> {
        self.touch().await;
        self.flow_registry.write().await.remove(id)
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn touch_flow(&self, id: FlowId) {
        self.flow_registry.write().await.touch(id);
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn clear_flows(&self) {
        self.flow_registry.write().await.clear();
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn get_all_flow_ids(&self) -> Vec<FlowId> {
        self.flow_registry
            .read()
            .await
            .iter()
            .map(|(id, _)| *id)
            .collect()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn get_recoverable_flows(&self) -> Vec<(FlowId, FlowFlags)> {
        self.flow_registry
            .read()
            .await
            .iter()
            .filter(|(_, state)| !state.is_expired())
            .map(|(id, state)| (*id, state.flags))
            .collect()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn expire_flows(&self) -> Vec<FlowId> {
        self.flow_registry.write().await.expire_flows()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn flow_count(&self) -> usize {
        self.flow_registry.read().await.len()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn store_publish_flow(&self, packet_id: u16, flow_id: FlowId) {
        self.touch().await;
        self.publish_flows.write().await.insert(packet_id, flow_id);
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn get_publish_flow(&self, packet_id: u16) -> Option<FlowId> {
        self.publish_flows.read().await.get(&packet_id).copied()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn remove_publish_flow(&self, packet_id: u16) -> Option<FlowId> {
        self.touch().await;
        self.publish_flows.write().await.remove(&packet_id)
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub async fn clear_publish_flows(&self) {
        self.publish_flows.write().await.clear();
    }
}

/// Session statistics
#[derive(Debug, Clone)]
pub struct SessionStats {
    /// Number of active subscriptions
    pub subscription_count: usize,
    /// Number of queued messages
    pub queued_message_count: usize,
    /// Number of unacknowledged PUBLISH packets
    pub unacked_publish_count: usize,
    /// Number of unacknowledged PUBREL packets
    pub unacked_pubrel_count: usize,
    /// Session uptime
    pub uptime: Duration,
    /// Time since last activity
    pub last_activity: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::subscribe::SubscriptionOptions;
    use crate::types::{WillMessage, WillProperties};
    use crate::{Properties, QoS};

    #[tokio::test]
    async fn test_session_creation() {
        let config = SessionConfig::default();
        let session = SessionState::new("test-client".to_string(), config, true);

        assert_eq!(session.client_id(), "test-client");
        assert!(session.is_clean());
        assert!(!session.is_expired().await);
    }

    #[tokio::test]
    async fn test_session_expiry() {
        let config = SessionConfig {
            session_expiry_interval: 1,
            ..Default::default()
        };
        let session = SessionState::new("test-client".to_string(), config, false);

        assert!(!session.is_expired().await);

        *session.last_activity.write().await =
            Instant::now().checked_sub(Duration::from_secs(2)).unwrap();

        assert!(session.is_expired().await);
    }

    #[tokio::test]
    async fn test_subscription_management() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let sub = Subscription {
            topic_filter: "test/topic".to_string(),
            options: SubscriptionOptions::default(),
        };

        session
            .add_subscription("test/topic".to_string(), sub.clone())
            .await
            .unwrap();

        let matches = session.matching_subscriptions("test/topic").await;
        assert_eq!(matches.len(), 1);
        assert_eq!(matches[0].0, "test/topic");

        session.remove_subscription("test/topic").await.unwrap();
        let matches = session.matching_subscriptions("test/topic").await;
        assert_eq!(matches.len(), 0);
    }

    #[tokio::test]
    async fn test_message_queueing() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let msg1 = QueuedMessage {
            topic: "test/1".to_string(),
            payload: vec![1, 2, 3],
            qos: QoS::AtLeastOnce,
            retain: false,
            packet_id: Some(1),
        };

        let msg2 = QueuedMessage {
            topic: "test/2".to_string(),
            payload: vec![4, 5, 6],
            qos: QoS::AtMostOnce,
            retain: false,
            packet_id: None,
        };

        session.queue_message(msg1).await.unwrap();
        session.queue_message(msg2).await.unwrap();

        assert_eq!(session.queued_message_count().await, 2);

        let messages = session.dequeue_messages(1).await;
        assert_eq!(messages.len(), 1);
        assert_eq!(session.queued_message_count().await, 1);
    }

    #[tokio::test]
    async fn test_unacked_publish_tracking() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let packet = PublishPacket {
            topic_name: "test/topic".to_string(),
            packet_id: Some(123),
            payload: vec![1, 2, 3].into(),
            qos: QoS::AtLeastOnce,
            retain: false,
            dup: false,
            properties: Properties::default(),
            protocol_version: 5,
            stream_id: None,
        };

        session.store_unacked_publish(packet.clone()).await.unwrap();

        let unacked = session.get_unacked_publishes().await;
        assert_eq!(unacked.len(), 1);
        assert_eq!(unacked[0].packet_id, Some(123));

        let removed = session.remove_unacked_publish(123).await;
        assert!(removed.is_some());
        assert_eq!(session.get_unacked_publishes().await.len(), 0);
    }

    #[tokio::test]
    async fn test_unacked_pubrel_tracking() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        session.store_unacked_pubrel(100).await;
        session.store_unacked_pubrel(101).await;

        let pubrels = session.get_unacked_pubrels().await;
        assert_eq!(pubrels.len(), 2);
        assert!(pubrels.contains(&100));
        assert!(pubrels.contains(&101));

        assert!(session.remove_unacked_pubrel(100).await);
        assert_eq!(session.get_unacked_pubrels().await.len(), 1);
    }

    #[tokio::test]
    async fn test_session_clear() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let sub = Subscription {
            topic_filter: "test/#".to_string(),
            options: SubscriptionOptions::default(),
        };
        session
            .add_subscription("test/#".to_string(), sub)
            .await
            .unwrap();

        let msg = QueuedMessage {
            topic: "test".to_string(),
            payload: vec![1],
            qos: QoS::AtMostOnce,
            retain: false,
            packet_id: None,
        };
        session.queue_message(msg).await.unwrap();

        session.store_unacked_pubrel(1).await;

        session.clear().await;

        assert_eq!(session.all_subscriptions().await.len(), 0);
        assert_eq!(session.queued_message_count().await, 0);
        assert_eq!(session.get_unacked_pubrels().await.len(), 0);
    }

    #[tokio::test]
    async fn test_session_stats() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let sub = Subscription {
            topic_filter: "test/#".to_string(),
            options: SubscriptionOptions::default(),
        };
        session
            .add_subscription("test/#".to_string(), sub)
            .await
            .unwrap();

        let stats = session.stats().await;
        assert_eq!(stats.subscription_count, 1);
        assert_eq!(stats.queued_message_count, 0);
        let _ = stats.uptime.as_nanos();
    }

    #[tokio::test]
    async fn test_flow_control_integration() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        session.set_receive_maximum(2).await;

        assert!(session.can_send_qos_message().await);

        session.register_in_flight(1).await.unwrap();
        session.register_in_flight(2).await.unwrap();

        assert!(!session.can_send_qos_message().await);

        assert!(session.register_in_flight(3).await.is_err());

        session.acknowledge_in_flight(1).await.unwrap();

        assert!(session.can_send_qos_message().await);
    }

    #[tokio::test]
    async fn test_topic_alias_integration() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        session.set_topic_alias_maximum_out(10).await;
        session.set_topic_alias_maximum_in(10).await;

        let alias1 = session.get_or_create_topic_alias("topic/1").await;
        assert_eq!(alias1, Some(1));

        let alias1_again = session.get_or_create_topic_alias("topic/1").await;
        assert_eq!(alias1_again, Some(1));

        session
            .register_incoming_topic_alias(5, "incoming/topic")
            .await
            .unwrap();

        let topic = session.get_topic_for_alias(5).await;
        assert_eq!(topic, Some("incoming/topic".to_string()));
    }

    #[tokio::test]
    async fn test_session_expiry_zero_interval() {
        let config = SessionConfig {
            session_expiry_interval: 0,
            ..Default::default()
        };
        let session = SessionState::new("test-client".to_string(), config, false);

        *session.last_activity.write().await = Instant::now()
            .checked_sub(Duration::from_secs(100))
            .unwrap();

        assert!(!session.is_expired().await);
    }

    #[tokio::test]
    async fn test_wildcard_subscriptions() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let sub1 = Subscription {
            topic_filter: "test/+/topic".to_string(),
            options: SubscriptionOptions::default(),
        };

        let sub2 = Subscription {
            topic_filter: "test/#".to_string(),
            options: SubscriptionOptions::default(),
        };

        session
            .add_subscription("test/+/topic".to_string(), sub1)
            .await
            .unwrap();
        session
            .add_subscription("test/#".to_string(), sub2)
            .await
            .unwrap();

        let matches = session.matching_subscriptions("test/foo/topic").await;
        assert_eq!(matches.len(), 2);

        let all_subs = session.all_subscriptions().await;
        assert_eq!(all_subs.len(), 2);
    }

    #[tokio::test]
    async fn test_message_queue_limits() {
        let config = SessionConfig {
            max_queued_messages: 2,
            max_queued_size: 100,
            ..Default::default()
        };

        let session = SessionState::new("test-client".to_string(), config, true);

        let msg1 = QueuedMessage {
            topic: "test/1".to_string(),
            payload: vec![0; 40],
            qos: QoS::AtLeastOnce,
            retain: false,
            packet_id: Some(1),
        };

        let msg2 = QueuedMessage {
            topic: "test/2".to_string(),
            payload: vec![0; 40],
            qos: QoS::AtLeastOnce,
            retain: false,
            packet_id: Some(2),
        };

        let msg3 = QueuedMessage {
            topic: "test/3".to_string(),
            payload: vec![0; 40],
            qos: QoS::AtLeastOnce,
            retain: false,
            packet_id: Some(3),
        };

        session.queue_message(msg1).await.unwrap();
        session.queue_message(msg2).await.unwrap();

        session.queue_message(msg3).await.unwrap();

        assert_eq!(session.queued_message_count().await, 2);

        let messages = session.dequeue_messages(3).await;
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].topic, "test/2");
        assert_eq!(messages[1].topic, "test/3");
    }

    #[tokio::test]
    async fn test_unacked_publish_no_packet_id() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let packet = PublishPacket {
            topic_name: "test/topic".to_string(),
            packet_id: None,
            payload: vec![1, 2, 3].into(),
            qos: QoS::AtMostOnce,
            retain: false,
            dup: false,
            properties: Properties::default(),
            protocol_version: 5,
            stream_id: None,
        };

        assert!(session.store_unacked_publish(packet).await.is_err());
    }

    #[tokio::test]
    async fn test_qos2_flow() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let packet = PublishPacket {
            topic_name: "test/topic".to_string(),
            packet_id: Some(123),
            payload: vec![1, 2, 3].into(),
            qos: QoS::ExactlyOnce,
            retain: false,
            dup: false,
            properties: Properties::default(),
            protocol_version: 5,
            stream_id: None,
        };

        session.store_unacked_publish(packet).await.unwrap();
        assert_eq!(session.get_unacked_publishes().await.len(), 1);

        session.complete_pubrec(123).await;
        session.store_pubrel(123).await;
        assert_eq!(session.get_unacked_publishes().await.len(), 0);
        assert_eq!(session.get_unacked_pubrels().await.len(), 1);

        session.complete_pubrel(123).await;
        assert_eq!(session.get_unacked_pubrels().await.len(), 0);
    }

    #[tokio::test]
    async fn test_packet_size_limits() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        session.set_server_maximum_packet_size(1000).await;

        assert!(session.check_packet_size(500).await.is_ok());

        assert!(session.check_packet_size(1001).await.is_err());

        assert_eq!(session.effective_maximum_packet_size().await, 1000);
    }

    #[tokio::test]
    async fn test_will_message() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let will = WillMessage {
            topic: "test/will".to_string(),
            payload: b"disconnected".to_vec(),
            qos: QoS::AtLeastOnce,
            retain: false,
            properties: WillProperties::default(),
        };

        session.set_will_message(Some(will.clone())).await;

        let stored_will = session.will_message().await;
        assert!(stored_will.is_some());
        assert_eq!(stored_will.unwrap().topic, "test/will");

        let triggered = session.trigger_will_message().await;
        assert!(triggered.is_some());

        assert!(session.will_message().await.is_none());
    }

    #[tokio::test]
    async fn test_will_message_cancellation() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let will = WillMessage {
            topic: "test/will".to_string(),
            payload: b"disconnected".to_vec(),
            qos: QoS::AtLeastOnce,
            retain: false,
            properties: WillProperties::default(),
        };

        session.set_will_message(Some(will)).await;

        session.cancel_will_message().await;

        assert!(session.will_message().await.is_none());
    }

    #[tokio::test]
    async fn test_will_delay() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let will_props = WillProperties {
            will_delay_interval: Some(1),
            ..Default::default()
        };

        let will = WillMessage {
            topic: "test/will".to_string(),
            payload: b"disconnected".to_vec(),
            qos: QoS::AtLeastOnce,
            retain: false,
            properties: will_props,
        };

        session.set_will_message(Some(will)).await;

        let triggered = session.trigger_will_message().await;
        assert!(triggered.is_none());

        assert!(!session.is_will_delay_complete().await);

        tokio::time::sleep(Duration::from_millis(1100)).await;

        assert!(session.is_will_delay_complete().await);
    }

    #[tokio::test]
    async fn test_touch_updates_activity() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let initial_activity = *session.last_activity.read().await;

        tokio::time::sleep(Duration::from_millis(10)).await;

        session.touch().await;

        let new_activity = *session.last_activity.read().await;
        assert!(new_activity > initial_activity);
    }

    #[tokio::test]
    async fn test_activity_tracking_on_operations() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let initial_activity = *session.last_activity.read().await;
        tokio::time::sleep(Duration::from_millis(10)).await;

        let sub = Subscription {
            topic_filter: "test".to_string(),
            options: SubscriptionOptions::default(),
        };
        session
            .add_subscription("test".to_string(), sub)
            .await
            .unwrap();

        let activity_after_sub = *session.last_activity.read().await;
        assert!(activity_after_sub > initial_activity);
    }

    #[tokio::test]
    async fn test_complete_publish_flow() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        let packet = PublishPacket {
            topic_name: "test/topic".to_string(),
            packet_id: Some(100),
            payload: vec![1, 2, 3].into(),
            qos: QoS::AtLeastOnce,
            retain: false,
            dup: false,
            properties: Properties::default(),
            protocol_version: 5,
            stream_id: None,
        };

        session.store_unacked_publish(packet).await.unwrap();
        assert_eq!(session.get_unacked_publishes().await.len(), 1);

        session.complete_publish(100).await;
        assert_eq!(session.get_unacked_publishes().await.len(), 0);
    }

    fn outbound_publish(packet_id: u16, qos: QoS) -> PublishPacket {
        PublishPacket {
            topic_name: "test/topic".to_string(),
            packet_id: Some(packet_id),
            payload: vec![1].into(),
            qos,
            retain: false,
            dup: false,
            properties: Properties::default(),
            protocol_version: 5,
            stream_id: None,
        }
    }

    fn replay_ids(items: &[OutboundReplay]) -> Vec<(char, u16)> {
        items
            .iter()
            .map(|item| match item {
                OutboundReplay::Publish(p) => ('P', p.packet_id.unwrap()),
                OutboundReplay::PubRel(id) => ('R', *id),
            })
            .collect()
    }

    #[tokio::test]
    async fn outbound_replay_keeps_original_send_order_across_pubrec() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);
        for (id, qos) in [
            (30, QoS::ExactlyOnce),
            (10, QoS::AtLeastOnce),
            (20, QoS::ExactlyOnce),
        ] {
            session
                .store_unacked_publish(outbound_publish(id, qos))
                .await
                .unwrap();
        }
        session.complete_pubrec(30).await;
        session.store_pubrel(30).await;

        assert_eq!(
            replay_ids(&session.outbound_replay().await),
            vec![('R', 30), ('P', 10), ('P', 20)]
        );

        session.complete_outbound(10).await;
        session.complete_outbound(30).await;
        assert_eq!(
            replay_ids(&session.outbound_replay().await),
            vec![('P', 20)]
        );

        session.discard_outbound_state().await;
        assert!(session.outbound_replay().await.is_empty());
    }

    #[tokio::test]
    async fn allocate_packet_id_skips_ids_held_by_outbound_exchanges() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);
        let generator = PacketIdGenerator::new();
        session
            .store_unacked_publish(outbound_publish(1, QoS::AtLeastOnce))
            .await
            .unwrap();
        session.store_pubrel(2).await;

        assert_eq!(
            session.allocate_packet_id(&generator, |id| id == 3).await,
            Some(4)
        );
    }

    #[tokio::test]
    async fn clear_all_inbound_state_wipes_dedup_and_reports_presence() {
        let session = SessionState::new("test-client".to_string(), SessionConfig::default(), true);

        assert!(session.mark_delivered(7).await);
        session.set_resolution(7, AckResolution::Acked).await;
        session.mark_pubrec_sent(7).await;
        assert!(session.is_delivered(7).await);
        assert!(session.has_pubrec(7).await);

        assert!(session.clear_all_inbound_state().await);
        assert!(!session.is_delivered(7).await);
        assert!(!session.has_pubrec(7).await);
        assert_eq!(session.get_resolution(7).await, AckResolution::Unresolved);
        assert!(session.mark_delivered(7).await);

        session.clear_inbound_state(7).await;
        assert!(!session.clear_all_inbound_state().await);
    }
}
