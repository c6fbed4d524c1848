//! Validation of the request's `__ts` and `__ft` user properties.

use std::time::Duration;

use statestore::protocol::{Hlc, ServiceError};

/// Parses an optional `__ts` and rejects one more than `max_skew` ahead of `now_ms`.
pub(crate) fn timestamp(
    raw: Option<&str>,
    now_ms: u64,
    max_skew: Duration,
) -> Result<Option<Hlc>, ServiceError> {
    parse_within_skew(raw, now_ms, max_skew, ServiceError::TimestampSkew)
}

/// Parses an optional `__ft` and rejects one more than `max_skew` ahead of `now_ms`.
pub(crate) fn fencing_token(
    raw: Option<&str>,
    now_ms: u64,
    max_skew: Duration,
) -> Result<Option<Hlc>, ServiceError> {
    parse_within_skew(raw, now_ms, max_skew, ServiceError::FencingTokenSkew)
}

fn parse_within_skew(
    raw: Option<&str>,
    now_ms: u64,
    max_skew: Duration,
    too_far_ahead: ServiceError,
) -> Result<Option<Hlc>, ServiceError> {
    let Some(raw) = raw else { return Ok(None) };
    let hlc: Hlc = raw.parse().map_err(|_| ServiceError::MalformedTimestamp)?;
    hlc.check_skew(now_ms, max_skew)
        .map_err(|_| too_far_ahead)?;
    Ok(Some(hlc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use statestore::protocol::MAX_CLOCK_SKEW;

    #[test]
    fn absent_is_none_and_valid_is_parsed() {
        assert_eq!(timestamp(None, 0, MAX_CLOCK_SKEW), Ok(None));
        let parsed = timestamp(Some("5:1:c"), 5, MAX_CLOCK_SKEW)
            .unwrap()
            .unwrap();
        assert_eq!((parsed.wall_ms, parsed.counter, &*parsed.node), (5, 1, "c"));
    }

    #[test]
    fn malformed_and_too_far_ahead_get_their_errors() {
        assert_eq!(
            timestamp(Some("x:1:c"), 0, MAX_CLOCK_SKEW),
            Err(ServiceError::MalformedTimestamp)
        );
        assert_eq!(
            fencing_token(Some("1:c"), 0, MAX_CLOCK_SKEW),
            Err(ServiceError::MalformedTimestamp)
        );
        assert_eq!(
            timestamp(Some("60001:0:c"), 0, MAX_CLOCK_SKEW),
            Err(ServiceError::TimestampSkew)
        );
        assert_eq!(
            fencing_token(Some("60001:0:c"), 0, MAX_CLOCK_SKEW),
            Err(ServiceError::FencingTokenSkew)
        );
        assert!(timestamp(Some("60000:0:c"), 0, MAX_CLOCK_SKEW).is_ok());
    }
}
