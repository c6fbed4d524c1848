//! The state store wire protocol, with no I/O: payload codec, hybrid logical clocks, topics
//! and property names. Shared by the client and by `statestore-server`.
//!
//! Decoding is safe on untrusted input: it never panics, never allocates more than the
//! payload's size justifies, and reports what was wrong and where.
//!
//! ```
//! use bytes::Bytes;
//! use statestore::protocol::{Request, Response, SetCondition, SetFlags};
//!
//! let request = Request::Set {
//!     key: Bytes::from_static(b"lock"),
//!     value: Bytes::from_static(b"holder-1"),
//!     flags: SetFlags { condition: SetCondition::OnlyIfAbsentOrEqual, expiry_ms: Some(10_000) },
//! };
//! let payload = request.encode();
//! assert_eq!(&payload[..], b"*6\r\n$3\r\nSET\r\n$4\r\nlock\r\n$8\r\nholder-1\r\n$3\r\nNEX\r\n$2\r\nPX\r\n$5\r\n10000\r\n");
//! assert_eq!(Request::decode(&payload), Ok(request));
//! assert_eq!(Response::decode(&Bytes::from_static(b":-1\r\n")), Ok(Response::Integer(-1)));
//! ```

pub mod hlc;
mod notification;
pub mod properties;
mod request;
pub mod resp;
mod response;
mod service_error;
pub mod topics;

pub use hlc::{Hlc, HlcError, HybridClock, MAX_CLOCK_SKEW};
pub use notification::Notification;
pub use request::{Request, RequestError, SetCondition, SetFlags};
pub use resp::{DecodeError, DecodeErrorKind};
pub use response::{Response, ScanPage};
pub use service_error::ServiceError;
