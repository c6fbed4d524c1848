//! A request as any transport delivers it, before the service checks it.

use bytes::Bytes;
use statestore::protocol::properties;

use super::identity::IdentityProblem;

/// What an adapter hands to the service, in the order the broker delivered it.
#[derive(Debug)]
// Nearly every input is a request: boxing it would cost an allocation per request to save
// space on the rare disconnect.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Input {
    /// A PUBLISH on the invoke topic.
    Request(Inbound),
    /// A client disconnected: its KEYNOTIFY registrations go (embedded mode only).
    ClientGone(String),
}

/// One PUBLISH received on the invoke topic.
#[derive(Debug)]
pub(crate) struct Inbound {
    /// The request payload.
    pub payload: Bytes,
    /// The QoS the request was published with.
    pub qos: u8,
    /// The MQTT Response Topic property.
    pub response_topic: Option<String>,
    /// The MQTT Correlation Data property.
    pub correlation_data: Option<Bytes>,
    /// Who sent it, as far as the transport can tell.
    pub identity: Result<String, IdentityProblem>,
    /// The user properties the engine reads.
    pub properties: UserProperties,
}

/// The user properties of a request that matter to the service (first occurrence wins).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct UserProperties {
    /// `__ts`.
    pub timestamp: Option<String>,
    /// `__ft`.
    pub fencing_token: Option<String>,
    /// `__srcId`: the client id the sender claims.
    pub source_id: Option<String>,
    /// `x-mqtt-client-id`: the client id stamped by the embedded broker.
    pub broker_client_id: Option<String>,
    /// `aio-persistence: true`.
    pub persist: bool,
}

impl UserProperties {
    /// Picks the properties of interest out of all user properties.
    pub fn collect<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut found = Self::default();
        for (name, value) in pairs {
            let slot = match name {
                properties::TIMESTAMP => &mut found.timestamp,
                properties::FENCING_TOKEN => &mut found.fencing_token,
                properties::SOURCE_ID => &mut found.source_id,
                properties::BROKER_CLIENT_ID => &mut found.broker_client_id,
                properties::PERSISTENCE => {
                    found.persist |= value.eq_ignore_ascii_case("true");
                    continue;
                }
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value.to_owned());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_occurrence_wins_and_others_are_ignored() {
        let found = UserProperties::collect([
            ("__ts", "1:0:a"),
            ("__ts", "2:0:b"),
            ("other", "x"),
            ("__srcId", "c1"),
            ("aio-persistence", "TRUE"),
        ]);
        assert_eq!(found.timestamp.as_deref(), Some("1:0:a"));
        assert_eq!(found.source_id.as_deref(), Some("c1"));
        assert_eq!(found.fencing_token, None);
        assert!(found.persist);
    }
}
