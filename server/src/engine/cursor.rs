//! SCAN continuation tokens: a position in the byte order of keys, so that a scan resumes
//! correctly whatever was added or removed between pages.
//!
//! A token stands for "the keys at or after this byte string". Between the last key a page
//! examined and the next key, the shortest string that separates them is used (a prefix of
//! the next key one byte longer than what the two share), which keeps tokens short. A key
//! created later inside that gap is missed, which is allowed: only keys present for the
//! whole scan must be listed.
//!
//! Text form: `1:` (format version) then the position in lower-case hex, so tokens survive
//! any tool that treats them as text.

use bytes::{BufMut, Bytes, BytesMut};
use statestore::protocol::ServiceError;

/// The `-ERR` text for a token this server did not issue.
pub const INVALID_TOKEN: &str = "invalid continuation token";

const VERSION: &[u8] = b"1:";

/// The shortest string `s` with `after < s <= next` (`after` must sort before `next`).
pub(crate) fn separator<'a>(after: &[u8], next: &'a [u8]) -> &'a [u8] {
    let shared = after.iter().zip(next).take_while(|(a, b)| a == b).count();
    next.get(..=shared).unwrap_or(next)
}

/// Length of the encoded token for `position`.
pub(crate) fn encoded_len(position: &[u8]) -> usize {
    VERSION.len() + 2 * position.len()
}

/// The token that resumes at `position`.
pub(crate) fn encode(position: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(encoded_len(position));
    out.put_slice(VERSION);
    out.put_slice(hex::encode(position).as_bytes());
    out.freeze()
}

/// The position a token resumes at.
pub(crate) fn decode(token: &[u8]) -> Result<Vec<u8>, ServiceError> {
    let invalid = || ServiceError::Unknown(INVALID_TOKEN.to_owned());
    let digits = token.strip_prefix(VERSION).ok_or_else(invalid)?;
    match hex::decode(digits) {
        // An empty position is never issued: the first page has no token.
        Ok(position) if !position.is_empty() => Ok(position),
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_are_short_and_between() {
        for (after, next, expected) in [
            (&b"apple"[..], &b"apricot"[..], &b"apr"[..]),
            (b"a", b"ab", b"ab"),
            (b"a", b"b", b"b"),
            (b"user:1000", b"user:2", b"user:2"),
            (b"\x00", b"\x00\x00", b"\x00\x00"),
        ] {
            let s = separator(after, next);
            assert_eq!(s, expected);
            assert!(after < s && s <= next);
        }
    }

    #[test]
    fn tokens_round_trip_and_bad_ones_are_refused() {
        let token = encode(b"\x00k\xff");
        assert_eq!(&token[..], b"1:006bff");
        assert_eq!(token.len(), encoded_len(b"\x00k\xff"));
        assert_eq!(decode(&token), Ok(b"\x00k\xff".to_vec()));
        for bad in [&b""[..], b"1:", b"2:00", b"1:0", b"1:zz", b"006b"] {
            assert_eq!(
                decode(bad),
                Err(ServiceError::Unknown(INVALID_TOKEN.to_owned())),
                "{bad:?}"
            );
        }
    }
}
