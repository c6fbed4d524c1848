//! A plain rumqttc v5 client that sends state store requests and collects what comes back.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{Packet, Publish, PublishProperties, SubAck, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rumqttc::{NetworkOptions, Outgoing, Transport};
use statestore::protocol::topics;
use tokio::sync::{mpsc, oneshot};

use super::wire::{bulk, hlc_now, resp, Ts};

/// How long to wait for anything the server should send.
pub const WAIT: Duration = Duration::from_secs(10);

/// A response as received.
#[derive(Debug, Clone)]
pub struct Reply {
    pub payload: Bytes,
    pub correlation: Option<Bytes>,
    pub properties: Vec<(String, String)>,
    pub topic: String,
}

impl Reply {
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `__ts`, parsed.
    pub fn ts(&self) -> Ts {
        Ts::parse(self.property("__ts").expect("the reply has __ts"))
    }

    /// Asserts the payload (shown as text on failure).
    #[track_caller]
    pub fn expect(&self, payload: &[u8]) -> &Self {
        assert_eq!(
            String::from_utf8_lossy(&self.payload),
            String::from_utf8_lossy(payload),
            "payload of {self:?}"
        );
        self
    }

    fn from(publish: Publish) -> Reply {
        let properties = publish.properties.unwrap_or_default();
        Reply {
            payload: publish.payload,
            correlation: properties.correlation_data,
            properties: properties.user_properties,
            topic: String::from_utf8_lossy(&publish.topic).into_owned(),
        }
    }
}

/// Options of one request.
#[derive(Debug, Clone)]
pub struct Send {
    pub qos: QoS,
    pub response_topic: Option<String>,
    pub correlation: Option<Bytes>,
    pub properties: Vec<(String, String)>,
}

/// How a probe logs in.
#[derive(Debug, Clone, Default)]
pub struct Login {
    /// User name and password.
    pub credentials: Option<(String, String)>,
    /// TLS with this CA certificate (PEM).
    pub tls_ca: Option<Vec<u8>>,
}

/// A connected client subscribed to its response topic and its notification topics.
pub struct Probe {
    pub id: String,
    client: AsyncClient,
    replies: mpsc::UnboundedReceiver<Reply>,
    notifications: mpsc::UnboundedReceiver<Reply>,
    subacks: mpsc::UnboundedReceiver<SubAck>,
    lost: Option<oneshot::Receiver<String>>,
}

impl Probe {
    pub async fn connect(addr: SocketAddr, id: &str) -> Probe {
        Self::connect_with(addr, id, &Login::default())
            .await
            .unwrap_or_else(|error| panic!("{id} cannot connect to {addr}: {error}"))
    }

