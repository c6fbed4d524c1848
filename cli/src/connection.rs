//! Connection flags, merged with the `AIO_*` environment variables into [`ConnectOptions`].
//!
//! Each flag stands for one `AIO_*` variable and wins over it; the merged settings go through
//! the library's own [`ConnectOptions::from_lookup`], so both are parsed and checked alike.
//! A connection URL (`--url`, or `STATESTORE_URL`) replaces the `AIO_*` variables: its
//! settings go through [`ConnectOptions::with_url`], then the flags given win over them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use statestore::bindings::{OptionValue, CONNECT_OPTIONS};
use statestore::{ConnectOptions, Result};

use crate::durations::parse_duration;

/// The broker host when neither `--host` nor `AIO_BROKER_HOSTNAME` is given: where
/// `statestore serve` listens by default.
const LOCAL_HOST: &str = "localhost";

/// Variables of the authentication method: a method chosen with flags replaces the
/// environment's method as a whole.
const AUTH_VARIABLES: [&str; 3] = [
    "AIO_SAT_FILE",
    "AIO_MQTT_USERNAME",
    "AIO_MQTT_PASSWORD_FILE",
];

/// How to reach the broker. Flags override the `AIO_*` environment variables.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Connection (flags override the AIO_* environment variables)")]
pub struct ConnectionArgs {
    /// Broker host [env: AIO_BROKER_HOSTNAME] [default: localhost].
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,

    /// Broker port [env: AIO_BROKER_TCP_PORT] [default: 8883 with TLS, 1883 without].
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,

    /// MQTT client id [env: AIO_MQTT_CLIENT_ID] [default: a random statestore-... id].
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,

    /// Connect with TLS [env: AIO_MQTT_USE_TLS] [default: on when AIO_BROKER_HOSTNAME is set
    /// or a TLS file is given, off otherwise].
    #[arg(long, overrides_with = "no_tls")]
    pub tls: bool,

    /// Connect without TLS.
    #[arg(long, overrides_with = "tls")]
    pub no_tls: bool,

    /// CA certificates (PEM) that validate the broker [env: AIO_TLS_CA_FILE] [default: the
    /// system's roots].
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,

    /// Client certificate chain (PEM), with --tls-key [env: AIO_TLS_CERT_FILE].
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// Private key (PEM) of --tls-cert [env: AIO_TLS_KEY_FILE].
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// MQTT user name [env: AIO_MQTT_USERNAME].
    #[arg(long, value_name = "NAME", conflicts_with = "sat_file")]
    pub username: Option<String>,

    /// File holding the password of --username [env: AIO_MQTT_PASSWORD_FILE].
    #[arg(long, value_name = "PATH", requires = "username")]
    pub password_file: Option<PathBuf>,

    /// Kubernetes service-account token file (K8S-SAT authentication) [env: AIO_SAT_FILE].
    #[arg(long, value_name = "PATH")]
    pub sat_file: Option<PathBuf>,

    /// Connection URL, `mqtt://[user[:password]@]host[:port][?option=value&...]` or `mqtts://...`
    /// (query options: the library's connect options, e.g. ?client_id=app&ca_file=ca.pem).
    /// Replaces the AIO_* variables; the other flags override it [env: STATESTORE_URL].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// Failed reconnection attempts after which a lost connection is given up (the command
    /// then fails with the connection status) [default: 0, never].
    #[arg(long, value_name = "N")]
    pub reconnect_max_attempts: Option<u32>,

    /// How long after losing the connection reconnecting gives up, e.g. `30s`, `5m` [default:
    /// 0, never].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub reconnect_max_elapsed: Option<Duration>,

    /// Ignore the AIO_* environment variables and STATESTORE_URL: only the flags and the
    /// defaults count.
    #[arg(long)]
    pub no_env: bool,

    /// The longest to wait: for the connection, for each answer, and (lock) for the lock,
    /// e.g. `5s`, `500ms` [default: 10s; lock: wait for the lock without limit].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

impl ConnectionArgs {
    /// The settings from these flags and the process environment.
    pub fn options(&self) -> Result<ConnectOptions> {
        self.options_with_env(|name| {
            if self.no_env {
                None
            } else {
                std::env::var(name).ok()
            }
        })
    }

