//! Why a connection could not be made, in words a user can act on: every message names the
//! broker's address, says what happened and what to try (rumqttc's own texts, such as "Invalid
//! property type = 46" for an HTTP server, say none of that).

use std::io::ErrorKind;
use std::time::Duration;

use rumqttc::v5::{ConnectionError, StateError};

use crate::Error;

/// The error of a first connection attempt to `broker` (`host:port`) that failed with `error`
/// after waiting at most `waited`.
pub(crate) fn failed(broker: &str, error: &ConnectionError, waited: Duration) -> Error {
    match error {
        ConnectionError::Timeout(_) => no_answer(broker, waited),
        other => Error::Connection(format!("{broker}: {}", reason(other))),
    }
}

/// Why a connection to `broker` was lost (`connected`) or an attempt to reconnect failed,
/// as text for [`ConnectionEvent::reason`](super::ConnectionEvent::reason).
pub(crate) fn lost(broker: &str, error: &ConnectionError, connected: bool) -> String {
    let what = if connected {
        "connection lost"
    } else {
        "reconnection attempt failed"
    };
    let why = match error {
        ConnectionError::Timeout(_) => "no answer from the broker in time".to_owned(),
        other => reason(other),
    };
    format!("{broker}: {what}: {why}")
}

/// The error when no connection to `broker` was made within `waited`.
pub(crate) fn no_answer(broker: &str, waited: Duration) -> Error {
    Error::Connection(format!(
        "{broker}: no answer from an MQTT broker within {waited:?} (something may accept TCP \
         connections there without answering as MQTT 5: check the host and port, or raise \
         the timeout)"
    ))
}

fn reason(error: &ConnectionError) -> String {
    match error {
        ConnectionError::Io(io) if io.kind() == ErrorKind::ConnectionRefused => {
            "connection refused (is a broker running there? for a local state store run \
             `statestore serve`)"
                .to_owned()
        }
        ConnectionError::Io(io) => format!("{io} (check the host and port)"),
        ConnectionError::ConnectionRefused(code) => format!(
            "the broker refused the connection ({code:?}): check the credentials and the \
             client id"
        ),
        ConnectionError::NotConnAck(_)
        | ConnectionError::MqttState(StateError::Deserialization(_)) => not_mqtt(),
        ConnectionError::MqttState(StateError::WrongPacket | StateError::ConnectionAborted) => {
            not_mqtt()
        }
        other => other.to_string(),
    }
}

fn not_mqtt() -> String {
    "the endpoint does not speak MQTT 5 (its answer is not an MQTT 5 CONNACK: another protocol \
     such as HTTP or TLS, or an MQTT 3.1.1-only broker?): check the port and the tls setting"
        .to_owned()
}

#[cfg(test)]
mod tests {
    use rumqttc::v5::mqttbytes::v5::ConnectReturnCode;

    use super::*;

    #[test]
    fn every_message_names_the_broker_and_what_to_try() {
        let broker = "127.0.0.1:1883";
        let refused = std::io::Error::from(ErrorKind::ConnectionRefused);
        let cases = [
            (ConnectionError::Io(refused), "statestore serve"),
            (
                ConnectionError::MqttState(StateError::ConnectionAborted),
                "does not speak MQTT 5",
            ),
            (
                ConnectionError::ConnectionRefused(ConnectReturnCode::NotAuthorized),
                "credentials",
            ),
        ];
        for (error, hint) in cases {
            let text = failed(broker, &error, Duration::from_secs(1)).to_string();
            assert!(text.contains(broker) && text.contains(hint), "{text}");
        }
        let text = no_answer(broker, Duration::from_secs(3)).to_string();
        assert!(text.contains(broker) && text.contains("3s"), "{text}");
    }
}
