//! One record of the log: a persisted key or the removal of one, in a fixed binary layout.
//!
//! Layout (integers little-endian, lengths u32):
//! - `1` key value version-wall(u64) version-counter(u64) deadline fencing-token — a put;
//! - `2` key — a removal;
//!
//! where key and value are length-prefixed bytes, deadline is a flag byte then a u64, and
//! the fencing token a flag byte then wall(u64) counter(u64) and the length-prefixed node id.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use statestore::protocol::Hlc;

use crate::engine::{DurableChange, PersistedKey};

const PUT: u8 = 1;
const REMOVE: u8 = 2;

/// Why a record's payload could not be read back (its checksum was right, so this means a
/// log written by an incompatible version).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable record: {0}")]
pub(crate) struct RecordError(&'static str);

/// Appends the payload of `change` to `out`.
pub(crate) fn encode(change: &DurableChange, out: &mut BytesMut) {
    match change {
        DurableChange::Put(key) => {
            out.put_u8(PUT);
            put_bytes(out, &key.key);
            put_bytes(out, &key.value);
            out.put_u64_le(key.version.wall_ms);
            out.put_u64_le(key.version.counter);
            match key.deadline_ms {
                Some(deadline) => {
                    out.put_u8(1);
                    out.put_u64_le(deadline);
                }
                None => out.put_u8(0),
            }
            match &key.fencing_token {
                Some(token) => {
                    out.put_u8(1);
                    out.put_u64_le(token.wall_ms);
                    out.put_u64_le(token.counter);
                    put_bytes(out, token.node.as_bytes());
                }
                None => out.put_u8(0),
            }
        }
        DurableChange::Remove(key) => {
            out.put_u8(REMOVE);
            put_bytes(out, key);
        }
    }
}

/// Reads a payload written by [`encode`]. Versions come back with `node` as their node id.
pub(crate) fn decode(mut payload: Bytes, node: &str) -> Result<DurableChange, RecordError> {
    let change = match take_u8(&mut payload)? {
        PUT => {
            let key = take_bytes(&mut payload)?;
            let value = take_bytes(&mut payload)?;
            let version = Hlc {
                wall_ms: take_u64(&mut payload)?,
                counter: take_u64(&mut payload)?,
                node: node.to_owned(),
            };
            let deadline_ms = match take_u8(&mut payload)? {
                0 => None,
                _ => Some(take_u64(&mut payload)?),
            };
            let fencing_token = match take_u8(&mut payload)? {
                0 => None,
                _ => Some(Hlc {
                    wall_ms: take_u64(&mut payload)?,
                    counter: take_u64(&mut payload)?,
                    node: String::from_utf8(take_bytes(&mut payload)?.to_vec())
                        .map_err(|_| RecordError("a fencing token node id is not UTF-8"))?,
                }),
            };
            DurableChange::Put(PersistedKey {
                key,
                value,
                version,
                fencing_token,
                deadline_ms,
            })
        }
        REMOVE => DurableChange::Remove(take_bytes(&mut payload)?),
        _ => return Err(RecordError("unknown record kind")),
    };
    if payload.has_remaining() {
        return Err(RecordError("bytes after the record"));
    }
    Ok(change)
}

fn put_bytes(out: &mut BytesMut, bytes: &[u8]) {
    // Keys and values come from MQTT packets, far below 4 GiB.
    out.put_u32_le(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
    out.put_slice(bytes);
}

fn take_u8(buf: &mut Bytes) -> Result<u8, RecordError> {
    buf.try_get_u8().map_err(|_| RecordError("truncated"))
}

fn take_u64(buf: &mut Bytes) -> Result<u64, RecordError> {
    buf.try_get_u64_le().map_err(|_| RecordError("truncated"))
}

fn take_bytes(buf: &mut Bytes) -> Result<Bytes, RecordError> {
    let len = buf.try_get_u32_le().map_err(|_| RecordError("truncated"))? as usize;
    if buf.remaining() < len {
        return Err(RecordError("truncated"));
    }
    Ok(buf.split_to(len))
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
    fn records_round_trip() {
        let changes = [
            DurableChange::Put(PersistedKey {
                key: Bytes::from_static(b"k\x00\xff"),
                value: Bytes::from_static(b"value"),
                version: hlc(1_700_000_000_000, 3, "StateStore"),
                fencing_token: Some(hlc(1_699_999_999_999, 1, "client-1")),
                deadline_ms: Some(1_700_000_060_000),
            }),
            DurableChange::Put(PersistedKey {
                key: Bytes::from_static(b"plain"),
                value: Bytes::new(),
                version: hlc(5, 0, "StateStore"),
                fencing_token: None,
                deadline_ms: None,
            }),
            DurableChange::Remove(Bytes::from_static(b"gone")),
        ];
        for change in changes {
            let mut out = BytesMut::new();
            encode(&change, &mut out);
            assert_eq!(decode(out.freeze(), "StateStore"), Ok(change));
        }
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let mut out = BytesMut::new();
        encode(&DurableChange::Remove(Bytes::from_static(b"k")), &mut out);
        let whole = out.freeze();
        assert!(decode(whole.slice(..whole.len() - 1), "n").is_err());
        let mut longer = BytesMut::from(&whole[..]);
        longer.put_u8(0);
        assert!(decode(longer.freeze(), "n").is_err());
        assert!(decode(Bytes::from_static(b"\x09"), "n").is_err());
        assert!(decode(Bytes::new(), "n").is_err());
    }
}