    /// The settings from these flags and the variables `env` reads.
    fn options_with_env(&self, env: impl Fn(&str) -> Option<String>) -> Result<ConnectOptions> {
        let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        if let Some(url) = self.url.clone().or_else(|| env("STATESTORE_URL")) {
            return self.options_with_url(&url);
        }
        let auth_from_flags =
            self.username.is_some() || self.password_file.is_some() || self.sat_file.is_some();
        let given = |name: &str| {
            self.flag(name).or_else(|| {
                if auth_from_flags && AUTH_VARIABLES.contains(&name) {
                    None
                } else {
                    env(name)
                }
            })
        };
        let use_tls = given("AIO_MQTT_USE_TLS").unwrap_or_else(|| {
            let tls_file = ["AIO_TLS_CA_FILE", "AIO_TLS_CERT_FILE"]
                .iter()
                .any(|name| given(name).is_some());
            let in_pod = env("AIO_BROKER_HOSTNAME").is_some();
            (in_pod || tls_file).to_string()
        });
        let plain = matches!(use_tls.trim().to_ascii_lowercase().as_str(), "false" | "0");
        let options = ConnectOptions::from_lookup(|name| {
            given(name).or_else(|| match name {
                "AIO_BROKER_HOSTNAME" => Some(LOCAL_HOST.to_owned()),
                "AIO_MQTT_USE_TLS" => Some(use_tls.clone()),
                "AIO_BROKER_TCP_PORT" if plain => Some("1883".to_owned()),
                // A command line run leaves no session behind on the broker.
                "AIO_MQTT_SESSION_EXPIRY" => Some("0".to_owned()),
                "AIO_MQTT_CLEAN_START" => Some("true".to_owned()),
                _ => None,
            })
        })?;
        self.finish(options)
    }

    /// The settings of `url` with the flags given on top (the `AIO_*` variables are not read).
    fn options_with_url(&self, url: &str) -> Result<ConnectOptions> {
        // A command line run leaves no session behind on the broker, unless the URL says so.
        let mut options = ConnectOptions::default()
            .session_expiry(Duration::ZERO)
            .clean_start(true)
            .with_url(url)?;
        for spec in CONNECT_OPTIONS {
            if let Some(value) = spec.env.and_then(|name| self.flag(name)) {
                options.set_option(spec.name, OptionValue::Str(value))?;
            }
        }
        self.finish(options)
    }

    /// `options` with the flags no variable stands for (timeout, reconnect bounds), checked.
    fn finish(&self, mut options: ConnectOptions) -> Result<ConnectOptions> {
        if let Some(timeout) = self.timeout {
            options.default_timeout = timeout;
        }
        if let Some(attempts) = self.reconnect_max_attempts {
            options.reconnect.max_attempts = attempts;
        }
        if let Some(elapsed) = self.reconnect_max_elapsed {
            options.reconnect.max_elapsed = elapsed;
        }
        options.validate()?;
        Ok(options)
    }

    /// The value the flag standing for the variable `name` gives, if it was used.
    fn flag(&self, name: &str) -> Option<String> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
        match name {
            "AIO_BROKER_HOSTNAME" => self.host.clone(),
            "AIO_BROKER_TCP_PORT" => self.port.map(|port| port.to_string()),
            "AIO_MQTT_CLIENT_ID" => self.client_id.clone(),
            "AIO_MQTT_USE_TLS" if self.tls => Some("true".to_owned()),
            "AIO_MQTT_USE_TLS" if self.no_tls => Some("false".to_owned()),
            "AIO_TLS_CA_FILE" => path(&self.tls_ca),
            "AIO_TLS_CERT_FILE" => path(&self.tls_cert),
            "AIO_TLS_KEY_FILE" => path(&self.tls_key),
            "AIO_MQTT_USERNAME" => self.username.clone(),
            "AIO_MQTT_PASSWORD_FILE" => path(&self.password_file),
            "AIO_SAT_FILE" => path(&self.sat_file),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statestore::{Authentication, TlsOptions};
    use std::collections::HashMap;

    fn with_env(args: &ConnectionArgs, vars: &[(&str, &str)]) -> Result<ConnectOptions> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        args.options_with_env(|name| vars.get(name).cloned())
    }

    #[test]
    fn without_flags_or_environment_the_local_server_is_used() {
        let options = with_env(&ConnectionArgs::default(), &[]).unwrap();
        assert_eq!((options.host.as_str(), options.port), ("localhost", 1883));
        assert_eq!(options.tls, None);
        assert_eq!(options.auth, Authentication::None);
        assert_eq!(options.session_expiry, Duration::ZERO);
        assert!(options.clean_start);
    }

    #[test]
    fn a_pod_environment_gives_the_sdk_defaults() {
        let options = with_env(
            &ConnectionArgs::default(),
            &[
                ("AIO_BROKER_HOSTNAME", "aio-broker"),
                ("AIO_SAT_FILE", "/var/run/secrets/tokens/mq-sat"),
                ("AIO_TLS_CA_FILE", "/ca.pem"),
            ],
        )
        .unwrap();
        assert_eq!((options.host.as_str(), options.port), ("aio-broker", 8883));
        assert_eq!(
            options.tls.and_then(|tls| tls.ca_file),
            Some("/ca.pem".into())
        );
        assert!(matches!(
            options.auth,
            Authentication::ServiceAccountToken { .. }
        ));
    }

