//! The request envelope: what the MQTT properties of a request must be before the engine
//! sees its payload (the protocol document's "required properties" and QoS 1).

use bytes::Bytes;
use statestore::protocol::topics::{self, TopicError};

use super::inbound::Inbound;
use super::outbound::{OutMessage, Outbound};

/// A request whose envelope is usable: the engine may apply it.
#[derive(Debug)]
pub(crate) struct Accepted {
    /// The requester's client id.
    pub client_id: String,
    /// Where to answer.
    pub response_topic: String,
    /// What to answer with.
    pub correlation_data: Bytes,
}

/// A request the service refuses before applying it.
#[derive(Debug)]
pub(crate) struct Rejection {
    /// Why, for the log.
    pub reason: String,
    /// What to tell the transport: an RPC error response and/or a disconnect.
    pub actions: Vec<Outbound>,
}

impl Rejection {
    fn silent(reason: String) -> Self {
        Self {
            reason,
            actions: Vec::new(),
        }
    }
}

/// Checks a request's envelope, in this order:
/// 1. a Response Topic is required: without one nothing can be answered;
/// 2. a forbidden Response Topic (the invoke topic, the notification prefix) gets its sender
///    disconnected, like the real service; an unusable one (wildcards, NUL) is dropped;
/// 3. QoS must be 1, Correlation Data must be present, and the sender must be known:
///    otherwise a `__stat: 400` response with `__stMsg` explains why.
pub(crate) fn check(request: &mut Inbound) -> Result<Accepted, Rejection> {
    let Some(response_topic) = request.response_topic.take() else {
        return Err(Rejection::silent(
            "no Response Topic: the request cannot be answered".to_owned(),
        ));
    };
    if let Err(error) = topics::validate_response_topic(&response_topic) {
        return Err(match (error, &request.identity) {
            (TopicError::ForbiddenResponseTopic(_), Ok(client_id)) => Rejection {
                reason: format!(
                    "forbidden Response Topic {response_topic:?}: disconnecting the client"
                ),
                actions: vec![Outbound::Disconnect(client_id.clone())],
            },
            (error, _) => Rejection::silent(format!("unusable Response Topic: {error}")),
        });
    }
    let bad_request = |reason: String, property: Option<&str>, correlation: Option<Bytes>| {
        let reply = OutMessage::bad_request(
            response_topic.clone(),
            correlation,
            reason.clone(),
            property,
        );
        Err(Rejection {
            reason,
            actions: vec![Outbound::Publish(reply)],
        })
    };
    let correlation_data = request.correlation_data.take();
    if request.qos != 1 {
        return bad_request(
            format!(
                "the request was published with QoS {}; the state store requires QoS 1",
                request.qos
            ),
            None,
            correlation_data,
        );
    }
    let Some(correlation_data) = correlation_data else {
        return bad_request(
            "the request has no Correlation Data".to_owned(),
            Some("Correlation Data"),
            None,
        );
    };
    match &request.identity {
        Ok(client_id) => Ok(Accepted {
            client_id: client_id.clone(),
            response_topic,
            correlation_data,
        }),
        Err(problem) => bad_request(
            problem.to_string(),
            Some(problem.property()),
            Some(correlation_data),
        ),
    }
}

#[cfg(test)]
mod tests {
    use statestore::protocol::properties;

    use super::super::identity::IdentityProblem;
    use super::super::inbound::UserProperties;
    use super::*;

    fn request() -> Inbound {
        Inbound {
            payload: Bytes::from_static(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
            qos: 1,
            response_topic: Some(topics::response_topic("c")),
            correlation_data: Some(Bytes::from_static(b"id")),
            identity: Ok("c".to_owned()),
            properties: UserProperties::default(),
        }
    }

    fn status_of(rejection: &Rejection) -> Option<(&str, Option<&Bytes>)> {
        match rejection.actions.first() {
            Some(Outbound::Publish(reply)) => reply
                .user_properties
                .iter()
                .find(|(name, _)| *name == properties::STATUS)
                .map(|(_, value)| (value.as_str(), reply.correlation_data.as_ref())),
            _ => None,
        }
    }

    #[test]
    fn a_complete_envelope_is_accepted() {
        let accepted = check(&mut request()).expect("accepted");
        assert_eq!(accepted.client_id, "c");
        assert_eq!(&accepted.correlation_data[..], b"id");
    }

    #[test]
    fn no_response_topic_is_dropped_silently() {
        let mut r = request();
        r.response_topic = None;
        assert!(check(&mut r).expect_err("rejected").actions.is_empty());
    }

    #[test]
    fn forbidden_response_topic_disconnects_the_sender() {
        let mut r = request();
        r.response_topic = Some(topics::INVOKE_TOPIC.to_owned());
        let rejection = check(&mut r).expect_err("rejected");
        assert_eq!(
            rejection.actions,
            vec![Outbound::Disconnect("c".to_owned())]
        );
        let mut r = request();
        r.response_topic = Some("a/#".to_owned());
        assert!(check(&mut r).expect_err("rejected").actions.is_empty());
    }

    #[test]
    fn qos_correlation_and_identity_problems_get_a_400() {
        let mut r = request();
        r.qos = 0;
        let rejection = check(&mut r).expect_err("rejected");
        assert_eq!(status_of(&rejection).map(|s| s.0), Some("400"));
        assert_eq!(
            status_of(&rejection).and_then(|s| s.1).map(|c| &c[..]),
            Some(&b"id"[..])
        );

        let mut r = request();
        r.correlation_data = None;
        let rejection = check(&mut r).expect_err("rejected");
        assert_eq!(status_of(&rejection), Some(("400", None)));

        let mut r = request();
        r.identity = Err(IdentityProblem::MissingSourceId);
        let rejection = check(&mut r).expect_err("rejected");
        assert_eq!(status_of(&rejection).map(|s| s.0), Some("400"));
    }
}
