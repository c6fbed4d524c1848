//! `mqtt-statestore-testing`: the local state store (`statestore-server`, an embedded MQTT 5
//! broker with the state store inside) in this process, for the tests of `mqtt-statestore`
//! users. `mqtt-statestore/testing` is its public face; this addon is private.
#![deny(clippy::all)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::AsyncTask;
use napi::bindgen_prelude::Unknown;
use napi::{Env, Task};
use napi_derive::napi;
use statestore::bindings::Pending;
use statestore_node_convert::args::{self, Arg, Named};
use statestore_server::{Credentials, Mode, Server, ServerConfig, TlsFiles};

/// The settings of the local server (all optional): `port` (0, the default, picks a free
/// one), `maxKeys` (the most keys the store holds, no limit by default: tests of
/// `STATESTORE_QUOTA_EXCEEDED`), `username` and `password` (the one account clients must log in
/// with), `broker` (attach to this MQTT 5 broker, `host:port`, instead of embedding one),
/// `tlsCert` and `tlsKey` (serve MQTT over TLS with this certificate chain and key, PEM files).
const OPTIONS: &[&str] = &[
    "port", "maxKeys", "username", "password", "broker", "tlsCert", "tlsKey",
];

/// The options object as the server's settings read from it, each checked.
#[derive(Default)]
struct LocalServerOptions {
    port: Option<f64>,
    max_keys: Option<f64>,
    username: Option<String>,
    password: Option<String>,
    broker: Option<String>,
    tls_cert: Option<String>,
    tls_key: Option<String>,
}

fn local_server_options(env: &Env, options: &Arg) -> napi::Result<LocalServerOptions> {
    let options = args::options(env, options, "options", OPTIONS, false)?;
    Ok(LocalServerOptions {
        port: options.read("port", Named::number)?,
        max_keys: options.read("maxKeys", Named::number)?,
        username: options.read("username", Named::string)?,
        password: options.read("password", Named::string)?,
        broker: options.read("broker", Named::string)?,
        tls_cert: options.read("tlsCert", Named::string)?,
        tls_key: options.read("tlsKey", Named::string)?,
    })
}

fn invalid(message: String) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, message)
}

/// The whole number from 0 to `max` that the option `name` gave; anything else is refused as
/// not `what`, saying what to pass.
fn whole(value: f64, name: &str, what: &str, max: u32) -> napi::Result<u32> {
    if value.fract() == 0.0 && (0.0..=f64::from(max)).contains(&value) {
        Ok(value as u32)
    } else {
        Err(invalid(format!(
            "{name}: {value} is not {what}; use a whole number from 0 to {max}"
        )))
    }
}

fn config(options: LocalServerOptions) -> napi::Result<ServerConfig> {
    let mut config = ServerConfig::default();
    let port = match options.port {
        None => 0,
        Some(port) => whole(port, "options.port", "a port (0: a free one)", 65535)? as u16,
    };
    config.mode = match options.broker {
        None => Mode::Embedded {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        },
        Some(broker) => {
            let (host, port) = broker
                .rsplit_once(':')
                .ok_or_else(|| invalid(format!("options.broker: `{broker}` is not host:port")))?;
            let port = port
                .parse()
                .map_err(|_| invalid(format!("options.broker: bad port in `{broker}`")))?;
            Mode::External {
                host: host.to_string(),
                port,
            }
        }
    };
    config.engine.max_keys = options
        .max_keys
        .map(|n| whole(n, "options.maxKeys", "a number of keys", u32::MAX))
        .transpose()?
        .map(|n| n as usize);
    config.tls = match (options.tls_cert, options.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.into(),
            key: key.into(),
        }),
        (None, None) => None,
        _ => {
            return Err(invalid(
                "options.tlsCert and options.tlsKey go together".into(),
            ))
        }
    };
    if let Some(username) = options.username {
        config.credentials = Some(Credentials {
            username,
            password: options.password.unwrap_or_default(),
        });
    }
    Ok(config)
}

/// Runs `future` on core's runtime and waits for it on this thread (a libuv worker for the
/// Promise flavour, the JavaScript thread for the Sync one).
fn run<T: Send + 'static>(
    future: impl std::future::Future<Output = statestore::Result<T>> + Send + 'static,
) -> napi::Result<T> {
    Pending::spawn(future)
        .wait()
        .map_err(|e| napi::Error::from_reason(e.to_string()))
}

fn start_server(config: ServerConfig) -> napi::Result<Server> {
    run(async move {
        Server::start(config).await.map_err(|e| {
            statestore::Error::Connection(format!("the local state store did not start: {e}"))
        })
    })
}

fn stop_server(server: Option<Server>) -> napi::Result<()> {
    match server {
        Some(server) => run(async move {
            server.shutdown().await;
            Ok(())
        }),
        None => Ok(()),
    }
}

/// A running local state store.
#[napi]
pub struct NativeLocalServer {
    server: Arc<Mutex<Option<Server>>>,
    addr: SocketAddr,
    url: String,
}

impl NativeLocalServer {
    fn new(server: Server) -> NativeLocalServer {
        let addr = server.local_addr();
        let url = server.url().to_owned();
        NativeLocalServer {
            server: Arc::new(Mutex::new(Some(server))),
            addr,
            url,
        }
    }

    fn take(&self) -> Option<Server> {
        self.server.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Starts a server off the JavaScript thread.
pub struct Start(Option<ServerConfig>);

impl Task for Start {
    type Output = Server;
    type JsValue = NativeLocalServer;

    fn compute(&mut self) -> napi::Result<Server> {
        let config = self
            .0
            .take()
            .ok_or_else(|| napi::Error::from_reason("the server was started already"))?;
        start_server(config)
    }

    fn resolve(&mut self, _env: Env, server: Server) -> napi::Result<NativeLocalServer> {
        Ok(NativeLocalServer::new(server))
    }
}

/// Stops a server off the JavaScript thread.
pub struct Stop(Option<Server>);

impl Task for Stop {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<()> {
        stop_server(self.0.take())
    }

    fn resolve(&mut self, _env: Env, (): ()) -> napi::Result<()> {
        Ok(())
    }
}

#[napi]
impl NativeLocalServer {
    /// Starts the server; the Promise settles once it listens.
    #[napi]
    pub fn start(env: &Env, options: Unknown) -> napi::Result<AsyncTask<Start>> {
        let config = config(local_server_options(env, &options)?)?;
        Ok(AsyncTask::new(Start(Some(config))))
    }

    /// Starts the server and returns once it listens.
    #[napi]
    pub fn start_sync(env: &Env, options: Unknown) -> napi::Result<NativeLocalServer> {
        let config = config(local_server_options(env, &options)?)?;
        start_server(config).map(NativeLocalServer::new)
    }

    /// The address clients connect to.
    #[napi(getter)]
    pub fn host(&self) -> String {
        self.addr.ip().to_string()
    }

    /// The port clients connect to.
    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.addr.port())
    }

    /// The connection URL clients use, with the account when it has one.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Stops the server (idempotent); connected clients see the connection drop.
    #[napi]
    pub fn stop(&self) -> AsyncTask<Stop> {
        AsyncTask::new(Stop(self.take()))
    }

    /// Stops the server and returns once it is stopped (idempotent).
    #[napi]
    pub fn stop_sync(&self) -> napi::Result<()> {
        stop_server(self.take())
    }
}

/// The package version, so the JavaScript side can refuse a mismatched addon.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
