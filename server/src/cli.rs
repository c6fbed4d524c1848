//! The `statestore-server` command line, reusable by other binaries (`statestore serve`).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tracing_subscriber::EnvFilter;

use crate::config::{
    Credentials, FsyncPolicy, Mode, PersistenceConfig, ServerConfig, TlsFiles,
    DEFAULT_MAX_PACKET_SIZE,
};
use crate::engine::EngineConfig;
use crate::{Server, ServerError};

/// Options of `statestore-server` (flatten them into another clap command to reuse them).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Run the embedded MQTT 5 broker on this address (the default mode).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:1883",
        conflicts_with = "broker"
    )]
    pub listen: SocketAddr,

    /// Run the embedded broker on this port of 127.0.0.1 (`--listen 127.0.0.1:PORT`; 0 picks
    /// a free one, printed on the ready line).
    #[arg(long, value_name = "PORT", conflicts_with_all = ["listen", "broker"])]
    pub port: Option<u16>,

    /// Attach to an existing MQTT 5 broker instead (`mqtt://HOST:PORT`, port 1883 if
    /// omitted). The state store then cannot see disconnects or verify client ids.
    #[arg(long, value_name = "URL")]
    pub broker: Option<String>,

    /// Maximum number of keys; more gives `the quota has been exceeded`. Unlimited if unset.
    #[arg(long, value_name = "N")]
    pub max_keys: Option<usize>,

    /// How far ahead of the server clock a request's `__ts` or `__ft` may be (e.g. `60s`,
    /// `500ms`).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub max_clock_skew: Duration,

    /// Log filter: a level (`error`, `warn`, `info`, `debug`, `trace`) or a tracing filter
    /// such as `debug,mqtt5=info`. Logs go to stderr. Rejected requests are logged at
    /// `warn`, requests answered with `-ERR` at `info`. The default keeps the embedded
    /// broker's per-connection messages out.
    #[arg(long, value_name = "FILTER", default_value = "info,mqtt5=warn")]
    pub log_level: String,

    /// Serve MQTT over TLS with this certificate chain (PEM); needs --tls-key. Embedded
    /// broker only.
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        conflicts_with = "broker"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Private key (PEM) of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// User name clients must log in with (embedded broker; anonymous clients are refused),
    /// or that the server logs in with (--broker). Needs --password.
    #[arg(long, value_name = "NAME", requires = "password")]
    pub username: Option<String>,

    /// Password of --username.
    #[arg(long, value_name = "SECRET", requires = "username")]
    pub password: Option<String>,

    /// Largest MQTT packet accepted and sent, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_PACKET_SIZE)]
    pub max_packet_size: u32,

    /// Keep keys written with `aio-persistence: true` in this directory (created if
    /// missing) so that they survive a restart. Without it the option is ignored.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// When persisted writes are synced to disk: `always` (before the response),
    /// `interval` (every --fsync-interval) or `never` (left to the operating system).
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = FsyncPolicy::Always, requires = "data_dir")]
    pub fsync: FsyncPolicy,

    /// How often `--fsync interval` syncs.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub fsync_interval: Duration,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 60s, 1m, 500ms)"))
}

impl ServeArgs {
    /// The server configuration these options describe.
    pub fn config(&self) -> Result<ServerConfig, ServerError> {
        let mode = match &self.broker {
            None => Mode::Embedded {
                listen: match self.port {
                    Some(port) => SocketAddr::new(self.listen.ip(), port),
                    None => self.listen,
                },
            },
            Some(url) => {
                let (host, port) = parse_broker_url(url)?;
                Mode::External { host, port }
            }
        };
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        };
        let credentials = match (&self.username, &self.password) {
            (Some(username), Some(password)) => Some(Credentials {
                username: username.clone(),
                password: password.clone(),
            }),
            _ => None,
        };
        Ok(ServerConfig {
            mode,
            engine: EngineConfig {
                max_keys: self.max_keys,
                max_skew: self.max_clock_skew,
                ..EngineConfig::default()
            },
            tls,
            credentials,
            max_packet_size: self.max_packet_size,
            persistence: self.data_dir.as_ref().map(|dir| PersistenceConfig {
                data_dir: dir.clone(),
                fsync: self.fsync,
                fsync_interval: self.fsync_interval,
            }),
        })
    }
}

/// `mqtt://HOST[:PORT]` (or bare `HOST[:PORT]`) to host and port.
fn parse_broker_url(url: &str) -> Result<(String, u16), ServerError> {
    let invalid = |why: &str| ServerError::Config(format!("--broker {url:?}: {why}"));
    let rest = match url.split_once("://") {
        Some(("mqtt" | "tcp", rest)) => rest,
        Some((scheme, _)) => {
            return Err(invalid(&format!(
                "unsupported scheme {scheme:?} (only mqtt:// is supported)"
            )))
        }
        None => url,
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains('/') {
        return Err(invalid("expected mqtt://HOST:PORT"));
    }
    // A bracketed IPv6 literal keeps its colons inside the brackets.
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => {
            let port = port
                .parse()
                .map_err(|_| invalid("the port is not a number"))?;
            (host, port)
        }
        _ => (rest, 1883),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid("the host is empty"));
    }
    Ok((host.to_owned(), port))
}

/// Sets up logging to stderr with `filter` (see [`ServeArgs::log_level`]).
pub fn init_logging(filter: &str) -> Result<(), ServerError> {
    let filter = EnvFilter::try_new(filter)
        .map_err(|e| ServerError::Config(format!("--log-level {filter:?}: {e}")))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| ServerError::Config(format!("cannot set up logging: {e}")))
}

/// The whole `statestore-server` program for already parsed options: sets up logging, runs
/// until SIGINT or SIGTERM, reports a failure on stderr. For `main` functions.
pub async fn serve(args: &ServeArgs) -> ExitCode {
    if let Err(error) = init_logging(&args.log_level) {
        eprintln!("statestore-server: {error}");
        return ExitCode::from(2);
    }
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("statestore-server: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the server until SIGINT or SIGTERM: starts it, prints exactly one line to stdout
/// when it serves (`statestore-server ready on ADDR (embedded broker)`), then shuts down
/// cleanly on the signal. Logging must be set up by the caller ([`init_logging`]).
pub async fn run(args: &ServeArgs) -> Result<(), ServerError> {
    let config = args.config()?;
    let kind = match config.mode {
        Mode::Embedded { .. } => "embedded broker",
        Mode::External { .. } => "external broker",
    };
    // Both handlers exist before the ready line: a signal sent on seeing it must not be lost.
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let server = Server::start(config).await?;
    println!(
        "statestore-server ready on {} ({kind})",
        server.local_addr()
    );
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_urls() {
        let parse = |url| parse_broker_url(url).ok();
        assert_eq!(parse("mqtt://h:1884"), Some(("h".to_owned(), 1884)));
        assert_eq!(parse("mqtt://h"), Some(("h".to_owned(), 1883)));
        assert_eq!(parse("127.0.0.1:9"), Some(("127.0.0.1".to_owned(), 9)));
        assert_eq!(parse("mqtt://[::1]:7"), Some(("::1".to_owned(), 7)));
        assert_eq!(parse("mqtts://h:8883"), None);
        assert_eq!(parse("mqtt://h:x"), None);
        assert_eq!(parse("mqtt://"), None);
    }

    #[test]
    fn durations_are_human() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("soon").is_err());
    }
}
