//! [`ConnectOptions`] from the `AIO_*` environment variables that Azure IoT Operations injects
//! into a pod, with the defaults of the Microsoft SDKs.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::options::{Authentication, ConnectOptions, TlsOptions, DEFAULT_TOKEN_CHECK_INTERVAL};
use crate::{Error, Result};

impl ConnectOptions {
    /// Settings from the process environment:
    ///
    /// | variable | meaning | default |
    /// |---|---|---|
    /// | `AIO_BROKER_HOSTNAME` | broker host (required) | |
    /// | `AIO_BROKER_TCP_PORT` | port | 8883 |
    /// | `AIO_MQTT_USE_TLS` | `true`/`false` | `true` |
    /// | `AIO_TLS_CA_FILE` | CA certificates (PEM) | system roots |
    /// | `AIO_TLS_CERT_FILE`, `AIO_TLS_KEY_FILE` | client certificate and key | |
    /// | `AIO_TLS_KEY_PASSWORD_FILE` | key password (encrypted keys are not supported) | |
    /// | `AIO_SAT_FILE` | service-account token file (`K8S-SAT`) | |
    /// | `AIO_MQTT_USERNAME`, `AIO_MQTT_PASSWORD_FILE` | username and password file | |
    /// | `AIO_MQTT_CLIENT_ID` | client id | generated |
    /// | `AIO_MQTT_KEEP_ALIVE` | keep-alive, seconds | 60 |
    /// | `AIO_MQTT_SESSION_EXPIRY` | session expiry, seconds | 3600 |
    /// | `AIO_MQTT_CLEAN_START` | `true`/`false` | `false` |
    ///
    /// A malformed value is an [`Error::InvalidArgument`] naming the variable.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`ConnectOptions::from_env`] with `host`, when given, standing in for
    /// `AIO_BROKER_HOSTNAME`: for callers whose own settings override the environment's
    /// (every language's `from_env` with options), so that a host among them need not be in
    /// the environment too.
    pub fn from_env_or_host(host: Option<&str>) -> Result<Self> {
        Self::from_lookup(|name| match (name, host) {
            ("AIO_BROKER_HOSTNAME", Some(host)) => Some(host.to_owned()),
            _ => std::env::var(name).ok(),
        })
    }

    /// Like [`ConnectOptions::from_env`], reading each variable through `lookup` (an empty value
    /// counts as unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let host = get("AIO_BROKER_HOSTNAME").ok_or_else(|| {
            Error::InvalidArgument(
                "AIO_BROKER_HOSTNAME is not set: it names the MQTT broker; set it, or give the \
                 host"
                    .into(),
            )
        })?;
        let use_tls = parse(&get, "AIO_MQTT_USE_TLS", parse_bool)?.unwrap_or(true);
        let port = parse(&get, "AIO_BROKER_TCP_PORT", u16::from_str)?.unwrap_or(8883);
        let mut options = ConnectOptions::new(host, port);
        options.client_id = get("AIO_MQTT_CLIENT_ID");
        if let Some(secs) = parse(&get, "AIO_MQTT_KEEP_ALIVE", u16::from_str)? {
            options.keep_alive = Duration::from_secs(secs.into());
        }
        if let Some(secs) = parse(&get, "AIO_MQTT_SESSION_EXPIRY", u32::from_str)? {
            options.session_expiry = Duration::from_secs(secs.into());
        }
        options.clean_start = parse(&get, "AIO_MQTT_CLEAN_START", parse_bool)?.unwrap_or(false);
        let path = |name: &str| get(name).map(PathBuf::from);
        if use_tls {
            options.tls = Some(TlsOptions {
                ca_file: path("AIO_TLS_CA_FILE"),
                cert_file: path("AIO_TLS_CERT_FILE"),
                key_file: path("AIO_TLS_KEY_FILE"),
                key_password_file: path("AIO_TLS_KEY_PASSWORD_FILE"),
            });
        }
        let username = get("AIO_MQTT_USERNAME");
        options.auth = match (
            path("AIO_SAT_FILE"),
            username,
            path("AIO_MQTT_PASSWORD_FILE"),
        ) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(Error::InvalidArgument(
                    "AIO_SAT_FILE and AIO_MQTT_USERNAME/AIO_MQTT_PASSWORD_FILE are exclusive: \
                     choose one authentication method"
                        .into(),
                ))
            }
            (Some(token_file), None, None) => Authentication::ServiceAccountToken {
                token_file,
                check_interval: DEFAULT_TOKEN_CHECK_INTERVAL,
            },
            (None, Some(username), Some(password_file)) => Authentication::PasswordFile {
                username,
                password_file,
            },
            (None, Some(username), None) => Authentication::Password {
                username,
                password: String::new(),
            },
            (None, None, Some(_)) => {
                return Err(Error::InvalidArgument(
                    "AIO_MQTT_PASSWORD_FILE is set without AIO_MQTT_USERNAME".into(),
                ))
            }
            (None, None, None) => Authentication::None,
        };
        options.validate()?;
        Ok(options)
    }
}

