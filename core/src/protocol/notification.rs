//! Notifications the service publishes for keys observed with KEYNOTIFY.

use bytes::{Bytes, BytesMut};

use super::resp::{self, DecodeError, DecodeErrorKind};

/// What happened to an observed key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Notification {
    /// `NOTIFY SET VALUE <value>`: the key was set to `value`.
    Set {
        /// The new value.
        value: Bytes,
    },
    /// `NOTIFY DELETE` (the document writes `DEL`): the key was deleted or expired.
    Delete,
}

impl Notification {
    /// Decodes a notification payload (case-insensitive; `DEL` and `DELETE` both accepted).
    pub fn decode(payload: &Bytes) -> Result<Self, DecodeError> {
        let args = resp::decode_bulk_array(payload)?;
        let is = |arg: &Bytes, word: &str| arg.eq_ignore_ascii_case(word.as_bytes());
        match &args[..] {
            [notify, set, tag, value]
                if is(notify, "NOTIFY") && is(set, "SET") && is(tag, "VALUE") =>
            {
                Ok(Self::Set {
                    value: value.clone(),
                })
            }
            [notify, delete]
                if is(notify, "NOTIFY") && (is(delete, "DELETE") || is(delete, "DEL")) =>
            {
                Ok(Self::Delete)
            }
            _ => Err(DecodeError {
                offset: 0,
                kind: DecodeErrorKind::Unexpected(
                    "not a NOTIFY SET VALUE or NOTIFY DELETE message",
                ),
            }),
        }
    }

    /// Encodes the notification the way the real service does.
    pub fn encode(&self) -> Bytes {
        match self {
            Self::Set { value } => {
                let mut out = BytesMut::with_capacity(resp::bulk_len(value.len()) + 40);
                resp::write_header(&mut out, b'*', 4);
                for word in [&b"NOTIFY"[..], b"SET", b"VALUE", value] {
                    resp::write_bulk(&mut out, word);
                }
                out.freeze()
            }
            Self::Delete => Bytes::from_static(b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"),
        }
    }
}
