//! Hand-written protocol bytes, independent of the crate's codec. Also included alone (by
//! `#[path]`) by the engine tests, which use only part of it.
#![allow(dead_code)]

use std::time::{SystemTime, UNIX_EPOCH};

/// A RESP array of bulk strings.
pub fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// `$n\r\n<value>\r\n`, the GET response for a value.
pub fn bulk(value: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", value.len()).into_bytes();
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    out
}

/// `-ERR <text>\r\n`.
pub fn err(text: &str) -> Vec<u8> {
    format!("-ERR {text}\r\n").into_bytes()
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An HLC in the SDKs' text form.
pub fn hlc(wall_ms: u64, counter: u64, node: &str) -> String {
    format!("{wall_ms:015}:{counter:05}:{node}")
}

/// An HLC of the local clock now.
pub fn hlc_now(node: &str) -> String {
    hlc(now_ms(), 0, node)
}

/// A parsed HLC, ordered like the service orders them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ts {
    pub wall_ms: u64,
    pub counter: u64,
    pub node: String,
}

impl Ts {
    pub fn parse(text: &str) -> Ts {
        let mut fields = text.splitn(3, ':');
        let mut number = || {
            fields
                .next()
                .and_then(|f| f.parse().ok())
                .unwrap_or_else(|| panic!("not an HLC: {text:?}"))
        };
        let wall_ms = number();
        let counter = number();
        let node = text.splitn(3, ':').nth(2).expect("node id").to_owned();
        Ts {
            wall_ms,
            counter,
            node,
        }
    }
}

pub const TS_SKEW: &str = "the request timestamp is too far in the future; ensure that the client and broker system clocks are synchronized";
pub const FT_SKEW: &str = "the request fencing token timestamp is too far in the future; ensure that the client and broker system clocks are synchronized";
pub const FT_REQUIRED: &str = "a fencing token is required for this request";
pub const FT_LOWER: &str =
    "the request fencing token is a lower version than the fencing token protecting the resource";
