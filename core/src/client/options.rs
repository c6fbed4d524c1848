//! Connection settings of a [`Client`](super::Client).

use std::path::PathBuf;
use std::time::Duration;

use crate::protocol::topics;
use crate::{Error, Result};

/// The largest packet MQTT allows (268 435 455 bytes).
pub const MQTT_MAX_PACKET_SIZE: u32 = 268_435_455;

/// How to reach and authenticate to the MQTT broker, and the client's defaults.
///
/// Build one with [`ConnectOptions::new`] (plain TCP) or [`ConnectOptions::from_env`] (the
/// `AIO_*` variables Azure IoT Operations injects into a pod), then adjust the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// Broker host name or IP address.
    pub host: String,
    /// Broker TCP port.
    pub port: u16,
    /// MQTT client id; a random `statestore-…` id is generated when `None`. It must not contain
    /// `+`, `#` or NUL (it becomes part of topic names).
    pub client_id: Option<String>,
    /// MQTT keep-alive interval (at least 5 s, at most 65 535 s).
    pub keep_alive: Duration,
    /// How long the broker keeps the MQTT session after a disconnect (whole seconds).
    pub session_expiry: Duration,
    /// Start the first connection with a clean session. Reconnects ask to resume the session
    /// only when `session_expiry` is above zero (with zero the broker keeps no session to
    /// resume).
    pub clean_start: bool,
    /// TLS settings; `None` for plain TCP.
    pub tls: Option<TlsOptions>,
    /// How the client authenticates.
    pub auth: Authentication,
    /// Timeout of a call that does not set its own, and of the initial connection.
    pub default_timeout: Duration,
    /// Delays between reconnection attempts.
    pub reconnect: ReconnectPolicy,
    /// The largest packet the client accepts (advertised to the broker in CONNECT).
    pub max_packet_size: u32,
    /// How many requests of one batch ([`Client::get_many`](super::Client::get_many) and its
    /// siblings) are in flight at once, at least 1 (default [`DEFAULT_MAX_IN_FLIGHT`]).
    pub max_in_flight: usize,
}

/// The default [`ConnectOptions::max_in_flight`]: enough to hide the round trip of a local
/// broker, small enough to stay within the receive maximum brokers commonly grant.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// The largest [`ConnectOptions::max_in_flight`]: MQTT's largest receive maximum.
const MAX_IN_FLIGHT_LIMIT: usize = u16::MAX as usize;

/// TLS settings. Certificates and keys are PEM files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TlsOptions {
    /// CA certificates that validate the broker; the system's roots when `None`.
    pub ca_file: Option<PathBuf>,
    /// Client certificate chain, for X.509 client authentication (with `key_file`).
    pub cert_file: Option<PathBuf>,
    /// Private key of the client certificate (unencrypted PEM: PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// Password of an encrypted key. Encrypted keys are not supported: setting this fails the
    /// connection with a clear error rather than a confusing TLS failure.
    pub key_password_file: Option<PathBuf>,
}

/// How the client authenticates to the broker (besides a TLS client certificate).
///
/// Its `Debug` output never shows the password.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Authentication {
    /// No credentials.
    #[default]
    None,
    /// MQTT username and password.
    Password {
        /// Username.
        username: String,
        /// Password (empty for none).
        password: String,
    },
    /// MQTT username, with the password read from a file once, when the client connects
    /// (reconnects reuse it: restart the client after changing the file).
    PasswordFile {
        /// Username.
        username: String,
        /// File holding the password (one trailing newline is ignored).
        password_file: PathBuf,
    },
    /// Kubernetes service-account token (`K8S-SAT` enhanced authentication): CONNECT carries
    /// the token file's bytes.
    ///
    /// The file is checked every `check_interval`; when the token changes, the client reconnects
    /// with the new token. (The MQTT AUTH packet that would re-authenticate in place cannot be
    /// sent with rumqttc 0.25; requests in flight during that reconnect behave as on any other
    /// reconnect.)
    ServiceAccountToken {
        /// The token file (usually a projected volume).
        token_file: PathBuf,
        /// How often the file is checked for a new token.
        check_interval: Duration,
    },
}

impl std::fmt::Debug for Authentication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Password { username, .. } => f
                .debug_struct("Password")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Self::PasswordFile {
                username,
                password_file,
            } => f
                .debug_struct("PasswordFile")
                .field("username", username)
                .field("password_file", password_file)
                .finish(),
            Self::ServiceAccountToken {
                token_file,
                check_interval,
            } => f
                .debug_struct("ServiceAccountToken")
                .field("token_file", token_file)
                .field("check_interval", check_interval)
                .finish(),
        }
    }
}

