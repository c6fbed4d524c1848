//! A scripted stand-in for the state store on a real broker: it answers each request with
//! whatever the test decides (any payload, any properties, or nothing), and records what it
//! received. It lets tests reach responses the real service never sends.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::AsyncClient;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::stand_in;
pub use crate::stand_in::Received;

/// What to answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The payload.
    pub payload: Bytes,
    /// Its user properties.
    pub user_properties: Vec<(String, String)>,
    /// If set, the reply goes out only once the test opens this gate ([`Gate::open_one`]).
    pub gate: Option<Gate>,
}

/// Holds replies back until the test lets them go, one at a time: a deterministic slow
/// service.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}

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

/// The scripted service; stops when dropped.
#[derive(Debug)]
pub struct Scripted {
    received: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Scripted {
    /// Connects to the broker at `broker` and answers with `script` (`None`: no answer).
    ///
    /// # Panics
    /// If it cannot connect and subscribe within [`crate::DEADLINE`].
    pub async fn start(
        broker: SocketAddr,
        script: impl Fn(&Received) -> Option<Reply> + Send + Sync + 'static,
    ) -> Scripted {
        let received = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (record, notify) = (received.clone(), arrived.clone());
        let answer = move |client: &AsyncClient, request: Received| {
            let reply = script(&request);
            lock(&record).push(request.clone());
            notify.notify_waiters();
            if let (Some(reply), Some(topic)) = (reply, request.properties.response_topic) {
                tokio::spawn(send(
                    client.clone(),
                    topic,
                    request.properties.correlation_data,
                    reply,
                ));
            }
        };
        let task = match stand_in::serve(broker, "scripted", answer).await {
            Ok(task) => task,
            Err(error) => panic!("the scripted service cannot start: {error}"),
        };
        Scripted {
            received,
            arrived,
            task,
        }
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.received).clone()
    }

    /// Waits until the requests received so far satisfy `done`, within [`crate::DEADLINE`];
    /// returns them.
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn wait_until(
        &self,
        what: &str,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        crate::until(what, &self.arrived, || {
            let received = self.received();
            done(&received).then_some(received)
        })
        .await
    }

    /// Waits until `count` requests have arrived, within [`crate::DEADLINE`].
    ///
    /// # Panics
    /// When the deadline passes.
    pub async fn wait_received(&self, count: usize) -> Vec<Received> {
        let what = format!("{count} requests at the scripted service");
        self.wait_until(&what, |received| received.len() >= count)
            .await
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every critical section is one push or copy: a poisoned lock is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sends `reply` to `topic` once its gate (if any) opens.
async fn send(client: AsyncClient, topic: String, correlation: Option<Bytes>, reply: Reply) {
    if let Some(gate) = reply.gate {
        gate.pass().await;
    }
    let properties = PublishProperties {
        correlation_data: correlation,
        user_properties: reply.user_properties,
        ..PublishProperties::default()
    };
    let _ = client
        .publish_with_properties(topic, QoS::AtLeastOnce, false, reply.payload, properties)
        .await;
}