fn parse<T, E: std::fmt::Display>(
    get: &impl Fn(&str) -> Option<String>,
    name: &str,
    parse: impl Fn(&str) -> std::result::Result<T, E>,
) -> Result<Option<T>> {
    get(name)
        .map(|value| {
            parse(value.trim())
                .map_err(|e| Error::InvalidArgument(format!("{name}={value:?}: {e}")))
        })
        .transpose()
}

fn parse_bool(text: &str) -> std::result::Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<ConnectOptions> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConnectOptions::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn minimal_environment_uses_the_sdk_defaults() {
        let options = from(&[("AIO_BROKER_HOSTNAME", "aio-broker")]).unwrap();
        assert_eq!(options.host, "aio-broker");
        assert_eq!(options.port, 8883);
        assert_eq!(options.tls, Some(TlsOptions::default()));
        assert!(!options.clean_start);
        assert_eq!(options.keep_alive, Duration::from_secs(60));
        assert_eq!(options.session_expiry, Duration::from_secs(3600));
        assert_eq!(options.auth, Authentication::None);
        assert_eq!(options.client_id, None);
    }

    #[test]
    fn every_variable_is_read() {
        let options = from(&[
            ("AIO_BROKER_HOSTNAME", "h"),
            ("AIO_BROKER_TCP_PORT", "18883"),
            ("AIO_MQTT_USE_TLS", "true"),
            ("AIO_TLS_CA_FILE", "/ca.pem"),
            ("AIO_TLS_CERT_FILE", "/c.pem"),
            ("AIO_TLS_KEY_FILE", "/k.pem"),
            ("AIO_TLS_KEY_PASSWORD_FILE", "/kp"),
            ("AIO_SAT_FILE", "/var/run/secrets/tokens/mq-sat"),
            ("AIO_MQTT_CLIENT_ID", "app-1"),
            ("AIO_MQTT_KEEP_ALIVE", "30"),
            ("AIO_MQTT_SESSION_EXPIRY", "0"),
            ("AIO_MQTT_CLEAN_START", "TRUE"),
        ])
        .unwrap();
        assert_eq!(options.port, 18883);
        assert_eq!(
            options.tls,
            Some(TlsOptions {
                ca_file: Some("/ca.pem".into()),
                cert_file: Some("/c.pem".into()),
                key_file: Some("/k.pem".into()),
                key_password_file: Some("/kp".into()),
            })
        );
        assert_eq!(
            options.auth,
            Authentication::ServiceAccountToken {
                token_file: "/var/run/secrets/tokens/mq-sat".into(),
                check_interval: DEFAULT_TOKEN_CHECK_INTERVAL,
            }
        );
        assert_eq!(options.client_id.as_deref(), Some("app-1"));
        assert_eq!(options.keep_alive, Duration::from_secs(30));
        assert_eq!(options.session_expiry, Duration::ZERO);
        assert!(options.clean_start);
    }

    #[test]
    fn plain_tcp_with_username_and_password_file() {
        let options = from(&[
            ("AIO_BROKER_HOSTNAME", "h"),
            ("AIO_BROKER_TCP_PORT", "1883"),
            ("AIO_MQTT_USE_TLS", "false"),
            ("AIO_TLS_CA_FILE", "/ignored-without-tls"),
            ("AIO_MQTT_USERNAME", "user"),
            ("AIO_MQTT_PASSWORD_FILE", "/pw"),
        ])
        .unwrap();
        assert_eq!(options.tls, None);
        assert_eq!(
            options.auth,
            Authentication::PasswordFile {
                username: "user".into(),
                password_file: "/pw".into()
            }
        );
    }

    #[test]
    fn malformed_values_name_the_variable() {
        for (name, value) in [
            ("AIO_BROKER_TCP_PORT", "70000"),
            ("AIO_MQTT_USE_TLS", "yes please"),
            ("AIO_MQTT_KEEP_ALIVE", "-1"),
            ("AIO_MQTT_SESSION_EXPIRY", "soon"),
            ("AIO_MQTT_CLEAN_START", "maybe"),
            ("AIO_MQTT_KEEP_ALIVE", "2"),
        ] {
            let err = from(&[("AIO_BROKER_HOSTNAME", "h"), (name, value)]).unwrap_err();
            let text = err.to_string();
            assert!(
                matches!(err, Error::InvalidArgument(_))
                    && (text.contains(name) || text.contains("keep_alive")),
                "{name}={value}: {text}"
            );
        }
        assert!(from(&[])
            .unwrap_err()
            .to_string()
            .contains("AIO_BROKER_HOSTNAME"));
        assert!(from(&[
            ("AIO_BROKER_HOSTNAME", "h"),
            ("AIO_SAT_FILE", "/t"),
            ("AIO_MQTT_USERNAME", "u")
        ])
        .is_err());
    }
}
