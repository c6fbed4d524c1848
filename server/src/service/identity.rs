//! Who sent a request. The embedded broker stamps the publisher's real client id; on an
//! external broker the service can only believe the `__srcId` the client claims, checked
//! against a `clients/{id}/...` response topic when it has that shape.

use std::fmt;

use statestore::protocol::{properties, topics};

/// Why the sender of a request is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdentityProblem {
    /// The embedded broker did not stamp `x-mqtt-client-id` (never expected).
    NotStamped,
    /// No usable `__srcId` (external mode).
    MissingSourceId,
    /// `__srcId` names another client than the `clients/{id}/...` response topic.
    Mismatch {
        /// The claimed `__srcId`.
        source_id: String,
    },
}

impl IdentityProblem {
    /// The user property the problem is about, for `__propName`.
    pub fn property(&self) -> &'static str {
        match self {
            Self::NotStamped => properties::BROKER_CLIENT_ID,
            Self::MissingSourceId | Self::Mismatch { .. } => properties::SOURCE_ID,
        }
    }
}

impl fmt::Display for IdentityProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotStamped => f.write_str("the broker did not identify the sender"),
            Self::MissingSourceId => f.write_str(
                "the request has no valid __srcId user property (the sender's client id)",
            ),
            Self::Mismatch { source_id } => write!(
                f,
                "__srcId {source_id:?} does not match the client id in the response topic"
            ),
        }
    }
}

/// Embedded mode: the id the broker stamped in `x-mqtt-client-id`.
pub(crate) fn stamped_by_broker(stamped: Option<String>) -> Result<String, IdentityProblem> {
    stamped
        .filter(|id| !id.is_empty())
        .ok_or(IdentityProblem::NotStamped)
}

/// External mode: the claimed `__srcId`; a response topic under `clients/` must belong to it.
pub(crate) fn claimed_by_client(
    source_id: Option<String>,
    response_topic: Option<&str>,
) -> Result<String, IdentityProblem> {
    let Some(source_id) = source_id.filter(|id| topics::validate_client_id(id).is_ok()) else {
        return Err(IdentityProblem::MissingSourceId);
    };
    if let Some(rest) = response_topic.and_then(|topic| topic.strip_prefix("clients/")) {
        // Prefix comparison, not segment splitting: client ids may contain '/'.
        let owned = rest
            .strip_prefix(source_id.as_str())
            .is_some_and(|tail| tail.starts_with('/'));
        if !owned {
            return Err(IdentityProblem::Mismatch { source_id });
        }
    }
    Ok(source_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: Option<&str>, topic: Option<&str>) -> Result<String, IdentityProblem> {
        claimed_by_client(id.map(str::to_owned), topic)
    }

    #[test]
    fn source_id_must_own_a_clients_topic() {
        let topic = topics::response_topic("a/b");
        assert_eq!(claim(Some("a/b"), Some(&topic)), Ok("a/b".to_owned()));
        assert_eq!(
            claim(Some("a"), Some("clients/ab/x")),
            Err(IdentityProblem::Mismatch {
                source_id: "a".to_owned()
            })
        );
        assert_eq!(
            claim(Some("a"), Some("clients/a")),
            Err(IdentityProblem::Mismatch {
                source_id: "a".to_owned()
            })
        );
        assert_eq!(claim(Some("a"), Some("replies/7")), Ok("a".to_owned()));
    }

    #[test]
    fn missing_or_unusable_source_id_is_a_problem() {
        assert_eq!(
            claim(None, Some("r")),
            Err(IdentityProblem::MissingSourceId)
        );
        assert_eq!(
            claim(Some(""), Some("r")),
            Err(IdentityProblem::MissingSourceId)
        );
        assert_eq!(
            claim(Some("a+"), Some("r")),
            Err(IdentityProblem::MissingSourceId)
        );
        assert_eq!(stamped_by_broker(None), Err(IdentityProblem::NotStamped));
        assert_eq!(stamped_by_broker(Some("c".into())), Ok("c".to_owned()));
    }
}
