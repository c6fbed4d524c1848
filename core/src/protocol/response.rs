//! Responses: `+OK`, `:n`, `$-1`, `$n` values, `-ERR` errors and SCAN pages.

use bytes::{BufMut, Bytes, BytesMut};

use super::resp::{self, DecodeError, DecodeErrorKind, Reader};
use super::ServiceError;

/// One page of keys returned by SCAN.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ScanPage {
    /// The keys on this page (possibly none).
    pub keys: Vec<Bytes>,
    /// The opaque token for the next page; `None` on the last page.
    pub token: Option<Bytes>,
}

/// One state store response payload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Response {
    /// `+OK`: a SET applied, a KEYNOTIFY registered or stopped.
    Ok,
    /// `:n`: a DEL/VDEL count, or `-1` for a SET or VDEL whose condition failed (the protocol
    /// document's bare `-1` decodes to this as well).
    Integer(i64),
    /// `$-1`: GET of a missing key.
    Nil,
    /// `$n`: GET of a present key.
    Value(Bytes),
    /// `-ERR text` (or the document's `-ERR: text`).
    Error(ServiceError),
    /// A SCAN page.
    Scan(ScanPage),
}

impl Response {
    /// Decodes a response payload.
    pub fn decode(payload: &Bytes) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(payload);
        let response = match reader.peek() {
            Some(b'+') => {
                let line = reader.rest();
                match line.strip_suffix(b"\r\n").unwrap_or(&line[..]) {
                    b"+OK" => Self::Ok,
                    _ => return Err(unexpected(0, "a simple string other than +OK")),
                }
            }
            Some(b':') => Self::Integer(reader.header(b':')?),
            Some(b'$') => match reader.header(b'$')? {
                -1 => Self::Nil,
                n => Self::Value(reader.bulk_body(n, false)?),
            },
            Some(b'-') => decode_dash(&reader.rest())?,
            Some(b'*') => Self::Scan(decode_scan(&mut reader)?),
            Some(_) => return Err(unexpected(0, "not a state store response")),
            None => return Err(reader.error(DecodeErrorKind::UnexpectedEnd)),
        };
        reader.finish()?;
        Ok(response)
    }

    /// Encodes the response the way the real service does (`:-1` for a failed condition,
    /// `-ERR text` for errors).
    pub fn encode(&self) -> Bytes {
        match self {
            Self::Ok => Bytes::from_static(b"+OK\r\n"),
            Self::Nil => Bytes::from_static(b"$-1\r\n"),
            Self::Integer(n) => {
                let mut out = BytesMut::with_capacity(resp::header_len(*n));
                resp::write_header(&mut out, b':', *n);
                out.freeze()
            }
            Self::Value(value) => {
                let mut out = BytesMut::with_capacity(resp::bulk_len(value.len()));
                resp::write_bulk(&mut out, value);
                out.freeze()
            }
            Self::Error(error) => {
                let text = error.text().as_bytes();
                let mut out = BytesMut::with_capacity(text.len() + 7);
                out.put_slice(b"-ERR ");
                // A CR or LF inside the text would end the line early on the reader's side.
                out.extend(
                    text.iter()
                        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
                );
                out.put_slice(b"\r\n");
                out.freeze()
            }
            Self::Scan(page) => {
                let keys_len: usize = page.keys.iter().map(|k| resp::bulk_len(k.len())).sum();
                let mut out = BytesMut::with_capacity(keys_len + 32);
                resp::write_header(&mut out, b'*', 1 + i64::from(page.token.is_some()));
                resp::write_header(&mut out, b'*', page.keys.len() as i64);
                for key in &page.keys {
                    resp::write_bulk(&mut out, key);
                }
                if let Some(token) = &page.token {
                    resp::write_bulk(&mut out, token);
                }
                out.freeze()
            }
        }
    }
}

fn unexpected(offset: usize, what: &'static str) -> DecodeError {
    DecodeError {
        offset,
        kind: DecodeErrorKind::Unexpected(what),
    }
}

/// `-1` (the document's failed condition) or `-ERR[:] text`. The closing CRLF may be missing
/// (the protocol document's own examples omit it), but anything else after `-` is not an answer
/// of the service: accepting it as an error would turn a corrupt payload into a plausible one.
fn decode_dash(line: &[u8]) -> Result<Response, DecodeError> {
    let line = line.strip_suffix(b"\r\n").unwrap_or(line);
    if let Ok(n) = resp::parse_integer(line) {
        return Ok(Response::Integer(n));
    }
    let text = match line.strip_prefix(b"-ERR") {
        Some(text) if text.is_empty() || text[0] == b' ' || text[0] == b':' => text,
        _ => {
            return Err(unexpected(
                0,
                "a line starting with - other than -ERR or -1",
            ))
        }
    };
    let text = text.strip_prefix(b":").unwrap_or(text);
    if text.contains(&b'\n') || text.contains(&b'\r') {
        return Err(unexpected(0, "an error line containing CR or LF"));
    }
    Ok(Response::Error(ServiceError::from_text(
        String::from_utf8_lossy(text).trim(),
    )))
}

fn decode_scan(reader: &mut Reader) -> Result<ScanPage, DecodeError> {
    let outer = reader.array_len_min(resp::MIN_ELEMENT_LEN)?;
    if !(1..=2).contains(&outer) {
        return Err(reader.error(DecodeErrorKind::Unexpected(
            "a SCAN response has one or two elements",
        )));
    }
    let count = reader.array_len()?;
    let mut keys = Vec::with_capacity(count);
    for _ in 0..count {
        keys.push(reader.bulk()?);
    }
    let token = if outer == 2 {
        Some(reader.bulk()?)
    } else {
        None
    };
    Ok(ScanPage { keys, token })
}
