//! Cuts one SCAN page out of the keys in byte order.
//!
//! A page is bounded three ways: matching keys (`keys`), keys examined (`examined`, so that
//! a pattern matching little of a large store cannot stall the server: such pages may be
//! empty but still carry a token), and encoded bytes (`bytes`, keys plus token, so that the
//! response fits an MQTT packet). Every page examines at least one key, so a scan always
//! ends. The byte bound can only be exceeded by a page of a single key too large for it.

use bytes::Bytes;
use statestore::protocol::resp::bulk_len;
use statestore::protocol::ScanPage;

use super::cursor;
use super::glob::Glob;

/// Room for the two array headers of a SCAN response.
const FRAMING: usize = 32;

/// How much one page may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Matching keys per page.
    pub keys: usize,
    /// Keys examined per page.
    pub examined: usize,
    /// Encoded size of a page.
    pub bytes: usize,
}

/// The next page from `keys`, which must be in byte order, start at the scan's position and
/// all start with `glob`'s literal prefix.
pub(crate) fn page<'a>(
    keys: impl Iterator<Item = &'a Bytes>,
    glob: &Glob,
    limits: Limits,
) -> ScanPage {
    let mut keys = keys.peekable();
    let mut page = Vec::new();
    let mut size = FRAMING;
    let mut examined = 0;
    let mut previous: Option<&Bytes> = None;
    while let Some(key) = keys.next() {
        let matched = glob.matches(key);
        let cost = if matched { bulk_len(key.len()) } else { 0 };
        let next = keys.peek().copied();
        // Taking `key` must leave room for the token that would follow it; otherwise the
        // page ends before it (the token before it fit when the previous key was taken).
        let token_after = next.map_or(0, |next| token_cost(key, next));
        if let Some(previous) = previous {
            if size + cost + token_after > limits.bytes {
                return finish(page, Some(cursor::separator(previous, key)));
            }
        }
        examined += 1;
        previous = Some(key);
        if matched {
            page.push(key.clone());
            size += cost;
        }
        let Some(next) = next else { break };
        if page.len() >= limits.keys || examined >= limits.examined {
            return finish(page, Some(cursor::separator(key, next)));
        }
    }
    finish(page, None)
}

fn token_cost(last: &[u8], next: &[u8]) -> usize {
    bulk_len(cursor::encoded_len(cursor::separator(last, next)))
}

fn finish(keys: Vec<Bytes>, resume_at: Option<&[u8]>) -> ScanPage {
    ScanPage {
        keys,
        token: resume_at.map(cursor::encode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<Bytes> {
        names
            .iter()
            .map(|n| Bytes::copy_from_slice(n.as_bytes()))
            .collect()
    }

    fn glob(pattern: &[u8]) -> Glob {
        Glob::compile(pattern).expect("a valid pattern")
    }

    const WIDE: Limits = Limits {
        keys: 100,
        examined: 1_000,
        bytes: 1 << 20,
    };

    #[test]
    fn a_small_store_is_one_page() {
        let all = keys(&["a1", "a2", "b1"]);
        let page = page(all.iter(), &glob(b"*1"), WIDE);
        assert_eq!(page.keys, keys(&["a1", "b1"]));
        assert_eq!(page.token, None);
    }

    #[test]
    fn the_key_limit_cuts_after_the_last_taken_key() {
        let all = keys(&["a", "b", "c"]);
        let limits = Limits { keys: 2, ..WIDE };
        let first = page(all.iter(), &glob(b"*"), limits);
        assert_eq!(first.keys, keys(&["a", "b"]));
        assert_eq!(first.token.as_deref(), Some(&b"1:63"[..]));
    }

    #[test]
    fn the_examined_limit_gives_empty_pages_that_still_advance() {
        let all = keys(&["a", "b", "c"]);
        let limits = Limits {
            examined: 1,
            ..WIDE
        };
        let first = page(all.iter(), &glob(b"[c]"), limits);
        assert!(first.keys.is_empty());
        assert_eq!(first.token.as_deref(), Some(&b"1:62"[..]));
    }

    #[test]
    fn the_byte_limit_counts_keys_and_token() {
        let all = keys(&["aaaa", "bbbb", "cccccccc"]);
        // Room for two keys and a token of one byte (`1:63`, as long as a key).
        let bytes = FRAMING + 3 * bulk_len(4);
        let page = page(all.iter(), &glob(b"*"), Limits { bytes, ..WIDE });
        assert_eq!(page.keys, keys(&["aaaa", "bbbb"]));
        let encoded = statestore::protocol::Response::Scan(page).encode();
        assert!(encoded.len() <= bytes, "{} > {bytes}", encoded.len());
    }

    #[test]
    fn a_key_larger_than_the_byte_limit_still_makes_progress() {
        let all = keys(&["huge-key", "z"]);
        let first = page(all.iter(), &glob(b"*"), Limits { bytes: 1, ..WIDE });
        assert_eq!(first.keys, keys(&["huge-key"]));
        assert!(first.token.is_some());
    }
}
