//! The RESP3-like framing shared by requests, responses and notifications: a bounded,
//! zero-copy reader and the matching writers.
//!
//! The reader never trusts a declared length: an array count or bulk length is checked
//! against the bytes actually left before anything is allocated or sliced.

use bytes::{BufMut, Bytes, BytesMut};
use thiserror::Error;

/// Smallest encoding of one bulk string (`$0\r\n\r\n`); bounds how many elements an array
/// of bulk strings can honestly announce for the bytes that remain.
pub const MIN_BULK_LEN: usize = 6;

/// Smallest encoding of any element (`*0\r\n`, `:0\r\n`).
pub const MIN_ELEMENT_LEN: usize = 4;

/// Longest header line we accept (`*`, `$`, `:` plus sign and 19 digits), so that a header
/// without CRLF is rejected without scanning the whole payload.
const MAX_HEADER_LEN: usize = 21;

/// What was wrong with a payload, and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("malformed payload at byte {offset}: {kind}")]
pub struct DecodeError {
    /// Byte offset in the payload where decoding stopped.
    pub offset: usize,
    /// What was expected there.
    pub kind: DecodeErrorKind,
}

/// The kinds of framing errors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The payload ended before the message did.
    #[error("unexpected end of payload")]
    UnexpectedEnd,
    /// A different type marker was found.
    #[error("expected '{expected}', found byte 0x{found:02X}")]
    UnexpectedByte {
        /// The expected marker.
        expected: char,
        /// The byte found instead.
        found: u8,
    },
    /// A header line was not terminated by CRLF where it had to be.
    #[error("missing CRLF")]
    MissingCrlf,
    /// A header held something other than a decimal integer.
    #[error("invalid integer")]
    InvalidInteger,
    /// A decimal integer did not fit in 64 bits.
    #[error("integer overflow")]
    IntegerOverflow,
    /// A declared length or count was negative where it cannot be.
    #[error("negative length {0}")]
    NegativeLength(i64),
    /// A declared length or count exceeds what the payload holds.
    #[error("declared length {declared} exceeds the {available} bytes left")]
    LengthTooLarge {
        /// The length the payload announced.
        declared: u64,
        /// The bytes actually left.
        available: usize,
    },
    /// Bytes followed a complete message.
    #[error("{0} unexpected trailing bytes")]
    TrailingBytes(usize),
    /// The framing was valid but the content was not a message of the expected kind.
    #[error("{0}")]
    Unexpected(&'static str),
}

/// A cursor over a payload. Every bulk string it returns is a slice of the payload
/// (`Bytes::slice`), never a copy.
#[derive(Debug)]
pub struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    /// Starts reading `buf` from its beginning.
    pub fn new(buf: &Bytes) -> Self {
        Self {
            buf: buf.clone(),
            pos: 0,
        }
    }

    /// The current offset.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Builds an error at the current offset.
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            offset: self.pos,
            kind,
        }
    }

    /// The next byte, without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Everything not yet consumed, consuming it.
    pub fn rest(&mut self) -> Bytes {
        let rest = self.buf.slice(self.pos..);
        self.pos = self.buf.len();
        rest
    }

    /// Fails unless the whole payload was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error(DecodeErrorKind::TrailingBytes(n))),
        }
    }

    /// Consumes `\r\n`.
    pub fn crlf(&mut self) -> Result<(), DecodeError> {
        match self.buf.get(self.pos..self.pos + 2) {
            Some(b"\r\n") => {
                self.pos += 2;
                Ok(())
            }
            Some(_) => Err(self.error(DecodeErrorKind::MissingCrlf)),
            None => Err(self.error(DecodeErrorKind::UnexpectedEnd)),
        }
    }

    /// Consumes an optional final `\r\n`: the protocol document shows some payloads without it.
    pub fn optional_final_crlf(&mut self) -> Result<(), DecodeError> {
        if self.remaining() > 0 {
            self.crlf()?;
        }
        self.finish()
    }

    /// Consumes a header line `<marker><integer>\r\n` and returns the integer.
    pub fn header(&mut self, marker: u8) -> Result<i64, DecodeError> {
        match self.peek() {
            None => return Err(self.error(DecodeErrorKind::UnexpectedEnd)),
            Some(b) if b != marker => {
                return Err(self.error(DecodeErrorKind::UnexpectedByte {
                    expected: marker as char,
                    found: b,
                }))
            }
            Some(_) => self.pos += 1,
        }
        let start = self.pos;
        let end = self.buf.len().min(start + MAX_HEADER_LEN + 1);
        let window = self.buf.get(start..end).unwrap_or_default();
        let len = match window.iter().position(|&b| b == b'\r') {
            Some(len) => len,
            None if window.len() > MAX_HEADER_LEN => {
                return Err(self.error(DecodeErrorKind::InvalidInteger))
            }
            None => {
                return Err(DecodeError {
                    offset: self.buf.len(),
                    kind: DecodeErrorKind::UnexpectedEnd,
                })
            }
        };
        let digits = window.get(..len).unwrap_or_default();
        let value = parse_integer(digits).map_err(|kind| self.error(kind))?;
        self.pos += len;
        self.crlf()?;
        Ok(value)
    }

    /// Consumes the header of an array of bulk strings and returns its element count, checked
    /// against the bytes left so that a caller may allocate for that many elements.
    pub fn array_len(&mut self) -> Result<usize, DecodeError> {
        self.array_len_min(MIN_BULK_LEN)
    }

    /// Like [`Reader::array_len`], for elements of at least `min_element_len` encoded bytes.
    pub fn array_len_min(&mut self, min_element_len: usize) -> Result<usize, DecodeError> {
        let declared = self.header(b'*')?;
        let count = self.non_negative(declared)?;
        if count.saturating_mul(min_element_len as u64) > self.remaining() as u64 {
            return Err(self.error(DecodeErrorKind::LengthTooLarge {
                declared: count,
                available: self.remaining(),
            }));
        }
        Ok(count as usize)
    }

    /// Consumes a bulk string `$<n>\r\n<n bytes>\r\n` and returns the bytes as a slice of the payload.
    pub fn bulk(&mut self) -> Result<Bytes, DecodeError> {
        let declared = self.header(b'$')?;
        self.bulk_body(declared, true)
    }

    /// Consumes the body of a bulk string whose header announced `declared` bytes; the final CRLF
    /// is required when `crlf_required`, otherwise it may be absent at the end of the payload.
    pub fn bulk_body(&mut self, declared: i64, crlf_required: bool) -> Result<Bytes, DecodeError> {
        let len = self.non_negative(declared)?;
        if len > self.remaining() as u64 {
            return Err(self.error(DecodeErrorKind::LengthTooLarge {
                declared: len,
                available: self.remaining(),
            }));
        }
        let end = self.pos + len as usize;
        let value = self.buf.slice(self.pos..end);
        self.pos = end;
        if crlf_required {
            self.crlf()?;
        } else {
            self.optional_final_crlf()?;
        }
        Ok(value)
    }

    fn non_negative(&self, declared: i64) -> Result<u64, DecodeError> {
        u64::try_from(declared).map_err(|_| self.error(DecodeErrorKind::NegativeLength(declared)))
    }
}

