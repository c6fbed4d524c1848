//! The requests and responses the raw requester and the echo responder exchange, built the
//! way the state store client and server build theirs, so that the floor moves the same bytes.

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use statestore::protocol::{properties as names, Request, SetFlags};

/// The topic of the echo responder: as long as the state store's invoke topic, so that request
/// packets have the same size, but distinct from it, so that a server on the same broker does
/// not answer too.
pub const ECHO_TOPIC: &str = "benchmarks/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke";

/// Message expiry of requests: the client's default call timeout (10 s), as the client sends it.
pub const REQUEST_EXPIRY_SECS: u32 = 10;

/// The largest MQTT packet any party of the benchmark accepts: the server's default.
pub const MAX_PACKET_SIZE: u32 = statestore_server::DEFAULT_MAX_PACKET_SIZE;

/// The key of request slot `slot`: every request in flight has its own key.
pub fn key(slot: usize) -> Bytes {
    Bytes::from(format!("bench-key-{slot:03}"))
}

/// A value of `size` bytes.
pub fn value(size: usize) -> Bytes {
    Bytes::from(vec![b'v'; size])
}

/// The payload of `SET key value`, exactly as the client encodes it.
pub fn set_payload(key: &Bytes, value: &Bytes) -> Bytes {
    Request::Set {
        key: key.clone(),
        value: value.clone(),
        flags: SetFlags::default(),
    }
    .encode()
}

/// The payload of `GET key`.
pub fn get_payload(key: &Bytes) -> Bytes {
    Request::Get { key: key.clone() }.encode()
}

/// Correlation data of the raw requester: 16 bytes like the client's, holding the request's
/// slot and sequence number so that a response finds its request without a map.
pub fn correlation(slot: u32, seq: u64) -> Bytes {
    let mut data = [0u8; 16];
    data[..4].copy_from_slice(&slot.to_be_bytes());
    data[4..12].copy_from_slice(&seq.to_be_bytes());
    Bytes::copy_from_slice(&data)
}

/// The slot and sequence number of [`correlation`] data; `None` if it is not ours.
pub fn parse_correlation(data: &[u8]) -> Option<(u32, u64)> {
    let data: &[u8; 16] = data.try_into().ok()?;
    let (slot, rest) = data.split_first_chunk::<4>()?;
    let (seq, _) = rest.split_first_chunk::<8>()?;
    Some((u32::from_be_bytes(*slot), u64::from_be_bytes(*seq)))
}

/// The properties of a request, as the client sends them: response topic, correlation data,
/// `__srcId`, `__ts`, `__protVer`, expiry, content type and payload format.
pub fn request_properties(
    client_id: &str,
    response_topic: &str,
    timestamp: String,
    correlation: Bytes,
) -> PublishProperties {
    PublishProperties {
        payload_format_indicator: Some(0),
        message_expiry_interval: Some(REQUEST_EXPIRY_SECS),
        topic_alias: None,
        response_topic: Some(response_topic.to_owned()),
        correlation_data: Some(correlation),
        user_properties: vec![
            (names::SOURCE_ID.to_owned(), client_id.to_owned()),
            (names::TIMESTAMP.to_owned(), timestamp),
            (
                names::PROTOCOL_VERSION.to_owned(),
                names::PROTOCOL_VERSION_VALUE.to_owned(),
            ),
        ],
        subscription_identifiers: Vec::new(),
        content_type: Some(names::CONTENT_TYPE.to_owned()),
    }
}

/// The properties of a response, as the server sends them: correlation data, `__ts` (the
/// key's version), `__stat` and `__protVer`.
pub fn response_properties(correlation: Bytes, version: String) -> PublishProperties {
    PublishProperties {
        correlation_data: Some(correlation),
        user_properties: vec![
            (names::TIMESTAMP.to_owned(), version),
            (names::STATUS.to_owned(), names::STATUS_OK.to_owned()),
            (
                names::PROTOCOL_VERSION.to_owned(),
                names::PROTOCOL_VERSION_VALUE.to_owned(),
            ),
        ],
        ..PublishProperties::default()
    }
}

/// Whether a response's properties say `__stat: 200`.
pub fn status_ok(properties: Option<&PublishProperties>) -> bool {
    properties.is_some_and(|p| {
        p.user_properties
            .iter()
            .any(|(k, v)| k == names::STATUS && v == names::STATUS_OK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use statestore::protocol::topics::INVOKE_TOPIC;

    #[test]
    fn echo_requests_are_as_large_as_state_store_requests() {
        assert_eq!(ECHO_TOPIC.len(), INVOKE_TOPIC.len());
        assert_ne!(ECHO_TOPIC, INVOKE_TOPIC);
    }

    #[test]
    fn correlation_round_trips_and_rejects_foreign_data() {
        let data = correlation(255, u64::MAX - 1);
        assert_eq!(data.len(), 16);
        assert_eq!(parse_correlation(&data), Some((255, u64::MAX - 1)));
        assert_eq!(parse_correlation(b"short"), None);
    }

    #[test]
    fn payloads_are_the_client_encoding() {
        let k = key(7);
        assert_eq!(&k[..], b"bench-key-007");
        let set = set_payload(&k, &value(3));
        assert_eq!(
            &set[..],
            b"*3\r\n$3\r\nSET\r\n$13\r\nbench-key-007\r\n$3\r\nvvv\r\n"
        );
        assert_eq!(
            &get_payload(&k)[..],
            b"*2\r\n$3\r\nGET\r\n$13\r\nbench-key-007\r\n"
        );
        let props = request_properties("c", "r", "ts".into(), correlation(0, 0));
        assert_eq!(props.user_properties.len(), 3);
        assert!(status_ok(Some(&response_properties(
            correlation(0, 1),
            "v".into()
        ))));
        assert!(!status_ok(None));
    }
}
