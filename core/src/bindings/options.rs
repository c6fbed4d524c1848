//! Connection settings by name: one table of every setting (its names, `AIO_*` alias, kind,
//! default and doc) that the C setters, the Python keywords and the TypeScript typings follow,
//! and [`ConnectOptions::set_option`] to set one from a host value.

use std::path::PathBuf;
use std::time::Duration;

use crate::client::{Authentication, ConnectOptions, TlsOptions};
use crate::{Error, Result};

/// The type of a connection setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionKind {
    /// Text.
    Str,
    /// A file path.
    Path,
    /// A TCP port (1 to 65535).
    Port,
    /// A boolean.
    Bool,
    /// A duration (hosts pass their own unit: seconds in Python, milliseconds in C and Node).
    Duration,
    /// A whole number.
    Int,
}

impl OptionKind {
    /// Every kind.
    pub const ALL: [OptionKind; 6] = [
        Self::Str,
        Self::Path,
        Self::Port,
        Self::Bool,
        Self::Duration,
        Self::Int,
    ];

    /// The kind's name in every language's copy of the table: `str`, `path`, `port`, `bool`,
    /// `duration` (in the host's unit) or `int`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Str => "str",
            Self::Path => "path",
            Self::Port => "port",
            Self::Bool => "bool",
            Self::Duration => "duration",
            Self::Int => "int",
        }
    }
}

/// One connection setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OptionSpec {
    /// snake_case name (C setters, Python keywords).
    pub name: &'static str,
    /// camelCase name (JavaScript).
    pub js_name: &'static str,
    /// The `AIO_*` environment variable read by [`ConnectOptions::from_env`], if any.
    pub env: Option<&'static str>,
    /// The type.
    pub kind: OptionKind,
    /// The default, as text.
    pub default: &'static str,
    /// One line of documentation.
    pub doc: &'static str,
}

/// A value for [`ConnectOptions::set_option`], as a host has it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OptionValue {
    /// Text: parsed for every kind (`"10s"`, `"250ms"`, `"true"`, `"1883"`).
    Str(String),
    /// A whole number (durations: milliseconds).
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A duration.
    Duration(Duration),
    /// Unset (back to the default; for optional settings, none).
    None,
}

macro_rules! spec {
    ($name:literal, $js:literal, $env:expr, $kind:ident, $default:literal, $doc:literal) => {
        OptionSpec {
            name: $name,
            js_name: $js,
            env: $env,
            kind: OptionKind::$kind,
            default: $default,
            doc: $doc,
        }
    };
}

