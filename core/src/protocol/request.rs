//! Requests: `SET`, `GET`, `DEL`, `VDEL`, `KEYNOTIFY` and `SCAN`, encoded by the client and
//! decoded by the server.

use bytes::{Bytes, BytesMut};
use thiserror::Error;

use super::resp::{self, DecodeError};
use super::ServiceError;

/// When a SET applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SetCondition {
    /// Always (no option on the wire).
    #[default]
    Always,
    /// Only if the key does not exist (`NX`).
    OnlyIfAbsent,
    /// Only if the key does not exist or already holds the SET's value (`NEX`): how a lock
    /// holder renews its lock.
    OnlyIfAbsentOrEqual,
}

impl SetCondition {
    /// Every condition with the names hosts accept for it, its canonical name first (the one
    /// bindings and tools print): the one table that every language's names come from.
    pub const NAMES: &'static [(SetCondition, &'static [&'static str])] = &[
        (SetCondition::Always, &["always"]),
        (SetCondition::OnlyIfAbsent, &["nx", "only_if_absent"]),
        (
            SetCondition::OnlyIfAbsentOrEqual,
            &["nex", "only_if_absent_or_equal"],
        ),
    ];

    /// The condition called `name` (any of its [`NAMES`](Self::NAMES), in any ASCII case).
    ///
    /// ```
    /// use statestore::SetCondition;
    /// assert_eq!(SetCondition::from_name("NX"), Some(SetCondition::OnlyIfAbsent));
    /// assert_eq!(SetCondition::from_name("only_if_absent_or_equal"), Some(SetCondition::OnlyIfAbsentOrEqual));
    /// assert_eq!(SetCondition::from_name("sometimes"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<SetCondition> {
        Self::NAMES
            .iter()
            .find(|(_, names)| names.iter().any(|n| n.eq_ignore_ascii_case(name)))
            .map(|(condition, _)| *condition)
    }

    /// The canonical name: `always`, `nx` or `nex`.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(condition, _)| *condition == self)
            .map_or("always", |(_, names)| names[0])
    }
}

/// The payload options of a SET (`NX`/`NEX`, `PX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SetFlags {
    /// When the SET applies.
    pub condition: SetCondition,
    /// Time to live in milliseconds (`PX`); at least 1 when present.
    pub expiry_ms: Option<u64>,
}

/// One state store request, as carried in a PUBLISH payload.
///
/// Keys and values are arbitrary bytes. Decoded requests hold slices of the payload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Request {
    /// `SET key value [NX|NEX] [PX ms]`
    Set {
        /// The key (non-empty).
        key: Bytes,
        /// The value (may be empty).
        value: Bytes,
        /// Condition and expiry.
        flags: SetFlags,
    },
    /// `GET key`
    Get {
        /// The key.
        key: Bytes,
    },
    /// `DEL key`
    Del {
        /// The key.
        key: Bytes,
    },
    /// `VDEL key value`: delete only if the key holds `value`.
    VDel {
        /// The key.
        key: Bytes,
        /// The value the key must hold.
        value: Bytes,
    },
    /// `KEYNOTIFY key` or `KEYNOTIFY key STOP`.
    KeyNotify {
        /// The key to observe.
        key: Bytes,
        /// Stop observing instead of starting.
        stop: bool,
    },
    /// `SCAN pattern [token]`: one page of the keys matching a glob pattern.
    Scan {
        /// Glob pattern.
        pattern: Bytes,
        /// Continuation token from the previous page.
        token: Option<Bytes>,
    },
}

