//! Values of the scenario format: byte strings in their JSON forms, result fields, variables,
//! the per-scenario key prefix, argument resolution and expectation matching.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value};
use statestore::Hlc;

/// A result field or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Val {
    /// Absent / none.
    Null,
    /// A boolean.
    Bool(bool),
    /// Bytes; text fields (versions, kinds, outcomes) are their UTF-8 bytes.
    Bytes(Bytes),
    /// A list (`keys`: byte strings; batch results: one value per key).
    List(Vec<Val>),
}

impl Val {
    /// Text as a value.
    pub fn text(text: impl Into<String>) -> Val {
        Val::Bytes(Bytes::from(text.into()))
    }

    /// An optional version or token as its HLC text, or `Null`.
    pub fn hlc(version: Option<&Hlc>) -> Val {
        version.map_or(Val::Null, |v| Val::text(v.to_string()))
    }

    /// Optional bytes, or `Null`.
    pub fn opt_bytes(bytes: Option<Bytes>) -> Val {
        bytes.map_or(Val::Null, Val::Bytes)
    }
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Null => f.write_str("null"),
            Val::Bool(b) => write!(f, "{b}"),
            Val::Bytes(b) => f.write_str(&show_bytes(b)),
            Val::List(list) => {
                // A batch's list may hold thousands: the first differences are enough.
                let items: Vec<_> = list.iter().take(20).map(Val::to_string).collect();
                let more = if list.len() > 20 { ", ..." } else { "" };
                write!(f, "[{}{more}] ({} items)", items.join(", "), list.len())
            }
        }
    }
}

/// Bytes for a report: quoted text when printable and short, else a length and hex prefix.
pub fn show_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if bytes.len() <= 200 && !text.chars().any(char::is_control) => {
            format!("{text:?}")
        }
        _ if bytes.len() <= 64 => format!("hex {}", hex::encode(bytes)),
        _ => format!(
            "{} bytes (hex {}...)",
            bytes.len(),
            hex::encode(&bytes[..32])
        ),
    }
}

/// The result of a successful step: every field the catalogue lists for its op.
pub type Fields = BTreeMap<String, Val>;

/// Builds [`Fields`] from `(name, value)` pairs.
pub fn fields<const N: usize>(pairs: [(&str, Val); N]) -> Fields {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The state of one scenario run shared by both flavours: the key prefix and the variables.
#[derive(Debug)]
pub struct Ctx {
    /// Prepended to every key-like argument (`scn-RUN/name/`).
    pub prefix: Bytes,
    /// The scenario's variables.
    pub vars: HashMap<String, Val>,
}

impl Ctx {
    /// A context for the scenario `name` in the run `run`.
    pub fn new(run: &str, name: &str) -> Ctx {
        Ctx {
            prefix: Bytes::from(format!("scn-{run}/{name}/")),
            vars: HashMap::new(),
        }
    }

    /// A key with the scenario's prefix (an empty key stays empty).
    pub fn prefixed(&self, key: Bytes) -> Bytes {
        if key.is_empty() {
            return key;
        }
        let mut prefixed = Vec::with_capacity(self.prefix.len() + key.len());
        prefixed.extend_from_slice(&self.prefix);
        prefixed.extend_from_slice(&key);
        Bytes::from(prefixed)
    }

    /// Removes the prefix from a key of a result.
    pub fn strip(&self, key: &Bytes) -> Result<Bytes, String> {
        if key.starts_with(&self.prefix) {
            Ok(key.slice(self.prefix.len()..))
        } else {
            Err(format!(
                "the key {} in the result lacks the scenario's prefix",
                show_bytes(key)
            ))
        }
    }

    fn var(&self, name: &Value) -> Result<&Val, String> {
        let name = name.as_str().ok_or("\"var\" must name a variable")?;
        self.vars
            .get(name)
            .ok_or_else(|| format!("the variable {name:?} is not set"))
    }

    /// Decodes a byte string form: text, `{"hex"}`, `{"base64"}`, `{"repeat", "times"}` or
    /// `{"var"}` of a byte or text variable.
    pub fn bytes(&self, json: &Value) -> Result<Bytes, String> {
        match json {
            Value::String(text) => Ok(Bytes::from(text.clone())),
            Value::Object(object) => {
                let form = ["hex", "base64", "repeat", "var"]
                    .into_iter()
                    .find(|form| object.contains_key(*form))
                    .ok_or_else(|| format!("not a byte string form: {json}"))?;
                let fields = if form == "repeat" { 2 } else { 1 };
                if object.len() != fields {
                    return Err(format!("unexpected fields in the byte string form {json}"));
                }
                let text = |field: &str| {
                    object[field]
                        .as_str()
                        .ok_or_else(|| format!("{field:?} must be text"))
                };
                match form {
                    "hex" => hex::decode(text("hex")?)
                        .map(Bytes::from)
                        .map_err(|e| format!("bad hex in {json}: {e}")),
                    "base64" => base64::engine::general_purpose::STANDARD
                        .decode(text("base64")?)
                        .map(Bytes::from)
                        .map_err(|e| format!("bad base64 in {json}: {e}")),
                    "repeat" => {
                        let times = object
                            .get("times")
                            .and_then(Value::as_u64)
                            .and_then(|t| usize::try_from(t).ok())
                            .ok_or("{\"repeat\": TEXT, \"times\": N} needs a count")?;
                        Ok(Bytes::from(text("repeat")?.repeat(times)))
                    }
                    _ => match self.var(&object["var"])? {
                        Val::Bytes(bytes) => Ok(bytes.clone()),
                        other => Err(format!("the variable holds {other}, not bytes")),
                    },
                }
            }
            other => Err(format!("not a byte string form: {other}")),
        }
    }
}

/// The list forms: `[e1, e2, ...]`, `{"numbered": PREFIX, "count": N}` (the texts PREFIX0 to
/// PREFIX(N-1)) and `{"each": E, "count": N}` (N times E), as JSON elements.
pub fn list_items(json: &Value) -> Result<Vec<Value>, String> {
    let object = match json {
        Value::Array(items) => return Ok(items.clone()),
        Value::Object(object) if object.len() == 2 => object,
        other => return Err(format!("not a list form: {other}")),
    };
    let count = object
        .get("count")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("{json}: a list form needs a whole \"count\""))?;
    match (object.get("numbered"), object.get("each")) {
        (Some(Value::String(prefix)), None) => Ok((0..count)
            .map(|i| Value::String(format!("{prefix}{i}")))
            .collect()),
        (None, Some(each)) => Ok((0..count).map(|_| each.clone()).collect()),
        _ => Err(format!("not a list form: {json}")),
    }
}