/// Every connection setting, in the order the docs list them.
pub static CONNECT_OPTIONS: &[OptionSpec] = &[
    spec!(
        "host",
        "host",
        Some("AIO_BROKER_HOSTNAME"),
        Str,
        "localhost",
        "Broker host name or IP address."
    ),
    spec!(
        "port",
        "port",
        Some("AIO_BROKER_TCP_PORT"),
        Port,
        "1883",
        "Broker TCP port."
    ),
    spec!(
        "client_id",
        "clientId",
        Some("AIO_MQTT_CLIENT_ID"),
        Str,
        "",
        "MQTT client id; a random statestore-... id when empty. No '+', '#' or NUL."
    ),
    spec!(
        "keep_alive",
        "keepAlive",
        Some("AIO_MQTT_KEEP_ALIVE"),
        Duration,
        "60s",
        "MQTT keep-alive interval (5 s to 65535 s)."
    ),
    spec!(
        "session_expiry",
        "sessionExpiry",
        Some("AIO_MQTT_SESSION_EXPIRY"),
        Duration,
        "3600s",
        "How long the broker keeps the session after a disconnect (whole seconds)."
    ),
    spec!(
        "clean_start",
        "cleanStart",
        Some("AIO_MQTT_CLEAN_START"),
        Bool,
        "true",
        "Start the first connection with a clean session."
    ),
    spec!(
        "tls",
        "tls",
        Some("AIO_MQTT_USE_TLS"),
        Bool,
        "false",
        "Use TLS (with the system's root certificates unless ca_file is set)."
    ),
    spec!(
        "ca_file",
        "caFile",
        Some("AIO_TLS_CA_FILE"),
        Path,
        "",
        "PEM file of CA certificates that validate the broker (implies tls)."
    ),
    spec!(
        "cert_file",
        "certFile",
        Some("AIO_TLS_CERT_FILE"),
        Path,
        "",
        "PEM client certificate chain, with key_file (implies tls)."
    ),
    spec!(
        "key_file",
        "keyFile",
        Some("AIO_TLS_KEY_FILE"),
        Path,
        "",
        "PEM private key of the client certificate, unencrypted (implies tls)."
    ),
    spec!(
        "key_password_file",
        "keyPasswordFile",
        Some("AIO_TLS_KEY_PASSWORD_FILE"),
        Path,
        "",
        "Password of an encrypted key: not supported, connecting fails with a clear error."
    ),
    spec!(
        "username",
        "username",
        Some("AIO_MQTT_USERNAME"),
        Str,
        "",
        "MQTT user name."
    ),
    spec!(
        "password",
        "password",
        None,
        Str,
        "",
        "MQTT password (with username)."
    ),
    spec!(
        "password_file",
        "passwordFile",
        Some("AIO_MQTT_PASSWORD_FILE"),
        Path,
        "",
        "File holding the MQTT password, read when connecting (with username)."
    ),
    spec!(
        "sat_token_file",
        "satTokenFile",
        Some("AIO_SAT_FILE"),
        Path,
        "",
        "Kubernetes service-account token file (K8S-SAT authentication)."
    ),
    spec!(
        "sat_check_interval",
        "satCheckInterval",
        None,
        Duration,
        "10s",
        "How often the token file is checked for a rotated token."
    ),
    spec!(
        "default_timeout",
        "defaultTimeout",
        None,
        Duration,
        "10s",
        "Timeout of calls that set none, and of connecting."
    ),
    spec!(
        "reconnect_initial_delay",
        "reconnectInitialDelay",
        None,
        Duration,
        "128ms",
        "First delay between reconnection attempts (doubles, with jitter)."
    ),
    spec!(
        "reconnect_max_delay",
        "reconnectMaxDelay",
        None,
        Duration,
        "60s",
        "Largest delay between reconnection attempts."
    ),
    spec!(
        "reconnect_max_attempts",
        "reconnectMaxAttempts",
        None,
        Int,
        "0",
        "Failed reconnection attempts after which the client gives up (state gave_up); 0: never."
    ),
    spec!(
        "reconnect_max_elapsed",
        "reconnectMaxElapsed",
        None,
        Duration,
        "0s",
        "Time after a connection loss after which reconnecting gives up (state gave_up); 0: never."
    ),
    spec!(
        "max_packet_size",
        "maxPacketSize",
        None,
        Int,
        "268435455",
        "Largest MQTT packet the client accepts (at least 1024)."
    ),
    spec!(
        "max_in_flight",
        "maxInFlight",
        None,
        Int,
        "64",
        "Requests of one batch (get_many, set_many, delete_many) in flight at once (1 to 65535)."
    ),
];

impl OptionSpec {
    /// The setting named `name` (snake_case or camelCase).
    pub fn find(name: &str) -> Option<&'static OptionSpec> {
        CONNECT_OPTIONS
            .iter()
            .find(|spec| spec.name == name || spec.js_name == name)
    }

    /// The setting a user most likely meant by the unknown `name`: one spelt in another case,
    /// one misspelt by at most two letters, or the one it is a whole word of
    /// (`timeout`: `default_timeout`).
    pub(crate) fn closest(name: &str) -> Option<&'static OptionSpec> {
        let lowered = name.to_ascii_lowercase();
        let spelt = CONNECT_OPTIONS
            .iter()
            .map(|spec| {
                let distance = if spec.js_name.eq_ignore_ascii_case(name) {
                    0
                } else {
                    strsim::levenshtein(spec.name, &lowered)
                };
                (distance, spec)
            })
            .min_by_key(|(distance, _)| *distance)
            .filter(|(distance, _)| *distance <= 2)
            .map(|(_, spec)| spec);
        spelt.or_else(|| {
            let mut words = CONNECT_OPTIONS
                .iter()
                .filter(|spec| spec.name.split('_').any(|word| word == lowered));
            // Only a word that names one setting says which was meant.
            words.next().filter(|_| words.next().is_none())
        })
    }

    /// What follows the refusal of the unknown setting `name`: the closest setting, or the list.
    pub(crate) fn hint(name: &str) -> String {
        match OptionSpec::closest(name) {
            Some(spec) => format!("did you mean {}?", spec.name),
            None => {
                let names: Vec<&str> = CONNECT_OPTIONS.iter().map(|spec| spec.name).collect();
                format!("the settings are {}", names.join(", "))
            }
        }
    }
}

