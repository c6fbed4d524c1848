//! Publishes the service's responses and notifications through the external broker.

use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::AsyncClient;
use statestore::protocol::topics::INVOKE_TOPIC;
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::service::Outbound;

/// Publishes until the service stops, then leaves the broker: unsubscribes from the invoke
/// topic first, so that the session the broker keeps for a while (in case the server comes
/// back) queues no more requests that nobody will serve, then disconnects (which ends the
/// event loop). The broker handles one connection's packets in order.
pub(super) async fn run(client: AsyncClient, mut output: mpsc::Receiver<Outbound>) {
    while let Some(action) = output.recv().await {
        match action {
            Outbound::Publish(message) => {
                let properties = PublishProperties {
                    correlation_data: message.correlation_data,
                    user_properties: message
                        .user_properties
                        .into_iter()
                        .map(|(name, value)| (name.to_owned(), value))
                        .collect(),
                    ..PublishProperties::default()
                };
                let sent = client
                    .publish_with_properties(
                        message.topic,
                        QoS::AtLeastOnce,
                        false,
                        message.payload,
                        properties,
                    )
                    .await;
                if let Err(error) = sent {
                    debug!(%error, "event loop gone: dropping an outbound message");
                }
            }
            Outbound::Disconnect(client_id) => warn!(
                client_id,
                "cannot disconnect a client through an external broker: its request was dropped"
            ),
        }
    }
    if let Err(error) = client.unsubscribe(INVOKE_TOPIC).await {
        debug!(%error, "event loop gone: not unsubscribing");
    }
    let _ = client.disconnect().await;
}