    #[test]
    fn flags_override_the_environment() {
        let args = ConnectionArgs {
            host: Some("other".into()),
            port: Some(1884),
            no_tls: true,
            username: Some("me".into()),
            password_file: Some("/pw".into()),
            client_id: Some("cli-1".into()),
            timeout: Some(Duration::from_millis(1500)),
            ..ConnectionArgs::default()
        };
        let options = with_env(
            &args,
            &[
                ("AIO_BROKER_HOSTNAME", "aio-broker"),
                ("AIO_BROKER_TCP_PORT", "8883"),
                ("AIO_SAT_FILE", "/token"),
                ("AIO_MQTT_CLIENT_ID", "from-env"),
            ],
        )
        .unwrap();
        assert_eq!((options.host.as_str(), options.port), ("other", 1884));
        assert_eq!(options.tls, None);
        assert_eq!(options.client_id.as_deref(), Some("cli-1"));
        assert_eq!(options.default_timeout, Duration::from_millis(1500));
        assert_eq!(
            options.auth,
            Authentication::PasswordFile {
                username: "me".into(),
                password_file: "/pw".into()
            }
        );
    }

    #[test]
    fn a_url_replaces_the_environment_and_flags_override_it() {
        let vars = [
            ("AIO_BROKER_HOSTNAME", "aio-broker"),
            ("AIO_MQTT_CLIENT_ID", "env-id"),
        ];
        let from_url = ConnectionArgs {
            url: Some("mqtt://ann:pw@url-host:1884?client_id=url-id".into()),
            ..Default::default()
        };
        let options = with_env(&from_url, &vars).unwrap();
        assert_eq!((options.host.as_str(), options.port), ("url-host", 1884));
        assert_eq!(options.client_id.as_deref(), Some("url-id"));
        assert_eq!(options.tls, None);
        assert_eq!(options.session_expiry, Duration::ZERO);
        assert_eq!(
            options.auth,
            Authentication::Password {
                username: "ann".into(),
                password: "pw".into()
            }
        );
        let flags = ConnectionArgs {
            url: Some("mqtt://url-host:1884?client_id=url-id".into()),
            port: Some(1999),
            client_id: Some("flag-id".into()),
            timeout: Some(Duration::from_secs(3)),
            ..Default::default()
        };
        let options = with_env(&flags, &vars).unwrap();
        assert_eq!((options.host.as_str(), options.port), ("url-host", 1999));
        assert_eq!(options.client_id.as_deref(), Some("flag-id"));
        assert_eq!(options.default_timeout, Duration::from_secs(3));
        // STATESTORE_URL when no --url is given; the URL's scheme decides TLS.
        let options = with_env(
            &ConnectionArgs::default(),
            &[
                ("STATESTORE_URL", "mqtts://env-url"),
                ("AIO_BROKER_HOSTNAME", "aio"),
            ],
        )
        .unwrap();
        assert_eq!((options.host.as_str(), options.port), ("env-url", 8883));
        assert!(options.tls.is_some());
    }

    #[test]
    fn a_bad_url_names_the_part_without_the_password() {
        let args = ConnectionArgs {
            url: Some("mqtt://ann:Secret-42@h:99999".into()),
            ..Default::default()
        };
        let error = with_env(&args, &[]).unwrap_err().to_string();
        assert!(
            error.contains("port") && error.contains("ann:***@"),
            "{error}"
        );
        assert!(!error.contains("Secret-42"), "{error}");
    }

    #[test]
    fn a_tls_file_turns_tls_on_and_the_port_to_8883() {
        let args = ConnectionArgs {
            tls_ca: Some("/ca.pem".into()),
            ..ConnectionArgs::default()
        };
        let options = with_env(&args, &[]).unwrap();
        assert_eq!(options.port, 8883);
        assert_eq!(options.tls, Some(TlsOptions::new().ca_file("/ca.pem")));
    }

    #[test]
    fn no_env_ignores_the_environment() {
        let args = ConnectionArgs {
            no_env: true,
            ..ConnectionArgs::default()
        };
        // Not the process environment: the defaults, whatever AIO_* the test runs with.
        let options = args.options().unwrap();
        assert_eq!((options.host.as_str(), options.port), ("localhost", 1883));
        assert_eq!(options.auth, Authentication::None);
    }

    #[test]
    fn reconnect_bounds_come_from_their_flags() {
        let defaults = with_env(&ConnectionArgs::default(), &[]).unwrap();
        assert_eq!(defaults.reconnect.max_attempts, 0, "forever");
        assert_eq!(defaults.reconnect.max_elapsed, Duration::ZERO, "forever");
        let args = ConnectionArgs {
            reconnect_max_attempts: Some(3),
            reconnect_max_elapsed: Some(Duration::from_secs(90)),
            ..ConnectionArgs::default()
        };
        let options = with_env(&args, &[]).unwrap();
        assert_eq!(options.reconnect.max_attempts, 3);
        assert_eq!(options.reconnect.max_elapsed, Duration::from_secs(90));
    }

    #[test]
    fn bad_values_are_invalid_arguments() {
        let err = with_env(
            &ConnectionArgs::default(),
            &[("AIO_BROKER_TCP_PORT", "seventy")],
        )
        .unwrap_err();
        assert!(err.to_string().contains("AIO_BROKER_TCP_PORT"), "{err}");
        let args = ConnectionArgs {
            client_id: Some("a+b".into()),
            ..ConnectionArgs::default()
        };
        assert!(matches!(
            with_env(&args, &[]),
            Err(statestore::Error::InvalidArgument(_))
        ));
    }
}
