//! The `-ERR` strings of the state store service, each as its own variant.

use std::fmt;

/// An error reported by the state store service in a `-ERR <text>` payload.
///
/// [`ServiceError::from_text`] maps the exact strings of the real service (and the protocol
/// document's variant spellings) to variants; any other text becomes [`ServiceError::Unknown`]
/// so that a newer service never breaks an older client. [`ServiceError::text`] is the exact
/// string the real service sends, which `statestore-server` uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServiceError {
    /// `__ts` is more than the maximum clock skew ahead of the service's clock.
    TimestampSkew,
    /// The key is fenced and the request carried no `__ft`.
    ///
    /// A key is fenced from the first SET that carried a fencing token until it is deleted
    /// (or expires): the service then refuses every SET, DEL and VDEL of it without a token
    /// at least as new as the stored one, even after the lock that issued the token is gone.
    /// To clean such a key up, delete it with its current version (from GET) as the token.
    FencingTokenRequired,
    /// `__ft` is more than the maximum clock skew ahead of the service's clock.
    FencingTokenSkew,
    /// `__ft` is older than the fencing token protecting the key.
    FencingTokenLowerVersion,
    /// The service's key quota is used up.
    QuotaExceeded,
    /// The payload does not follow the protocol.
    SyntaxError,
    /// The client may not do this.
    NotAuthorized,
    /// The verb is not known.
    UnknownCommand,
    /// The verb got the wrong number of arguments.
    WrongNumberOfArguments,
    /// A SET without `__ts`.
    MissingTimestamp,
    /// `__ts` or `__ft` is not a valid hybrid logical clock.
    MalformedTimestamp,
    /// The key is empty.
    KeyLengthZero,
    /// Any other text: kept verbatim.
    Unknown(String),
}

const TIMESTAMP_SKEW: &str = "the request timestamp is too far in the future; ensure that the client and broker system clocks are synchronized";
const FENCING_TOKEN_SKEW: &str = "the request fencing token timestamp is too far in the future; ensure that the client and broker system clocks are synchronized";
const FENCING_TOKEN_LOWER: &str =
    "the request fencing token is a lower version than the fencing token protecting the resource";
/// The protocol document's spelling of [`FENCING_TOKEN_LOWER`].
const FENCING_TOKEN_LOWER_DOC: &str =
    "the request fencing token is a lower version that the fencing token protecting the resource";

impl ServiceError {
    /// Maps the text after `-ERR ` to a variant.
    pub fn from_text(text: &str) -> Self {
        match text.trim() {
            TIMESTAMP_SKEW => Self::TimestampSkew,
            "a fencing token is required for this request" => Self::FencingTokenRequired,
            FENCING_TOKEN_SKEW => Self::FencingTokenSkew,
            FENCING_TOKEN_LOWER | FENCING_TOKEN_LOWER_DOC => Self::FencingTokenLowerVersion,
            "the quota has been exceeded" => Self::QuotaExceeded,
            "syntax error" => Self::SyntaxError,
            "not authorized" => Self::NotAuthorized,
            "unknown command" => Self::UnknownCommand,
            "wrong number of arguments" => Self::WrongNumberOfArguments,
            "missing timestamp" => Self::MissingTimestamp,
            "malformed timestamp" => Self::MalformedTimestamp,
            "the key length is zero" => Self::KeyLengthZero,
            other => Self::Unknown(other.to_owned()),
        }
    }

    /// The exact text the real service sends for this error.
    pub fn text(&self) -> &str {
        match self {
            Self::TimestampSkew => TIMESTAMP_SKEW,
            Self::FencingTokenRequired => "a fencing token is required for this request",
            Self::FencingTokenSkew => FENCING_TOKEN_SKEW,
            Self::FencingTokenLowerVersion => FENCING_TOKEN_LOWER,
            Self::QuotaExceeded => "the quota has been exceeded",
            Self::SyntaxError => "syntax error",
            Self::NotAuthorized => "not authorized",
            Self::UnknownCommand => "unknown command",
            Self::WrongNumberOfArguments => "wrong number of arguments",
            Self::MissingTimestamp => "missing timestamp",
            Self::MalformedTimestamp => "malformed timestamp",
            Self::KeyLengthZero => "the key length is zero",
            Self::Unknown(text) => text,
        }
    }

    /// What the application can do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            Self::TimestampSkew | Self::FencingTokenSkew => {
                "synchronise the client's clock with the broker's (NTP)"
            }
            Self::FencingTokenRequired => {
                "the key was written with a fencing token, and every later SET, DEL or VDEL of \
                 it must carry one at least as new: pass the lock's current token; to clean up \
                 a key whose lock is gone, read its current version with GET and delete it \
                 with that version as the fencing token"
            }
            Self::FencingTokenLowerVersion => {
                "another holder has taken the lock since this token was issued: re-acquire the lock"
            }
            Self::QuotaExceeded => "delete keys you no longer need, or raise the service's quota",
            Self::NotAuthorized => {
                "check the client's credentials and the broker's authorization rules"
            }
            Self::SyntaxError
            | Self::UnknownCommand
            | Self::WrongNumberOfArguments
            | Self::MissingTimestamp
            | Self::MalformedTimestamp => {
                "the request was malformed: this is a bug in the client, please report it"
            }
            Self::KeyLengthZero => "use a non-empty key",
            Self::Unknown(_) => "the service reported an error this client does not know",
        }
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.text(), self.advice())
    }
}

impl std::error::Error for ServiceError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_text_round_trips() {
        let all = [
            ServiceError::TimestampSkew,
            ServiceError::FencingTokenRequired,
            ServiceError::FencingTokenSkew,
            ServiceError::FencingTokenLowerVersion,
            ServiceError::QuotaExceeded,
            ServiceError::SyntaxError,
            ServiceError::NotAuthorized,
            ServiceError::UnknownCommand,
            ServiceError::WrongNumberOfArguments,
            ServiceError::MissingTimestamp,
            ServiceError::MalformedTimestamp,
            ServiceError::KeyLengthZero,
        ];
        for e in all {
            assert_eq!(ServiceError::from_text(e.text()), e);
        }
    }

    #[test]
    fn both_fencing_spellings_map_to_one_variant() {
        assert_eq!(
            ServiceError::from_text(FENCING_TOKEN_LOWER_DOC),
            ServiceError::FencingTokenLowerVersion
        );
    }

    #[test]
    fn unknown_text_is_kept() {
        assert_eq!(
            ServiceError::from_text("disk on fire"),
            ServiceError::Unknown("disk on fire".into())
        );
    }
}
