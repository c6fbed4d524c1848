//! What the service asks its transport to do: publish a response or notification, or
//! disconnect a client.

use bytes::Bytes;
use statestore::protocol::{properties, topics, Hlc};

use crate::engine::Notice;

/// One action for the transport adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outbound {
    /// Publish with QoS 1.
    Publish(OutMessage),
    /// Disconnect this client (only the embedded broker can).
    Disconnect(String),
}

/// A QoS 1 PUBLISH, transport-neutral.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutMessage {
    /// Topic name.
    pub topic: String,
    /// Payload.
    pub payload: Bytes,
    /// Correlation Data (responses).
    pub correlation_data: Option<Bytes>,
    /// User properties, in order.
    pub user_properties: Vec<(&'static str, String)>,
}

impl OutMessage {
    /// A state store response, as the real service sends it: `__ts` = the key's version
    /// (when there is one), `__stat` = 200, `__protVer` = 1.0.
    pub fn response(
        topic: String,
        correlation_data: Bytes,
        payload: Bytes,
        version: Option<&Hlc>,
    ) -> Self {
        let mut user_properties = Vec::with_capacity(3);
        if let Some(version) = version {
            user_properties.push((properties::TIMESTAMP, version.to_string()));
        }
        user_properties.push((properties::STATUS, properties::STATUS_OK.to_owned()));
        user_properties.push((
            properties::PROTOCOL_VERSION,
            properties::PROTOCOL_VERSION_VALUE.to_owned(),
        ));
        Self {
            topic,
            payload,
            correlation_data: Some(correlation_data),
            user_properties,
        }
    }

    /// A failure of the RPC layer itself (the request envelope was unusable), the way the
    /// real RPC executor reports it: `__stat` 400, `__stMsg`, and `__propName` when the
    /// failure is about one property. The payload is empty.
    pub fn bad_request(
        topic: String,
        correlation_data: Option<Bytes>,
        message: String,
        property: Option<&str>,
    ) -> Self {
        let mut user_properties = vec![
            (properties::STATUS, "400".to_owned()),
            (properties::STATUS_MESSAGE, message),
            (properties::APPLICATION_ERROR, "false".to_owned()),
        ];
        if let Some(property) = property {
            user_properties.push((properties::PROPERTY_NAME, property.to_owned()));
        }
        user_properties.push((
            properties::PROTOCOL_VERSION,
            properties::PROTOCOL_VERSION_VALUE.to_owned(),
        ));
        Self {
            topic,
            payload: Bytes::new(),
            correlation_data,
            user_properties,
        }
    }

    /// Replaces a response's payload with another answer that has no version (an error).
    pub fn replace_payload(&mut self, payload: Bytes) {
        self.payload = payload;
        self.user_properties
            .retain(|(name, _)| *name != properties::TIMESTAMP);
    }

    /// A KEYNOTIFY notification: to the observer's notification topic, `__ts` = the key's
    /// new version.
    pub fn notification(notice: &Notice) -> Self {
        Self {
            topic: topics::notification_topic(&notice.client_id, &notice.key),
            payload: notice.notification.encode(),
            correlation_data: None,
            user_properties: vec![(properties::TIMESTAMP, notice.version.to_string())],
        }
    }
}
