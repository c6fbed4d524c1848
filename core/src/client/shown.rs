//! How keys and responses appear in error messages and logs: short, printable, and never a
//! value's bytes (a value may be a secret).

use std::fmt;

use crate::protocol::Response;

/// How many bytes of a key are shown.
const KEY_SHOWN: usize = 64;

/// A key as messages show it: its first 64 bytes, printable ASCII as is and other bytes
/// escaped (`\xff`), then `...` if it is longer.
pub(crate) struct ShownKey<'a>(pub(crate) &'a [u8]);

impl fmt::Display for ShownKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = self.0.get(..KEY_SHOWN).unwrap_or(self.0);
        write!(f, "{}", head.escape_ascii())?;
        if self.0.len() > KEY_SHOWN {
            f.write_str("...")?;
        }
        Ok(())
    }
}

/// A response as logs show it: its kind, with a value's length instead of its bytes.
pub(crate) struct ShownResponse<'a>(pub(crate) &'a Response);

impl fmt::Display for ShownResponse<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Response::Ok => f.write_str("OK"),
            Response::Integer(n) => write!(f, "integer {n}"),
            Response::Nil => f.write_str("nil"),
            Response::Value(value) => write!(f, "a value of {} bytes", value.len()),
            Response::Error(error) => write!(f, "error: {error}"),
            Response::Scan(page) => write!(
                f,
                "a page of {} keys{}",
                page.keys.len(),
                if page.token.is_some() {
                    ", more to come"
                } else {
                    ""
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::protocol::ScanPage;

    #[test]
    fn a_key_is_escaped_and_cut() {
        assert_eq!(ShownKey(b"plain").to_string(), "plain");
        assert_eq!(ShownKey(b"a\xffb\n").to_string(), "a\\xffb\\n");
        let long = [b'k'; 70];
        assert_eq!(
            ShownKey(&long).to_string(),
            format!("{}...", "k".repeat(64))
        );
    }

    #[test]
    fn a_response_never_shows_a_value() {
        let value = Response::Value(Bytes::from_static(b"secret"));
        assert_eq!(ShownResponse(&value).to_string(), "a value of 6 bytes");
        let page = Response::Scan(ScanPage {
            keys: vec![Bytes::from_static(b"a")],
            token: Some(Bytes::from_static(b"t")),
        });
        assert_eq!(
            ShownResponse(&page).to_string(),
            "a page of 1 keys, more to come"
        );
        assert_eq!(
            ShownResponse(&Response::Integer(-1)).to_string(),
            "integer -1"
        );
    }
}
