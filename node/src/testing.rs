//! `statestore/testing`: the local state store (`statestore-server`) in this process on a free
//! loopback port, for users' own tests. It runs on core's internal runtime.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use napi::Env;
use napi_derive::napi;
use statestore_server::{Credentials, Mode, Server, ServerConfig, TlsFiles};

use crate::bindings::Pending;
use crate::bridge::{self, Call, Returned};

/// Settings of the local server (all optional).
#[napi(object)]
#[derive(Default)]
pub struct LocalServerOptions {
    /// Listen port (0, the default, picks a free one).
    pub port: Option<u32>,
    /// Most keys the store holds (no limit by default): tests of `STATESTORE_QUOTA_EXCEEDED`.
    pub max_keys: Option<u32>,
    /// The one account clients must log in with.
    pub username: Option<String>,
    pub password: Option<String>,
    /// Attach to this MQTT 5 broker (`host:port`) instead of embedding one.
    pub broker: Option<String>,
    /// Serve MQTT over TLS with this certificate chain (PEM file; with `tls_key`).
    pub tls_cert: Option<String>,
    /// Private key (PEM file) of `tls_cert`.
    pub tls_key: Option<String>,
}

#[napi]
pub struct NativeLocalServer {
    server: Arc<Mutex<Option<Server>>>,
    addr: SocketAddr,
}

fn config(options: LocalServerOptions) -> statestore::Result<ServerConfig> {
    let mut config = ServerConfig::default();
    let port = u16::try_from(options.port.unwrap_or(0))
        .map_err(|_| statestore::Error::InvalidArgument("port: out of range".into()))?;
    config.mode = match options.broker {
        None => Mode::Embedded {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        },
        Some(broker) => {
            let (host, port) = broker.rsplit_once(':').ok_or_else(|| {
                statestore::Error::InvalidArgument(format!("broker: `{broker}` is not host:port"))
            })?;
            let port = port.parse().map_err(|_| {
                statestore::Error::InvalidArgument(format!("broker: bad port in `{broker}`"))
            })?;
            Mode::External {
                host: host.to_string(),
                port,
            }
        }
    };
    config.engine.max_keys = options.max_keys.map(|n| n as usize);
    config.tls = match (options.tls_cert, options.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.into(),
            key: key.into(),
        }),
        (None, None) => None,
        _ => {
            return Err(statestore::Error::InvalidArgument(
                "tlsCert and tlsKey go together".into(),
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

fn start_pending(options: Option<LocalServerOptions>) -> Pending<Server> {
    match config(options.unwrap_or_default()) {
        Ok(config) => Pending::spawn(async move {
            Server::start(config).await.map_err(|e| {
                statestore::Error::Connection(format!("the local state store did not start: {e}"))
            })
        }),
        Err(error) => Pending::ready(Err(error)),
    }
}

fn wrap(server: Server) -> NativeLocalServer {
    let addr = server.local_addr();
    NativeLocalServer {
        server: Arc::new(Mutex::new(Some(server))),
        addr,
    }
}

/// Each operation takes the `NativeCall` last (a Promise, or the blocking `…Sync` twin).
#[napi]
impl NativeLocalServer {
    #[napi(ts_return_type = "NativeLocalServer | Promise<NativeLocalServer>")]
    pub fn start<'e>(
        env: &'e Env,
        options: Option<LocalServerOptions>,
        call: Call,
    ) -> napi::Result<Returned<'e, NativeLocalServer>> {
        bridge::run(env, call, start_pending(options), |_, server| {
            Ok(wrap(server))
        })
    }

    #[napi(getter)]
    pub fn host(&self) -> String {
        self.addr.ip().to_string()
    }

    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.addr.port())
    }

    /// Stops the server (idempotent); connected clients see the connection drop.
    #[napi(ts_return_type = "void | Promise<void>")]
    pub fn stop<'e>(&self, env: &'e Env, call: Call) -> napi::Result<Returned<'e, ()>> {
        let server = self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        let pending = Pending::spawn(async move {
            if let Some(server) = server {
                server.shutdown().await;
            }
            Ok(())
        });
        bridge::run(env, call, pending, |_, ()| Ok(()))
    }
}