/// The arguments of one step, resolved against the scenario's context.
pub struct Args<'a> {
    /// The step's arguments.
    pub map: &'a Map<String, Value>,
    /// The scenario's context.
    pub ctx: &'a Ctx,
}

impl Args<'_> {
    fn get(&self, name: &str) -> Result<&Value, String> {
        self.map
            .get(name)
            .ok_or_else(|| format!("missing argument {name:?}"))
    }

    /// A handle name (`client`, `stream`, `guard`, `lease`, `election`) or other plain text.
    pub fn text(&self, name: &str) -> Result<String, String> {
        self.get(name)?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{name:?} must be text"))
    }

    /// Optional plain text.
    pub fn opt_text(&self, name: &str) -> Result<Option<String>, String> {
        self.map.get(name).map(|_| self.text(name)).transpose()
    }

    /// A byte string.
    pub fn bytes(&self, name: &str) -> Result<Bytes, String> {
        self.ctx
            .bytes(self.get(name)?)
            .map_err(|e| format!("{name:?}: {e}"))
    }

    /// An optional byte string.
    pub fn opt_bytes(&self, name: &str) -> Result<Option<Bytes>, String> {
        self.map.get(name).map(|_| self.bytes(name)).transpose()
    }

    /// A key-like argument, with the scenario's prefix (an empty key stays empty).
    pub fn key(&self, name: &str) -> Result<Bytes, String> {
        Ok(self.ctx.prefixed(self.bytes(name)?))
    }

    /// A list of key-like arguments (a list form), each with the scenario's prefix.
    pub fn keys(&self, name: &str) -> Result<Vec<Bytes>, String> {
        list_items(self.get(name)?)?
            .iter()
            .map(|item| self.ctx.bytes(item).map(|key| self.ctx.prefixed(key)))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{name:?}: {e}"))
    }

    /// The `(key, value)` pairs of `set_many`: a list of `[key, value]`, or
    /// `{"numbered": PREFIX, "count": N}` for the pairs (PREFIXi, PREFIXi).
    pub fn items(&self, name: &str) -> Result<Vec<(Bytes, Bytes)>, String> {
        list_items(self.get(name)?)?
            .iter()
            .map(|item| {
                let (key, value) = match item {
                    Value::Array(pair) if pair.len() == 2 => (&pair[0], &pair[1]),
                    text @ Value::String(_) => (text, text),
                    other => return Err(format!("not a [key, value] pair: {other}")),
                };
                Ok((
                    self.ctx.prefixed(self.ctx.bytes(key)?),
                    self.ctx.bytes(value)?,
                ))
            })
            .collect::<Result<_, String>>()
            .map_err(|e| format!("{name:?}: {e}"))
    }

    /// A duration in milliseconds (`*_ms`).
    pub fn ms(&self, name: &str) -> Result<Duration, String> {
        self.get(name)?
            .as_u64()
            .map(Duration::from_millis)
            .ok_or_else(|| format!("{name:?} must be a whole number of milliseconds"))
    }

    /// An optional duration in milliseconds.
    pub fn opt_ms(&self, name: &str) -> Result<Option<Duration>, String> {
        self.map.get(name).map(|_| self.ms(name)).transpose()
    }

    /// An optional boolean.
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, String> {
        self.map
            .get(name)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| format!("{name:?} must be true or false"))
            })
            .transpose()
    }

    /// An optional version or fencing token (HLC text, literal or `{"var"}`).
    pub fn opt_hlc(&self, name: &str) -> Result<Option<Hlc>, String> {
        let Some(value) = self.opt_bytes(name)? else {
            return Ok(None);
        };
        parse_hlc(&value).map(Some)
    }
}