fn invalid<T>(name: &str, what: impl std::fmt::Display) -> Result<T> {
    Err(Error::InvalidArgument(format!("option {name}: {what}")))
}

/// A value converted to the setting's kind.
enum Typed {
    Text(Option<String>),
    Flag(bool),
    Span(Duration),
    Number(u64),
    Reset,
}

fn typed(spec: &OptionSpec, value: OptionValue) -> Result<Typed> {
    let name = spec.name;
    Ok(match (spec.kind, value) {
        (_, OptionValue::None) => Typed::Reset,
        (OptionKind::Str | OptionKind::Path, OptionValue::Str(text)) => {
            Typed::Text((!text.is_empty()).then_some(text))
        }
        (OptionKind::Bool, OptionValue::Bool(flag)) => Typed::Flag(flag),
        (OptionKind::Bool, OptionValue::Str(text)) => match text.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Typed::Flag(true),
            "false" | "0" | "no" | "off" => Typed::Flag(false),
            _ => return invalid(name, format!("expected true or false, got {text:?}")),
        },
        (OptionKind::Duration, OptionValue::Duration(span)) => Typed::Span(span),
        (OptionKind::Duration, OptionValue::Int(ms)) => match u64::try_from(ms) {
            Ok(ms) => Typed::Span(Duration::from_millis(ms)),
            Err(_) => return invalid(name, format!("a duration cannot be negative, got {ms} ms")),
        },
        (OptionKind::Duration, OptionValue::Str(text)) => match humantime::parse_duration(&text) {
            Ok(span) => Typed::Span(span),
            Err(e) => {
                return invalid(
                    name,
                    format!("expected a duration such as 10s or 250ms, got {text:?} ({e})"),
                )
            }
        },
        (OptionKind::Port | OptionKind::Int, OptionValue::Int(n)) => match u64::try_from(n) {
            Ok(n) => Typed::Number(n),
            Err(_) => return invalid(name, format!("cannot be negative, got {n}")),
        },
        (OptionKind::Port | OptionKind::Int, OptionValue::Str(text)) => match text.trim().parse() {
            Ok(n) => Typed::Number(n),
            Err(_) => return invalid(name, format!("expected a whole number, got {text:?}")),
        },
        (kind, value) => return invalid(name, format!("expected {kind:?}, got {value:?}")),
    })
}

fn tls(options: &mut ConnectOptions) -> &mut TlsOptions {
    options.tls.get_or_insert_with(TlsOptions::default)
}

/// The username of a password authentication (empty if none was set yet).
fn username(auth: &Authentication) -> String {
    match auth {
        Authentication::Password { username, .. }
        | Authentication::PasswordFile { username, .. } => username.clone(),
        _ => String::new(),
    }
}