    /// Connects with credentials and/or TLS; returns the connection error instead of
    /// panicking.
    pub async fn connect_with(addr: SocketAddr, id: &str, login: &Login) -> Result<Probe, String> {
        let mut options = MqttOptions::new(id, addr.ip().to_string(), addr.port());
        options
            .set_keep_alive(Duration::from_secs(30))
            .set_max_packet_size(Some(8 * 1024 * 1024));
        if let Some((user, password)) = &login.credentials {
            options.set_credentials(user.clone(), password.clone());
        }
        if let Some(ca) = &login.tls_ca {
            options.set_transport(Transport::tls(ca.clone(), None, None));
        }
        let mut network = NetworkOptions::new();
        network.set_tcp_nodelay(true);
        options.set_network_options(network);
        let (client, mut event_loop) = AsyncClient::new(options, 256);
        let (replies_tx, replies) = mpsc::unbounded_channel();
        let (notifications_tx, notifications) = mpsc::unbounded_channel();
        let (subacks_tx, subacks) = mpsc::unbounded_channel();
        let (lost_tx, lost) = oneshot::channel();
        let (connected_tx, connected) = oneshot::channel();
        tokio::spawn(async move {
            let mut connected_tx = Some(connected_tx);
            loop {
                match event_loop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        if let Some(tx) = connected_tx.take() {
                            let _ = tx.send(Ok(()));
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(publish))) => {
                        let reply = Reply::from(publish);
                        let to = if reply.topic.starts_with(topics::NOTIFY_PREFIX) {
                            &notifications_tx
                        } else {
                            &replies_tx
                        };
                        let _ = to.send(reply);
                    }
                    Ok(Event::Incoming(Packet::SubAck(ack))) => {
                        let _ = subacks_tx.send(ack);
                    }
                    Ok(Event::Outgoing(Outgoing::Disconnect)) => {
                        let _ = lost_tx.send("disconnected by the client".to_owned());
                        return;
                    }
                    Ok(_) => {}
                    Err(error) => {
                        // No reconnect: a probe that lost its connection stays down.
                        match connected_tx.take() {
                            Some(tx) => {
                                let _ = tx.send(Err(error.to_string()));
                            }
                            None => {
                                let _ = lost_tx.send(error.to_string());
                            }
                        }
                        return;
                    }
                }
            }
        });
        tokio::time::timeout(WAIT, connected)
            .await
            .map_err(|_| "no CONNACK in time".to_owned())?
            .map_err(|_| "event loop gone".to_owned())??;
        let mut probe = Probe {
            id: id.to_owned(),
            client,
            replies,
            notifications,
            subacks,
            lost: Some(lost),
        };
        probe.subscribe(&topics::response_topic(id)).await;
        probe.subscribe(&topics::notification_filter(id)).await;
        Ok(probe)
    }

    /// Subscribes and waits for a successful SUBACK.
    pub async fn subscribe(&mut self, filter: &str) {
        self.client
            .subscribe(filter, QoS::AtLeastOnce)
            .await
            .expect("subscribe");
        let ack = tokio::time::timeout(WAIT, self.subacks.recv())
            .await
            .expect("SUBACK in time")
            .expect("connected");
        assert!(
            ack.return_codes
                .iter()
                .all(|c| matches!(c, SubscribeReasonCode::Success(_))),
            "subscription refused: {ack:?}"
        );
    }

    /// The envelope the SDKs send: QoS 1, own response topic, fresh correlation data,
    /// `__srcId`, `__ts` now, `__protVer`.
    pub fn envelope(&self) -> Send {
        Send {
            qos: QoS::AtLeastOnce,
            response_topic: Some(topics::response_topic(&self.id)),
            correlation: Some(Bytes::copy_from_slice(&fastrand::u128(..).to_be_bytes())),
            properties: vec![
                ("__srcId".to_owned(), self.id.clone()),
                ("__ts".to_owned(), hlc_now(&self.id)),
                ("__protVer".to_owned(), "1.0".to_owned()),
            ],
        }
    }

    /// Publishes a request to the invoke topic without waiting for anything.
    pub async fn publish(&self, payload: &[u8], send: Send) {
        let properties = PublishProperties {
            response_topic: send.response_topic,
            correlation_data: send.correlation,
            user_properties: send.properties,
            ..PublishProperties::default()
        };
        self.client
            .publish_with_properties(
                topics::INVOKE_TOPIC,
                send.qos,
                false,
                Bytes::copy_from_slice(payload),
                properties,
            )
            .await
            .expect("publish queued");
    }

    /// Sets a fresh key and reads it back: the server answers requests.
    pub async fn serves(&mut self) {
        let key = super::unique("key");
        self.request(&resp(&[b"SET", key.as_bytes(), b"v"]))
            .await
            .expect(b"+OK\r\n");
        self.request(&resp(&[b"GET", key.as_bytes()]))
            .await
            .expect(&bulk(b"v"));
    }

    /// Sends with the standard envelope and returns the matching reply.
    pub async fn request(&mut self, payload: &[u8]) -> Reply {
        self.request_with(payload, self.envelope()).await
    }

    /// Sends with the standard envelope plus (or replacing) these user properties.
    pub async fn request_props(&mut self, payload: &[u8], extra: &[(&str, &str)]) -> Reply {
        let mut send = self.envelope();
        for (name, value) in extra {
            send.properties.retain(|(n, _)| n != name);
            send.properties
                .push(((*name).to_owned(), (*value).to_owned()));
        }
        self.request_with(payload, send).await
    }

    /// Sends and returns the reply; asserts that it carries the request's correlation data
    /// (replies arrive in request order, so the next reply is this request's).
    pub async fn request_with(&mut self, payload: &[u8], send: Send) -> Reply {
        let correlation = send.correlation.clone();
        self.publish(payload, send).await;
        let reply = self.next_reply().await;
        assert_eq!(
            reply.correlation, correlation,
            "reply out of order: {reply:?}"
        );
        reply
    }

    /// Sends with the standard envelope; the reply, or `None` if none came within `wait`.
    /// Replies to earlier unanswered attempts are skipped.
    pub async fn try_request(&mut self, payload: &[u8], wait: Duration) -> Option<Reply> {
        let send = self.envelope();
        let correlation = send.correlation.clone();
        self.publish(payload, send).await;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let reply = tokio::time::timeout_at(deadline, self.replies.recv())
                .await
                .ok()??;
            if reply.correlation == correlation {
                return Some(reply);
            }
        }
    }

    pub async fn next_reply(&mut self) -> Reply {
        tokio::time::timeout(WAIT, self.replies.recv())
            .await
            .expect("a reply in time")
            .expect("connection alive")
    }

    pub async fn next_notification(&mut self) -> Reply {
        tokio::time::timeout(WAIT, self.notifications.recv())
            .await
            .expect("a notification in time")
            .expect("connection alive")
    }

    /// Waits until the connection is gone; returns why.
    pub async fn lost(&mut self) -> String {
        let lost = self.lost.take().expect("lost() called once");
        tokio::time::timeout(WAIT, lost)
            .await
            .expect("disconnected in time")
            .unwrap_or_else(|_| "event loop gone".to_owned())
    }

    pub async fn disconnect(self) {
        let _ = self.client.disconnect().await;
        if let Some(lost) = self.lost {
            let _ = tokio::time::timeout(WAIT, lost).await;
        }
    }
}
