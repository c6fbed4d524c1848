//! Topic names of the state store and validation of client ids and topics.

use bytes::Bytes;
use thiserror::Error;

/// The topic every request is published to.
pub const INVOKE_TOPIC: &str = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke";

/// The prefix of notification topics; a Response Topic starting with it is forbidden.
pub const NOTIFY_PREFIX: &str = "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8";

/// Why a client id or topic cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TopicError {
    /// The client id is empty.
    #[error("the client id is empty")]
    EmptyClientId,
    /// The topic is empty.
    #[error("the topic is empty")]
    EmptyTopic,
    /// A client id or topic holds `+`, `#` or NUL.
    #[error("{what} {value:?} contains {found:?}, which is not allowed in a topic")]
    ForbiddenCharacter {
        /// "client id" or "topic".
        what: &'static str,
        /// The offending value.
        value: String,
        /// The character.
        found: char,
    },
    /// Longer than MQTT allows (65 535 bytes).
    #[error("{0} is longer than 65535 bytes")]
    TooLong(&'static str),
    /// The service forbids this Response Topic and disconnects clients that use it.
    #[error("response topic {0:?} is reserved by the state store")]
    ForbiddenResponseTopic(String),
}

fn check(what: &'static str, value: &str) -> Result<(), TopicError> {
    if value.len() > usize::from(u16::MAX) {
        return Err(TopicError::TooLong(what));
    }
    match value.chars().find(|c| matches!(c, '+' | '#' | '\0')) {
        Some(found) => Err(TopicError::ForbiddenCharacter {
            what,
            value: value.to_owned(),
            found,
        }),
        None => Ok(()),
    }
}

/// Checks that a client id can be used in topic names: non-empty, no `+`, `#` or NUL.
pub fn validate_client_id(client_id: &str) -> Result<(), TopicError> {
    if client_id.is_empty() {
        return Err(TopicError::EmptyClientId);
    }
    check("client id", client_id)
}

/// Checks that a topic name can be published to: non-empty, no wildcard, no NUL.
pub fn validate_topic(topic: &str) -> Result<(), TopicError> {
    if topic.is_empty() {
        return Err(TopicError::EmptyTopic);
    }
    check("topic", topic)
}

/// Checks a Response Topic: a valid topic that is neither the invoke topic nor under the
/// notification prefix (the service disconnects clients that use those).
pub fn validate_response_topic(topic: &str) -> Result<(), TopicError> {
    validate_topic(topic)?;
    if topic == INVOKE_TOPIC || topic.starts_with(NOTIFY_PREFIX) {
        return Err(TopicError::ForbiddenResponseTopic(topic.to_owned()));
    }
    Ok(())
}

/// The recommended Response Topic for a client.
pub fn response_topic(client_id: &str) -> String {
    format!("clients/{client_id}/services/statestore/_any_/command/invoke/response")
}

/// The topic on which the service notifies `client_id` about `key`.
pub fn notification_topic(client_id: &str, key: &[u8]) -> String {
    format!(
        "{NOTIFY_PREFIX}/{}/command/notify/{}",
        hex::encode_upper(client_id),
        hex::encode_upper(key)
    )
}

/// The filter a client subscribes to for all of its notifications.
pub fn notification_filter(client_id: &str) -> String {
    format!(
        "{NOTIFY_PREFIX}/{}/command/notify/+",
        hex::encode_upper(client_id)
    )
}

/// Splits a notification topic into (client id, key); `None` if it is not one.
/// Hex digits are accepted in either case.
pub fn parse_notification_topic(topic: &str) -> Option<(String, Bytes)> {
    let rest = topic.strip_prefix(NOTIFY_PREFIX)?.strip_prefix('/')?;
    let (client_hex, key_hex) = rest.split_once("/command/notify/")?;
    let client_id = String::from_utf8(hex::decode(client_hex).ok()?).ok()?;
    let key = hex::decode(key_hex).ok()?;
    Some((client_id, Bytes::from(key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notification_topic_matches_the_document() {
        assert_eq!(
            notification_topic("client-id1", b"SOMEKEY"),
            "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/636C69656E742D696431/command/notify/534F4D454B4559"
        );
        assert_eq!(
            parse_notification_topic(&notification_topic("client-id1", b"\0\r\n")),
            Some(("client-id1".to_owned(), Bytes::from_static(b"\0\r\n")))
        );
        assert_eq!(
            parse_notification_topic("clients/x/command/notify/00"),
            None
        );
        assert_eq!(
            parse_notification_topic(&format!("{NOTIFY_PREFIX}/6/command/notify/00")),
            None
        );
    }

    #[test]
    fn filter_covers_every_key_of_the_client() {
        let filter = notification_filter("c");
        let topic = notification_topic("c", b"k");
        assert_eq!(filter.trim_end_matches('+'), topic.trim_end_matches("6B"));
    }

    #[test]
    fn validation_rejects_wildcards_nul_and_reserved_topics() {
        assert_eq!(validate_client_id(""), Err(TopicError::EmptyClientId));
        for bad in ["a+b", "a#", "a\0"] {
            assert!(validate_client_id(bad).is_err(), "{bad:?}");
            assert!(validate_topic(bad).is_err(), "{bad:?}");
        }
        assert!(validate_client_id("client-1").is_ok());
        assert!(validate_response_topic(&response_topic("c")).is_ok());
        assert!(validate_response_topic(INVOKE_TOPIC).is_err());
        assert!(validate_response_topic(&format!("{NOTIFY_PREFIX}/x")).is_err());
        assert!(validate_topic(&"a".repeat(70_000)).is_err());
    }
}
