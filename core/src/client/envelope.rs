//! The MQTT envelope of requests (properties, size) and the checks on responses' properties.

use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;

use crate::protocol::{properties as names, topics, Hlc};
use crate::Error;

/// The per-request parts of a request's properties.
pub(crate) struct RequestMeta<'a> {
    pub(crate) correlation: Bytes,
    pub(crate) timestamp: &'a Hlc,
    pub(crate) fencing_token: Option<&'a Hlc>,
    pub(crate) persist: bool,
    pub(crate) timeout: Duration,
}

/// The properties of a request PUBLISH, as the real SDKs send them.
pub(crate) fn request_properties(
    client_id: &str,
    response_topic: &str,
    meta: RequestMeta<'_>,
) -> PublishProperties {
    let mut user = Vec::with_capacity(5);
    user.push((names::SOURCE_ID.to_owned(), client_id.to_owned()));
    user.push((names::TIMESTAMP.to_owned(), meta.timestamp.to_string()));
    user.push((
        names::PROTOCOL_VERSION.to_owned(),
        names::PROTOCOL_VERSION_VALUE.to_owned(),
    ));
    if let Some(token) = meta.fencing_token {
        user.push((names::FENCING_TOKEN.to_owned(), token.to_string()));
    }
    if meta.persist {
        user.push((names::PERSISTENCE.to_owned(), "true".to_owned()));
    }
    PublishProperties {
        payload_format_indicator: Some(0),
        message_expiry_interval: Some(expiry_seconds(meta.timeout)),
        topic_alias: None,
        response_topic: Some(response_topic.to_owned()),
        correlation_data: Some(meta.correlation),
        user_properties: user,
        subscription_identifiers: Vec::new(),
        content_type: Some(names::CONTENT_TYPE.to_owned()),
    }
}

/// Message expiry: the timeout rounded up to whole seconds (at least 1).
pub(crate) fn expiry_seconds(timeout: Duration) -> u32 {
    let secs = timeout
        .as_secs()
        .saturating_add(u64::from(timeout.subsec_nanos() > 0));
    u32::try_from(secs.max(1)).unwrap_or(u32::MAX)
}

/// The size on the wire of a QoS 1 PUBLISH of `payload_len` bytes to the invoke topic.
pub(crate) fn request_packet_size(properties: &PublishProperties, payload_len: usize) -> usize {
    let string = |s: &str| 2 + s.len();
    let mut props = 0;
    if properties.payload_format_indicator.is_some() {
        props += 1 + 1;
    }
    if properties.message_expiry_interval.is_some() {
        props += 1 + 4;
    }
    if let Some(topic) = &properties.response_topic {
        props += 1 + string(topic);
    }
    if let Some(data) = &properties.correlation_data {
        props += 1 + 2 + data.len();
    }
    for (key, value) in &properties.user_properties {
        props += 1 + string(key) + string(value);
    }
    if let Some(content_type) = &properties.content_type {
        props += 1 + string(content_type);
    }
    let remaining = string(topics::INVOKE_TOPIC) + 2 + varint_len(props) + props + payload_len;
    1 + varint_len(remaining) + remaining
}

