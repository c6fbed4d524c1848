//! A scripted stand-in for the state store on a real broker: it answers each request with
//! whatever the test decides (any payload, any properties, or nothing), and records what it
//! received. It lets tests reach responses the real service never sends.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use statestore::protocol::{topics, Request};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// A request as the scripted service received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub request: Request,
    pub properties: PublishProperties,
}

impl Received {
    /// The value of a user property.
    pub fn user_property(&self, name: &str) -> Option<&str> {
        self.properties
            .user_properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What to answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub payload: Bytes,
    pub user_properties: Vec<(String, String)>,
    /// If set, the reply goes out only once the test opens this gate ([`Gate::open_one`]).
    pub gate: Option<Gate>,
}

/// Holds replies back until the test lets them go, one at a time: a deterministic slow
/// service.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Lets one held reply (the next one to wait, if none waits yet) go out.
    pub fn open_one(&self) {
        self.0.add_permits(1);
    }

    async fn pass(&self) {
        // Never closed: the permit is there once the test opens the gate.
        if let Ok(permit) = self.0.acquire().await {
            permit.forget();
        }
    }
}

impl Reply {
    /// A `__stat: 200` response with this payload.
    pub fn ok(payload: &[u8]) -> Reply {
        Reply {
            payload: Bytes::copy_from_slice(payload),
            user_properties: vec![("__stat".into(), "200".into())],
            gate: None,
        }
    }

    /// Holds this reply back until `gate` is opened.
    pub fn after(mut self, gate: &Gate) -> Reply {
        self.gate = Some(gate.clone());
        self
    }

    /// Adds a user property.
    pub fn with(mut self, name: &str, value: &str) -> Reply {
        self.user_properties.push((name.into(), value.into()));
        self
    }
}

type Script = dyn Fn(&Received) -> Option<Reply> + Send + Sync;

/// The scripted service; stops when dropped.
pub struct Scripted {
    received: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Scripted {
    /// Connects to the broker at `broker` and answers with `script` (`None`: no answer).
    pub async fn start(
        broker: SocketAddr,
        script: impl Fn(&Received) -> Option<Reply> + Send + Sync + 'static,
    ) -> Scripted {
        let mut options = MqttOptions::new(
            format!("scripted-{}", fastrand::u64(..)),
            broker.ip().to_string(),
            broker.port(),
        );
        options.set_max_packet_size(Some(1 << 24));
        let mut network = rumqttc::NetworkOptions::new();
        network.set_tcp_nodelay(true);
        options.set_network_options(network);
        let (client, mut eventloop) = AsyncClient::new(options, 1024);
        client
            .subscribe(topics::INVOKE_TOPIC, QoS::AtLeastOnce)
            .await
            .expect("queue the subscription");
        // Serve only once subscribed, so that no request is missed.
        loop {
            match eventloop.poll().await.expect("scripted service connects") {
                Event::Incoming(Packet::SubAck(_)) => break,
                _ => continue,
            }
        }
        let received = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let script: Arc<Script> = Arc::new(script);
        let task = tokio::spawn(serve(
            client,
            eventloop,
            script,
            received.clone(),
            arrived.clone(),
        ));
        Scripted {
            received,
            arrived,
            task,
        }
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until the requests received so far satisfy `done`; returns them.
    pub async fn wait_until(
        &self,
        what: &str,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        super::within(what, async {
            loop {
                let arrived = self.arrived.notified();
                let received = self.received();
                if done(&received) {
                    return received;
                }
                arrived.await;
            }
        })
        .await
    }

    /// Waits until `count` requests have arrived.
    pub async fn wait_received(&self, count: usize) -> Vec<Received> {
        super::within(
            &format!("{count} requests at the scripted service"),
            async {
                loop {
                    let arrived = self.arrived.notified();
                    let received = self.received();
                    if received.len() >= count {
                        return received;
                    }
                    arrived.await;
                }
            },
        )
        .await
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    client: AsyncClient,
    mut eventloop: rumqttc::v5::EventLoop,
    script: Arc<Script>,
    received: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
) {
    while let Ok(event) = eventloop.poll().await {
        let Event::Incoming(Packet::Publish(publish)) = event else {
            continue;
        };
        let properties = publish.properties.unwrap_or_default();
        let Ok(request) = Request::decode(&publish.payload) else {
            continue;
        };
        let request = Received {
            request,
            properties,
        };
        let reply = script(&request);
        received.lock().unwrap().push(request.clone());
        arrived.notify_waiters();
        let (Some(reply), Some(topic)) = (reply, request.properties.response_topic.clone()) else {
            continue;
        };
        let properties = PublishProperties {
            correlation_data: request.properties.correlation_data.clone(),
            user_properties: reply.user_properties,
            ..PublishProperties::default()
        };
        // Never publish from the polling task itself (rumqttc deadlocks when its channel is full).
        let client = client.clone();
        tokio::spawn(async move {
            if let Some(gate) = reply.gate {
                gate.pass().await;
            }
            let _ = client
                .publish_with_properties(topic, QoS::AtLeastOnce, false, reply.payload, properties)
                .await;
        });
    }
}