/// Exponential reconnect backoff: the delay starts at `initial_delay` and doubles after each
/// failed attempt up to `max_delay`; each delay is randomised (jitter) to between half and all
/// of its value so that many clients do not reconnect in lockstep.
///
/// Reconnecting goes on forever unless bounded by `max_attempts` or `max_elapsed`; past a
/// bound the client gives up ([`ConnectionState::GaveUp`](super::ConnectionState::GaveUp)):
/// calls fail at once with [`Error::Connection`] naming the last reason, observations end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// Delay before the first reconnection attempt.
    pub initial_delay: Duration,
    /// Upper bound of the delay.
    pub max_delay: Duration,
    /// Failed reconnection attempts after which the client gives up; 0: never.
    pub max_attempts: u32,
    /// Time after the connection was lost after which the client gives up (the last attempt
    /// is made at that time); zero: never.
    pub max_elapsed: Duration,
}

impl ReconnectPolicy {
    /// Delays from `initial_delay`, doubling up to `max_delay`, reconnecting forever.
    pub fn new(initial_delay: Duration, max_delay: Duration) -> Self {
        Self {
            initial_delay,
            max_delay,
            ..Self::default()
        }
    }

    /// Gives up after this many failed reconnection attempts (0: never).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// Gives up when the connection has been lost for this long (zero: never).
    pub fn max_elapsed(mut self, elapsed: Duration) -> Self {
        self.max_elapsed = elapsed;
        self
    }
}

impl TlsOptions {
    /// TLS with the system's root certificates and no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Validates the broker with the CA certificates of this PEM file instead of the system's.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Presents this client certificate chain and its unencrypted private key (PEM files).
    pub fn client_certificate(
        mut self,
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> Self {
        self.cert_file = Some(cert_file.into());
        self.key_file = Some(key_file.into());
        self
    }

    /// The password file of an encrypted key (not supported: connecting fails clearly).
    pub fn key_password_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.key_password_file = Some(path.into());
        self
    }
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_millis(128),
            max_delay: Duration::from_secs(60),
            max_attempts: 0,
            max_elapsed: Duration::ZERO,
        }
    }
}

/// Default call timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default interval at which a service-account token file is checked for rotation.
pub const DEFAULT_TOKEN_CHECK_INTERVAL: Duration = Duration::from_secs(10);

impl Default for ConnectOptions {
    /// `localhost:1883`, plain TCP, no credentials.
    fn default() -> Self {
        Self::new("localhost", 1883)
    }
}

impl ConnectOptions {
    /// Plain TCP to `host:port` with a generated client id, keep-alive 60 s, session expiry
    /// 3600 s, clean start, call timeout 10 s.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
            client_id: None,
            keep_alive: Duration::from_secs(60),
            session_expiry: Duration::from_secs(3600),
            clean_start: true,
            tls: None,
            auth: Authentication::None,
            default_timeout: DEFAULT_TIMEOUT,
            reconnect: ReconnectPolicy::default(),
            max_packet_size: MQTT_MAX_PACKET_SIZE,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }

    /// Sets the client id.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets the default call timeout.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Sets the authentication.
    pub fn auth(mut self, auth: Authentication) -> Self {
        self.auth = auth;
        self
    }

    /// Sets the TLS options.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Sets the reconnect backoff.
    pub fn reconnect(mut self, reconnect: ReconnectPolicy) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// Sets the MQTT keep-alive interval.
    pub fn keep_alive(mut self, keep_alive: Duration) -> Self {
        self.keep_alive = keep_alive;
        self
    }

    /// Sets how long the broker keeps the session after a disconnect.
    pub fn session_expiry(mut self, session_expiry: Duration) -> Self {
        self.session_expiry = session_expiry;
        self
    }

    /// Sets whether the first connection starts a clean session.
    pub fn clean_start(mut self, clean_start: bool) -> Self {
        self.clean_start = clean_start;
        self
    }

    /// Sets the largest packet the client accepts.
    pub fn max_packet_size(mut self, max_packet_size: u32) -> Self {
        self.max_packet_size = max_packet_size;
        self
    }

    /// Sets how many requests of one batch are in flight at once.
    pub fn max_in_flight(mut self, max_in_flight: usize) -> Self {
        self.max_in_flight = max_in_flight;
        self
    }

    /// Checks the settings; every problem is an [`Error::InvalidArgument`] naming the field.
    pub fn validate(&self) -> Result<()> {
        let invalid = |text: String| Err(Error::InvalidArgument(text));
        if self.host.is_empty() {
            return invalid("host is empty".into());
        }
        if self.host.contains("://") {
            return invalid(format!(
                "host {:?} is a URL, not a host name: pass the host alone, or connect with the \
                 URL (from_url)",
                self.host
            ));
        }
        if let Some((name, port)) = self.host.rsplit_once(':') {
            // One colon (IPv6 addresses have several): a `host:port` pair.
            if !name.contains(':') && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
                return invalid(format!(
                    "host {:?} includes a port: pass host {name:?} and port {port}",
                    self.host
                ));
            }
        }
        if let Some(id) = &self.client_id {
            topics::validate_client_id(id)?;
        }
        let keep_alive = self.keep_alive.as_secs();
        if !(5..=u64::from(u16::MAX)).contains(&keep_alive) {
            return invalid(format!(
                "keep_alive must be between 5 s and 65535 s, got {:?}",
                self.keep_alive
            ));
        }
        if self.session_expiry.as_secs() > u64::from(u32::MAX) {
            return invalid(format!("session_expiry must be at most {} s", u32::MAX));
        }
        if self.default_timeout.is_zero() {
            return invalid("default_timeout must be positive".into());
        }
        if self.reconnect.initial_delay.is_zero()
            || self.reconnect.max_delay < self.reconnect.initial_delay
        {
            return invalid(format!(
                "reconnect delays must satisfy 0 < initial_delay <= max_delay, got {:?}",
                self.reconnect
            ));
        }
        if self.max_packet_size < MIN_PACKET_SIZE {
            return invalid(format!(
                "max_packet_size must be at least {MIN_PACKET_SIZE} bytes"
            ));
        }
        if !(1..=MAX_IN_FLIGHT_LIMIT).contains(&self.max_in_flight) {
            return invalid(format!(
                "max_in_flight must be between 1 and {MAX_IN_FLIGHT_LIMIT}, got {}",
                self.max_in_flight
            ));
        }
        if let Authentication::ServiceAccountToken { check_interval, .. } = &self.auth {
            if check_interval.is_zero() {
                return invalid("the token check_interval must be positive".into());
            }
        }
        if let Some(tls) = &self.tls {
            if tls.cert_file.is_some() != tls.key_file.is_some() {
                return invalid("TLS cert_file and key_file must be given together".into());
            }
        }
        Ok(())
    }
}

