//! The fencing token algorithm of the protocol document, shared by SET, DEL and VDEL.

use statestore::protocol::{Hlc, ServiceError};

/// What a request that passed the fencing check does to the key's stored token, should the
/// request go on to succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenUpdate {
    /// The stored token (or its absence) stays.
    Keep,
    /// The request's token becomes the key's token: the key was unfenced, or the request's
    /// token is newer.
    Store,
}

/// Checks the request's token `presented` against the key's token `stored`.
///
/// An unfenced key accepts any token (and will store it); a fenced key requires a token
/// equal to or newer than its own.
pub(crate) fn check(
    stored: Option<&Hlc>,
    presented: Option<&Hlc>,
) -> Result<TokenUpdate, ServiceError> {
    match (stored, presented) {
        (None, None) => Ok(TokenUpdate::Keep),
        (None, Some(_)) => Ok(TokenUpdate::Store),
        (Some(_), None) => Err(ServiceError::FencingTokenRequired),
        (Some(stored), Some(presented)) if presented < stored => {
            Err(ServiceError::FencingTokenLowerVersion)
        }
        (Some(stored), Some(presented)) if presented > stored => Ok(TokenUpdate::Store),
        (Some(_), Some(_)) => Ok(TokenUpdate::Keep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hlc(wall_ms: u64, counter: u64, node: &str) -> Hlc {
        Hlc {
            wall_ms,
            counter,
            node: node.into(),
        }
    }

    #[test]
    fn unfenced_key_accepts_anything_and_stores_a_token() {
        assert_eq!(check(None, None), Ok(TokenUpdate::Keep));
        assert_eq!(check(None, Some(&hlc(1, 0, "a"))), Ok(TokenUpdate::Store));
    }

    #[test]
    fn fenced_key_requires_an_equal_or_newer_token() {
        let stored = hlc(10, 2, "b");
        assert_eq!(
            check(Some(&stored), None),
            Err(ServiceError::FencingTokenRequired)
        );
        for older in [hlc(9, 9, "z"), hlc(10, 1, "z"), hlc(10, 2, "a")] {
            assert_eq!(
                check(Some(&stored), Some(&older)),
                Err(ServiceError::FencingTokenLowerVersion)
            );
        }
        assert_eq!(check(Some(&stored), Some(&stored)), Ok(TokenUpdate::Keep));
        for newer in [hlc(11, 0, "a"), hlc(10, 3, "a"), hlc(10, 2, "c")] {
            assert_eq!(check(Some(&stored), Some(&newer)), Ok(TokenUpdate::Store));
        }
    }
}