impl ConnectOptions {
    /// Sets the connection setting `name` (snake_case or camelCase, see [`CONNECT_OPTIONS`])
    /// from a host value. An unknown name or a value of the wrong kind is an
    /// [`Error::InvalidArgument`] naming the setting; the combination is checked when
    /// connecting ([`ConnectOptions::validate`]).
    ///
    /// ```
    /// use statestore::OptionValue;
    /// use statestore::ConnectOptions;
    ///
    /// let mut options = ConnectOptions::new("localhost", 1883);
    /// options.set_option("defaultTimeout", OptionValue::Int(2500))?;
    /// options.set_option("keep_alive", OptionValue::Str("30s".into()))?;
    /// assert_eq!(options.default_timeout.as_millis(), 2500);
    /// assert!(options.set_option("colour", OptionValue::Bool(true)).is_err());
    /// # Ok::<(), statestore::Error>(())
    /// ```
    pub fn set_option(&mut self, name: &str, value: OptionValue) -> Result<()> {
        let Some(spec) = OptionSpec::find(name) else {
            return invalid(
                name,
                format!("unknown setting ({})", OptionSpec::hint(name)),
            );
        };
        let defaults = ConnectOptions::new(self.host.clone(), self.port);
        let value = typed(spec, value)?;
        let text = |value: Typed| match value {
            Typed::Text(text) => text,
            _ => None,
        };
        let span = |value: Typed, default: Duration| match value {
            Typed::Span(span) => span,
            _ => default,
        };
        match spec.name {
            "host" => {
                self.host = match value {
                    Typed::Text(None) => return invalid(name, "the host is empty"),
                    other => text(other).unwrap_or_else(|| "localhost".into()),
                }
            }
            "port" => {
                self.port = match value {
                    Typed::Number(n) => match u16::try_from(n) {
                        Ok(port) if port > 0 => port,
                        _ => return invalid(name, format!("must be 1 to 65535, got {n}")),
                    },
                    _ => 1883,
                }
            }
            "client_id" => self.client_id = text(value),
            "keep_alive" => self.keep_alive = span(value, defaults.keep_alive),
            "session_expiry" => self.session_expiry = span(value, defaults.session_expiry),
            "clean_start" => self.clean_start = !matches!(value, Typed::Flag(false)),
            "tls" => match value {
                Typed::Flag(true) => {
                    tls(self);
                }
                _ => self.tls = None,
            },
            "ca_file" => tls(self).ca_file = text(value).map(PathBuf::from),
            "cert_file" => tls(self).cert_file = text(value).map(PathBuf::from),
            "key_file" => tls(self).key_file = text(value).map(PathBuf::from),
            "key_password_file" => tls(self).key_password_file = text(value).map(PathBuf::from),
            "username" => {
                let username = text(value).unwrap_or_default();
                self.auth = match std::mem::take(&mut self.auth) {
                    Authentication::PasswordFile { password_file, .. } => {
                        Authentication::PasswordFile {
                            username,
                            password_file,
                        }
                    }
                    Authentication::Password { password, .. } => {
                        Authentication::Password { username, password }
                    }
                    _ => Authentication::Password {
                        username,
                        password: String::new(),
                    },
                };
            }
            "password" => {
                let password = match value {
                    Typed::Text(text) => text.unwrap_or_default(),
                    _ => String::new(),
                };
                let username = username(&self.auth);
                self.auth = Authentication::Password { username, password };
            }
            "password_file" => {
                let username = username(&self.auth);
                self.auth = match text(value) {
                    Some(file) => Authentication::PasswordFile {
                        username,
                        password_file: file.into(),
                    },
                    None => Authentication::Password {
                        username,
                        password: String::new(),
                    },
                };
            }
            "sat_token_file" => {
                self.auth = match text(value) {
                    Some(file) => Authentication::ServiceAccountToken {
                        token_file: file.into(),
                        check_interval: crate::client::DEFAULT_TOKEN_CHECK_INTERVAL,
                    },
                    None => Authentication::None,
                };
            }
            "sat_check_interval" => match &mut self.auth {
                Authentication::ServiceAccountToken { check_interval, .. } => {
                    *check_interval = span(value, crate::client::DEFAULT_TOKEN_CHECK_INTERVAL)
                }
                _ => return invalid(name, "set sat_token_file first"),
            },
            "default_timeout" => self.default_timeout = span(value, defaults.default_timeout),
            "reconnect_initial_delay" => {
                self.reconnect.initial_delay = span(value, defaults.reconnect.initial_delay)
            }
            "reconnect_max_delay" => {
                self.reconnect.max_delay = span(value, defaults.reconnect.max_delay)
            }
            "reconnect_max_attempts" => {
                self.reconnect.max_attempts = match value {
                    Typed::Number(n) => match u32::try_from(n) {
                        Ok(attempts) => attempts,
                        Err(_) => return invalid(name, format!("too large: {n}")),
                    },
                    _ => defaults.reconnect.max_attempts,
                }
            }
            "reconnect_max_elapsed" => {
                self.reconnect.max_elapsed = span(value, defaults.reconnect.max_elapsed)
            }
            "max_packet_size" => {
                self.max_packet_size = match value {
                    Typed::Number(n) => match u32::try_from(n) {
                        Ok(size) => size,
                        Err(_) => return invalid(name, format!("too large: {n}")),
                    },
                    _ => defaults.max_packet_size,
                }
            }
            "max_in_flight" => {
                self.max_in_flight = match value {
                    Typed::Number(n) => match usize::try_from(n) {
                        Ok(limit) => limit,
                        Err(_) => return invalid(name, format!("out of range: {n}")),
                    },
                    _ => defaults.max_in_flight,
                }
            }
            other => return invalid(other, "not settable by name"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_setting_names_the_one_meant_or_lists_them() {
        let refusal = |name: &str| {
            let mut options = ConnectOptions::new("h", 1883);
            options
                .set_option(name, OptionValue::Int(3))
                .unwrap_err()
                .to_string()
        };
        assert!(refusal("timeout")
            .contains("option timeout: unknown setting (did you mean default_timeout?)"));
        assert!(refusal("keepalive").contains("did you mean keep_alive?"));
        assert!(refusal("KeepAlive").contains("did you mean keep_alive?"));
        // `delay` is a word of two settings: neither is guessed.
        let listed = refusal("delay");
        assert!(
            listed.contains("the settings are host, port, client_id"),
            "{listed}"
        );
        assert!(refusal("colour").contains("the settings are host, port"));
    }

    #[test]
    fn every_setting_in_the_table_can_be_set_by_both_names() {
        for spec in CONNECT_OPTIONS {
            let sample = match spec.kind {
                OptionKind::Str | OptionKind::Path => OptionValue::Str("x".into()),
                OptionKind::Port => OptionValue::Int(8883),
                OptionKind::Bool => OptionValue::Bool(true),
                OptionKind::Duration => OptionValue::Str("30s".into()),
                OptionKind::Int => OptionValue::Int(4096),
            };
            for name in [spec.name, spec.js_name] {
                let mut options = ConnectOptions::new("h", 1);
                if spec.name == "sat_check_interval" {
                    options
                        .set_option("sat_token_file", OptionValue::Str("t".into()))
                        .unwrap();
                }
                options
                    .set_option(name, sample.clone())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }

    #[test]
    fn values_land_in_the_right_fields() {
        let mut o = ConnectOptions::new("h", 1);
        o.set_option("port", OptionValue::Str("8883".into()))
            .unwrap();
        o.set_option("username", OptionValue::Str("ann".into()))
            .unwrap();
        o.set_option("passwordFile", OptionValue::Str("/p".into()))
            .unwrap();
        o.set_option("ca_file", OptionValue::Str("/ca.pem".into()))
            .unwrap();
        o.set_option(
            "reconnect_max_delay",
            OptionValue::Duration(Duration::from_secs(5)),
        )
        .unwrap();
        o.set_option("clean_start", OptionValue::Str("false".into()))
            .unwrap();
        o.set_option("reconnectMaxAttempts", OptionValue::Int(3))
            .unwrap();
        o.set_option("reconnect_max_elapsed", OptionValue::Str("2m".into()))
            .unwrap();
        assert_eq!(o.reconnect.max_attempts, 3);
        assert_eq!(o.reconnect.max_elapsed, Duration::from_secs(120));
        assert_eq!(o.port, 8883);
        assert_eq!(
            o.auth,
            Authentication::PasswordFile {
                username: "ann".into(),
                password_file: "/p".into()
            }
        );
        assert_eq!(
            o.tls.as_ref().and_then(|t| t.ca_file.clone()),
            Some("/ca.pem".into())
        );
        assert_eq!(o.reconnect.max_delay, Duration::from_secs(5));
        assert!(!o.clean_start);
        o.set_option("port", OptionValue::None).unwrap();
        assert_eq!(o.port, 1883);
    }

    #[test]
    fn max_in_flight_is_set_by_name_and_checked_by_validate() {
        let mut o = ConnectOptions::new("h", 1);
        o.set_option("maxInFlight", OptionValue::Str("8".into()))
            .unwrap();
        assert_eq!(o.max_in_flight, 8);
        o.set_option("max_in_flight", OptionValue::Int(0)).unwrap();
        let err = o.validate().unwrap_err();
        assert!(err.to_string().contains("max_in_flight"), "{err}");
        o.set_option("max_in_flight", OptionValue::None).unwrap();
        assert_eq!(o.max_in_flight, crate::client::DEFAULT_MAX_IN_FLIGHT);
    }

    #[test]
    fn bad_values_name_the_setting() {
        let mut o = ConnectOptions::new("h", 1);
        for (name, value) in [
            ("port", OptionValue::Int(70000)),
            ("port", OptionValue::Bool(true)),
            ("keep_alive", OptionValue::Str("soon".into())),
            ("default_timeout", OptionValue::Int(-1)),
            ("clean_start", OptionValue::Str("maybe".into())),
            ("host", OptionValue::Str(String::new())),
            ("reconnect_max_attempts", OptionValue::Int(-1)),
            ("reconnect_max_attempts", OptionValue::Int(1 << 40)),
            ("nonsense", OptionValue::Int(1)),
        ] {
            match o.set_option(name, value) {
                Err(Error::InvalidArgument(text)) => assert!(text.contains(name), "{text}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