/// Why a request payload could not be accepted; [`RequestError::service_error`] is what the
/// service answers.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestError {
    /// The payload is not a RESP array of bulk strings.
    #[error(transparent)]
    Malformed(#[from] DecodeError),
    /// The verb is unknown.
    #[error("unknown command {0:?}")]
    UnknownCommand(String),
    /// The verb got the wrong number of arguments.
    #[error("wrong number of arguments for {0}")]
    WrongNumberOfArguments(&'static str),
    /// The key is empty.
    #[error("the key length is zero")]
    KeyLengthZero,
    /// An option is unknown, repeated, conflicting or has a bad argument.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
}

impl RequestError {
    /// The `-ERR` the service answers to this request.
    pub fn service_error(&self) -> ServiceError {
        match self {
            Self::Malformed(_) | Self::InvalidOption(_) => ServiceError::SyntaxError,
            Self::UnknownCommand(_) => ServiceError::UnknownCommand,
            Self::WrongNumberOfArguments(_) => ServiceError::WrongNumberOfArguments,
            Self::KeyLengthZero => ServiceError::KeyLengthZero,
        }
    }
}

impl Request {
    /// The verb, upper case, as sent on the wire.
    pub fn verb(&self) -> &'static str {
        match self {
            Self::Set { .. } => "SET",
            Self::Get { .. } => "GET",
            Self::Del { .. } => "DEL",
            Self::VDel { .. } => "VDEL",
            Self::KeyNotify { .. } => "KEYNOTIFY",
            Self::Scan { .. } => "SCAN",
        }
    }

    /// The key the request is about (the pattern for SCAN).
    pub fn key(&self) -> &Bytes {
        match self {
            Self::Set { key, .. }
            | Self::Get { key }
            | Self::Del { key }
            | Self::VDel { key, .. }
            | Self::KeyNotify { key, .. } => key,
            Self::Scan { pattern, .. } => pattern,
        }
    }

    /// The wire arguments, verb first, with the PX digits formatted into `digits`.
    fn with_args<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        let mut digits = itoa::Buffer::new();
        match self {
            Self::Set { key, value, flags } => {
                let mut args: [&[u8]; 6] = [b"SET", key, value, b"", b"", b""];
                let mut n = 3;
                match flags.condition {
                    SetCondition::Always => {}
                    SetCondition::OnlyIfAbsent => {
                        args[n] = b"NX";
                        n += 1;
                    }
                    SetCondition::OnlyIfAbsentOrEqual => {
                        args[n] = b"NEX";
                        n += 1;
                    }
                }
                if let Some(ms) = flags.expiry_ms {
                    args[n] = b"PX";
                    args[n + 1] = digits.format(ms).as_bytes();
                    n += 2;
                }
                f(&args[..n])
            }
            Self::Get { key } => f(&[b"GET", key]),
            Self::Del { key } => f(&[b"DEL", key]),
            Self::VDel { key, value } => f(&[b"VDEL", key, value]),
            Self::KeyNotify { key, stop: false } => f(&[b"KEYNOTIFY", key]),
            Self::KeyNotify { key, stop: true } => f(&[b"KEYNOTIFY", key, b"STOP"]),
            Self::Scan {
                pattern,
                token: None,
            } => f(&[b"SCAN", pattern]),
            Self::Scan {
                pattern,
                token: Some(token),
            } => f(&[b"SCAN", pattern, token]),
        }
    }

    /// The size of [`Request::encode`]'s output, computed without encoding.
    pub fn encoded_len(&self) -> usize {
        self.with_args(|args| {
            resp::header_len(args.len() as i64)
                + args.iter().map(|a| resp::bulk_len(a.len())).sum::<usize>()
        })
    }

    /// Encodes the request as a payload (verbs and options upper case).
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.encoded_len());
        self.with_args(|args| {
            resp::write_header(&mut out, b'*', args.len() as i64);
            for arg in args {
                resp::write_bulk(&mut out, arg);
            }
        });
        out.freeze()
    }

    /// Decodes a request payload. Verbs and options are accepted in any case.
    pub fn decode(payload: &Bytes) -> Result<Self, RequestError> {
        let args = resp::decode_bulk_array(payload)?;
        let Some((verb, args)) = args.split_first() else {
            return Err(RequestError::InvalidOption("empty request"));
        };
        let Some(verb) = VERBS
            .iter()
            .find(|v| verb.eq_ignore_ascii_case(v.as_bytes()))
        else {
            return Err(RequestError::UnknownCommand(
                String::from_utf8_lossy(verb).into_owned(),
            ));
        };
        let request = match (*verb, args) {
            ("SET", [key, value, options @ ..]) => Self::Set {
                key: key.clone(),
                value: value.clone(),
                flags: decode_set_flags(options)?,
            },
            ("GET", [key]) => Self::Get { key: key.clone() },
            ("DEL", [key]) => Self::Del { key: key.clone() },
            ("VDEL", [key, value]) => Self::VDel {
                key: key.clone(),
                value: value.clone(),
            },
            ("KEYNOTIFY", [key]) => Self::KeyNotify {
                key: key.clone(),
                stop: false,
            },
            ("KEYNOTIFY", [key, stop]) if stop.eq_ignore_ascii_case(b"STOP") => Self::KeyNotify {
                key: key.clone(),
                stop: true,
            },
            ("KEYNOTIFY", [_, _]) => {
                return Err(RequestError::InvalidOption("KEYNOTIFY takes only STOP"))
            }
            // An empty pattern is legal on the wire: it matches no key.
            ("SCAN", [pattern]) => {
                return Ok(Self::Scan {
                    pattern: pattern.clone(),
                    token: None,
                })
            }
            ("SCAN", [pattern, token]) => {
                return Ok(Self::Scan {
                    pattern: pattern.clone(),
                    token: Some(token.clone()),
                })
            }
            (verb, _) => return Err(RequestError::WrongNumberOfArguments(verb)),
        };
        if request.key().is_empty() {
            return Err(RequestError::KeyLengthZero);
        }
        Ok(request)
    }
}

const VERBS: [&str; 6] = ["SET", "GET", "DEL", "VDEL", "KEYNOTIFY", "SCAN"];

fn decode_set_flags(mut options: &[Bytes]) -> Result<SetFlags, RequestError> {
    let mut decoded = SetFlags::default();
    let mut condition_seen = false;
    while let Some((option, rest)) = options.split_first() {
        options = rest;
        let condition = if option.eq_ignore_ascii_case(b"NX") {
            SetCondition::OnlyIfAbsent
        } else if option.eq_ignore_ascii_case(b"NEX") {
            SetCondition::OnlyIfAbsentOrEqual
        } else if option.eq_ignore_ascii_case(b"PX") {
            let Some((ms, rest)) = options.split_first() else {
                return Err(RequestError::InvalidOption("PX needs milliseconds"));
            };
            options = rest;
            if decoded.expiry_ms.is_some() {
                return Err(RequestError::InvalidOption("PX given twice"));
            }
            let ms = resp::parse_integer(ms)
                .map_err(|_| RequestError::InvalidOption("PX is not an integer"))?;
            if ms <= 0 {
                return Err(RequestError::InvalidOption("PX must be positive"));
            }
            decoded.expiry_ms = Some(ms as u64);
            continue;
        } else {
            return Err(RequestError::InvalidOption("unknown SET option"));
        };
        if condition_seen {
            return Err(RequestError::InvalidOption(
                "NX and NEX given together or twice",
            ));
        }
        condition_seen = true;
        decoded.condition = condition;
    }
    Ok(decoded)
}