fn varint_len(n: usize) -> usize {
    match n {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

fn user_property<'a>(properties: Option<&'a PublishProperties>, name: &str) -> Option<&'a str> {
    properties?
        .user_properties
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Fails unless the response says `__stat: 200`: a missing status is a failure too (the Rust
/// SDK's rule), since the RPC layer always sets it.
pub(crate) fn check_status(properties: Option<&PublishProperties>) -> Result<(), Error> {
    match user_property(properties, names::STATUS) {
        Some(names::STATUS_OK) => Ok(()),
        status => {
            let message = user_property(properties, names::STATUS_MESSAGE)
                .map(str::to_owned)
                .unwrap_or_else(|| match status {
                    None => "the response carries no __stat".to_owned(),
                    Some(_) => "no __stMsg".to_owned(),
                });
            Err(Error::Rpc {
                status: status.and_then(|s| s.trim().parse().ok()).unwrap_or(0),
                message,
            })
        }
    }
}

/// The `__ts` of a response or notification: the key's version. Unreadable values are logged
/// and dropped, never turned into an error.
pub(crate) fn version(properties: Option<&PublishProperties>) -> Option<Hlc> {
    let text = user_property(properties, names::TIMESTAMP)?;
    match text.parse() {
        Ok(version) => Some(version),
        Err(e) => {
            tracing::warn!(error = %e, "ignoring an unreadable __ts from the state store");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rumqttc::v5::mqttbytes::v5::Publish;
    use rumqttc::v5::mqttbytes::QoS;

    fn meta<'a>(ts: &'a Hlc, ft: Option<&'a Hlc>, persist: bool) -> RequestMeta<'a> {
        RequestMeta {
            correlation: Bytes::from_static(&[7; 16]),
            timestamp: ts,
            fencing_token: ft,
            persist,
            timeout: Duration::from_millis(10_001),
        }
    }

    #[test]
    fn properties_match_the_sdks() {
        let ts = Hlc::new(1_700_000_000_000, "client-1");
        let ft = Hlc::new(5, "StateStore");
        let props =
            request_properties("client-1", "clients/client-1/r", meta(&ts, Some(&ft), true));
        assert_eq!(props.message_expiry_interval, Some(11));
        assert_eq!(props.payload_format_indicator, Some(0));
        assert_eq!(
            props.content_type.as_deref(),
            Some("application/octet-stream")
        );
        assert_eq!(props.response_topic.as_deref(), Some("clients/client-1/r"));
        assert_eq!(props.correlation_data.as_ref().map(Bytes::len), Some(16));
        let user: Vec<(&str, &str)> = props
            .user_properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            user,
            [
                ("__srcId", "client-1"),
                ("__ts", "001700000000000:00000:client-1"),
                ("__protVer", "1.0"),
                ("__ft", "000000000000005:00000:StateStore"),
                ("aio-persistence", "true"),
            ]
        );
        let plain = request_properties("c", "r", meta(&ts, None, false));
        assert_eq!(plain.user_properties.len(), 3);
    }

    #[test]
    fn expiry_rounds_up_to_whole_seconds() {
        assert_eq!(expiry_seconds(Duration::from_millis(1)), 1);
        assert_eq!(expiry_seconds(Duration::from_secs(10)), 10);
        assert_eq!(expiry_seconds(Duration::from_millis(10_500)), 11);
        assert_eq!(expiry_seconds(Duration::MAX), u32::MAX);
    }

    #[test]
    fn packet_size_matches_rumqttc() {
        let ts = Hlc::new(1, "c");
        for payload_len in [0usize, 10, 100, 20_000, 3_000_000] {
            let props = request_properties("c", "clients/c/r", meta(&ts, Some(&ts), true));
            let mut publish = Publish::new(
                topics::INVOKE_TOPIC,
                QoS::AtLeastOnce,
                vec![0u8; payload_len],
                Some(props.clone()),
            );
            publish.pkid = 1;
            let mut buffer = bytes::BytesMut::new();
            publish.write(&mut buffer).unwrap();
            assert_eq!(
                request_packet_size(&props, payload_len),
                buffer.len(),
                "{payload_len}"
            );
        }
    }

    #[test]
    fn status_other_than_200_is_an_rpc_error() {
        let props = |pairs: &[(&str, &str)]| PublishProperties {
            user_properties: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..PublishProperties::default()
        };
        assert_eq!(check_status(Some(&props(&[("__stat", "200")]))), Ok(()));
        assert_eq!(
            check_status(Some(&props(&[("__stat", "408"), ("__stMsg", "too late")]))),
            Err(Error::Rpc {
                status: 408,
                message: "too late".into()
            })
        );
        assert!(matches!(
            check_status(Some(&props(&[]))),
            Err(Error::Rpc { status: 0, .. })
        ));
        assert!(matches!(
            check_status(None),
            Err(Error::Rpc { status: 0, .. })
        ));
        assert_eq!(
            version(Some(&props(&[("__ts", "5:1:StateStore")]))),
            Some(Hlc {
                wall_ms: 5,
                counter: 1,
                node: "StateStore".into()
            })
        );
        assert_eq!(version(Some(&props(&[("__ts", "garbage")]))), None);
    }
}