/// Below this a response with a short value would not fit.
const MIN_PACKET_SIZE: u32 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_password() {
        let options = ConnectOptions::new("broker", 1883).auth(Authentication::Password {
            username: "ann".into(),
            password: "Do-Not-Print-Me".into(),
        });
        let shown = format!("{options:?}");
        assert!(
            shown.contains("ann") && !shown.contains("Do-Not-Print-Me"),
            "{shown}"
        );
    }

    #[test]
    fn ipv6_hosts_are_not_taken_for_a_host_and_port() {
        for host in ["::1", "fe80::1", "2001:db8::8:800:200c:417a", "[::1]"] {
            ConnectOptions::new(host, 1883).validate().unwrap();
        }
    }

    #[test]
    fn defaults_are_valid_and_follow_the_sdks() {
        let options = ConnectOptions::new("broker", 1883);
        options.validate().unwrap();
        assert_eq!(options.default_timeout, Duration::from_secs(10));
        assert_eq!(options.reconnect.initial_delay, Duration::from_millis(128));
        assert_eq!(options.reconnect.max_delay, Duration::from_secs(60));
        assert_eq!(options.reconnect.max_attempts, 0, "reconnects forever");
        assert_eq!(options.reconnect.max_elapsed, Duration::ZERO);
    }

    #[test]
    fn bad_settings_are_rejected_with_the_field_named() {
        let base = ConnectOptions::new("broker", 1883);
        let cases: Vec<(ConnectOptions, &str)> = vec![
            (
                ConnectOptions {
                    host: String::new(),
                    ..base.clone()
                },
                "host",
            ),
            (
                ConnectOptions::new("broker:1884", 1883),
                "host \"broker:1884\" includes a port: pass host \"broker\" and port 1884",
            ),
            (
                ConnectOptions::new("mqtt://broker:1884", 1883),
                "is a URL, not a host name",
            ),
            (base.clone().client_id("a+b"), "client id"),
            (
                ConnectOptions {
                    keep_alive: Duration::from_secs(1),
                    ..base.clone()
                },
                "keep_alive",
            ),
            (
                base.clone().default_timeout(Duration::ZERO),
                "default_timeout",
            ),
            (
                base.clone().reconnect(ReconnectPolicy::new(
                    Duration::from_secs(2),
                    Duration::from_secs(1),
                )),
                "reconnect",
            ),
            (
                ConnectOptions {
                    max_packet_size: 10,
                    ..base.clone()
                },
                "max_packet_size",
            ),
            (
                base.clone().tls(TlsOptions {
                    cert_file: Some("c.pem".into()),
                    ..TlsOptions::default()
                }),
                "key_file",
            ),
        ];
        for (options, field) in cases {
            match options.validate() {
                Err(Error::InvalidArgument(text)) => assert!(text.contains(field), "{text}"),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