/// Parses the text form of a version.
pub fn parse_hlc(bytes: &[u8]) -> Result<Hlc, String> {
    std::str::from_utf8(bytes)
        .map_err(|_| "a version must be UTF-8 text".to_owned())?
        .parse()
        .map_err(|e| format!("{e}"))
}

/// Checks one result field against its expected form.
pub fn matches(ctx: &Ctx, expected: &Value, actual: &Val) -> Result<(), String> {
    let fail = |what: String| Err(format!("expected {what}, got {actual}"));
    match expected {
        Value::Null => match actual {
            Val::Null => Ok(()),
            _ => fail("null".into()),
        },
        Value::Bool(b) => match actual {
            Val::Bool(a) if a == b => Ok(()),
            _ => fail(b.to_string()),
        },
        Value::Array(_) => list_matches(ctx, expected, actual),
        Value::Object(object) if object.contains_key("numbered") || object.contains_key("each") => {
            list_matches(ctx, expected, actual)
        }
        Value::Object(object) if object.contains_key("present") => {
            let present = object
                .get("present")
                .and_then(Value::as_bool)
                .filter(|_| object.len() == 1)
                .ok_or("{\"present\": BOOL} has no other fields")?;
            match (present, actual) {
                (true, Val::Null) => fail("a value".into()),
                (false, Val::Null) | (true, _) => Ok(()),
                (false, _) => fail("null".into()),
            }
        }
        Value::Object(object) if object.contains_key("newer_than") => {
            let name = object
                .get("newer_than")
                .filter(|_| object.len() == 1)
                .ok_or("{\"newer_than\": VAR} has no other fields")?;
            let base = match ctx.var(name)? {
                Val::Bytes(b) => parse_hlc(b)?,
                other => return Err(format!("{name} holds {other}, not a version")),
            };
            let newer = match actual {
                Val::Bytes(b) => parse_hlc(b)? > base,
                _ => false,
            };
            if newer {
                Ok(())
            } else {
                fail(format!("a version newer than {base}"))
            }
        }
        Value::Object(object) if object.contains_key("var") && object.len() == 1 => {
            let want = ctx.var(&object["var"])?;
            if want == actual {
                Ok(())
            } else {
                fail(format!("{want} (variable {})", object["var"]))
            }
        }
        _ => {
            let want = ctx.bytes(expected)?;
            match actual {
                Val::Bytes(b) if *b == want => Ok(()),
                _ => fail(show_bytes(&want)),
            }
        }
    }
}

/// Checks a list result against a list form, element by element.
fn list_matches(ctx: &Ctx, expected: &Value, actual: &Val) -> Result<(), String> {
    let want = list_items(expected)?;
    let Val::List(list) = actual else {
        return Err(format!(
            "expected a list of {} items, got {actual}",
            want.len()
        ));
    };
    if list.len() != want.len() {
        return Err(format!(
            "expected a list of {} items, got {actual}",
            want.len()
        ));
    }
    for (index, (want, got)) in want.iter().zip(list).enumerate() {
        matches(ctx, want, got).map_err(|e| format!("item {index}: {e}"))?;
    }
    Ok(())
}
