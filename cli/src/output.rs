//! What the tool prints: raw bytes, human lines and JSON lines, on stdout.

use std::io::{IsTerminal, Write};

use base64::Engine;
use bytes::Bytes;
use serde_json::{Map, Value as Json};
use statestore::Hlc;

use crate::exit::Failure;

/// A JSON object under construction.
pub type Object = Map<String, Json>;

/// Text for JSON: UTF-8 as it is, anything else as base64 (`"base64"`).
fn encode(bytes: &[u8]) -> (Json, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Json::from(text), "utf8"),
        Err(_) => (
            Json::from(base64::engine::general_purpose::STANDARD.encode(bytes)),
            "base64",
        ),
    }
}

/// Adds `"value"` and its `"encoding"` (`utf8` or `base64`).
pub fn put_value(object: &mut Object, value: &[u8]) {
    let (text, encoding) = encode(value);
    object.insert("value".into(), text);
    object.insert("encoding".into(), encoding.into());
}

/// Adds `"key"`, and `"key_encoding": "base64"` when the key is not UTF-8.
pub fn put_key(object: &mut Object, key: &[u8]) {
    let (text, encoding) = encode(key);
    object.insert("key".into(), text);
    if encoding != "utf8" {
        object.insert("key_encoding".into(), encoding.into());
    }
}

/// Adds `"version"`: the HLC's text, or null when the service sent none.
pub fn put_version(object: &mut Object, version: Option<&Hlc>) {
    object.insert(
        "version".into(),
        version.map_or(Json::Null, |v| Json::from(v.to_string())),
    );
}

/// Bytes for a human: quoted, with control characters (and invalid UTF-8) escaped.
pub fn quoted(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("\"{}\"", bytes.escape_ascii()),
    }
}

/// Writes one JSON object as a line.
pub fn json_line(object: Object) -> Result<(), Failure> {
    line(&Json::Object(object).to_string())
}

/// Writes `text` and a newline, flushed at once (watchers read line by line).
pub fn line(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(stdout_failed)
}

/// Writes `bytes` exactly. On a terminal, a newline follows a value that lacks one so that
/// the prompt starts on its own line; a pipe or file gets the bytes alone.
pub fn raw(bytes: &Bytes) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    let newline = std::io::stdout().is_terminal() && !bytes.ends_with(b"\n");
    out.write_all(bytes)
        .and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| out.flush())
        .map_err(stdout_failed)
}

fn stdout_failed(error: std::io::Error) -> Failure {
    Failure::other(format!("cannot write to stdout: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_text_and_anything_else_base64() {
        let mut object = Object::new();
        put_value(&mut object, "café".as_bytes());
        assert_eq!(object["value"], "café");
        assert_eq!(object["encoding"], "utf8");
        put_value(&mut object, b"\xff\x00");
        assert_eq!(object["value"], "/wA=");
        assert_eq!(object["encoding"], "base64");
        put_key(&mut object, b"k");
        assert!(!object.contains_key("key_encoding"));
        put_key(&mut object, b"\xfe");
        assert_eq!(object["key_encoding"], "base64");
    }

    #[test]
    fn humans_see_escapes() {
        assert_eq!(quoted(b"a\nb"), r#""a\nb""#);
        assert_eq!(quoted(b"\xff\x00"), r#""\xff\x00""#);
    }
}