/// Decodes a payload that is exactly one array of bulk strings (requests, notifications).
pub fn decode_bulk_array(payload: &Bytes) -> Result<Vec<Bytes>, DecodeError> {
    let mut reader = Reader::new(payload);
    let count = reader.array_len()?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(reader.bulk()?);
    }
    reader.finish()?;
    Ok(items)
}

/// Parses an optionally negative decimal integer of ASCII digits (no `+`, no spaces).
pub fn parse_integer(digits: &[u8]) -> Result<i64, DecodeErrorKind> {
    let (negative, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(DecodeErrorKind::InvalidInteger);
    }
    let mut value: i64 = 0;
    for &d in digits {
        let digit = i64::from(d - b'0');
        value = value
            .checked_mul(10)
            .and_then(|v| {
                if negative {
                    v.checked_sub(digit)
                } else {
                    v.checked_add(digit)
                }
            })
            .ok_or(DecodeErrorKind::IntegerOverflow)?;
    }
    Ok(value)
}

/// Appends `<marker><n>\r\n`.
pub fn write_header(out: &mut BytesMut, marker: u8, n: i64) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    out.reserve(digits.len() + 3);
    out.put_u8(marker);
    out.put_slice(digits.as_bytes());
    out.put_slice(b"\r\n");
}

/// Appends a bulk string.
pub fn write_bulk(out: &mut BytesMut, value: &[u8]) {
    write_header(out, b'$', value.len() as i64);
    out.reserve(value.len() + 2);
    out.put_slice(value);
    out.put_slice(b"\r\n");
}

/// Encoded size of a bulk string holding `len` bytes.
pub fn bulk_len(len: usize) -> usize {
    header_len(len as i64) + len + 2
}

/// Encoded size of a header line holding `n`.
pub fn header_len(n: i64) -> usize {
    itoa::Buffer::new().format(n).len() + 3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &'static [u8]) -> Reader {
        Reader::new(&Bytes::from_static(bytes))
    }

    #[test]
    fn integers_parse_with_sign_and_reject_overflow() {
        assert_eq!(parse_integer(b"0"), Ok(0));
        assert_eq!(parse_integer(b"-1"), Ok(-1));
        assert_eq!(parse_integer(b"9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_integer(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(
            parse_integer(b"9223372036854775808"),
            Err(DecodeErrorKind::IntegerOverflow)
        );
        for bad in [&b""[..], b"-", b"+1", b" 1", b"1a", b"--1"] {
            assert_eq!(
                parse_integer(bad),
                Err(DecodeErrorKind::InvalidInteger),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn huge_declared_lengths_are_errors_not_allocations() {
        let err = reader(b"*1000000000000000000\r\n").array_len().unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::LengthTooLarge { .. }));
        let err = reader(b"$1000000000000000000\r\nabc\r\n")
            .bulk()
            .unwrap_err();
        assert!(matches!(
            err.kind,
            DecodeErrorKind::LengthTooLarge {
                declared: 1_000_000_000_000_000_000,
                available: 5
            }
        ));
        let err = reader(b"$-5\r\n").bulk().unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::NegativeLength(-5));
    }

    #[test]
    fn header_without_crlf_is_rejected_early() {
        let err = reader(b"$11111111111111111111111111111111111")
            .bulk()
            .unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::InvalidInteger);
        let err = reader(b"$12").bulk().unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::UnexpectedEnd);
        let err = reader(b"$1\rx").bulk().unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::MissingCrlf);
    }

    #[test]
    fn bulk_is_binary_safe_and_zero_copy() {
        let payload = Bytes::from_static(b"$5\r\na\r\n\0b\r\n");
        let mut r = Reader::new(&payload);
        let value = r.bulk().unwrap();
        assert_eq!(&value[..], b"a\r\n\0b");
        assert_eq!(value.as_ptr(), payload[4..].as_ptr());
        r.finish().unwrap();
    }

    #[test]
    fn writers_match_sizes() {
        let mut out = BytesMut::new();
        write_bulk(&mut out, b"hello");
        assert_eq!(&out[..], b"$5\r\nhello\r\n");
        assert_eq!(bulk_len(5), out.len());
        assert_eq!(header_len(-1), 5);
    }
}
