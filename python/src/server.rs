//! `_native.Server`: the local state store (`statestore-server`, embedded MQTT 5 broker) running
//! in this process on core's runtime, for `statestore.testing`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use statestore::Error;
use statestore_server::{Credentials, Mode, Server as CoreServer, ServerConfig, TlsFiles};

use crate::api::Pending;
use crate::call::{block, spawn, Call};

/// A running local state store; `start()` returns a `Call` giving it.
#[pyclass(frozen, module = "statestore._native")]
pub struct Server {
    server: Mutex<Option<CoreServer>>,
    addr: SocketAddr,
}

#[pymethods]
impl Server {
    /// Starts an embedded broker with the state store on `host:port` (port 0: a free port),
    /// optionally with a key quota. Blocks until it listens.
    #[staticmethod]
    #[pyo3(signature = (host = "127.0.0.1", port = 0, max_keys = None, username = None, password = None, tls_cert = None, tls_key = None))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        py: Python<'_>,
        host: &str,
        port: u16,
        max_keys: Option<usize>,
        username: Option<String>,
        password: Option<String>,
        tls_cert: Option<PathBuf>,
        tls_key: Option<PathBuf>,
    ) -> PyResult<Server> {
        let ip: IpAddr = host.parse().map_err(|_| {
            PyValueError::new_err(format!("argument 'host': not an IP address: {host:?}"))
        })?;
        let mut config = ServerConfig {
            mode: Mode::Embedded {
                listen: SocketAddr::new(ip, port),
            },
            ..ServerConfig::default()
        };
        config.engine.max_keys = max_keys;
        if let (Some(cert), Some(key)) = (tls_cert, tls_key) {
            config.tls = Some(TlsFiles { cert, key });
        }
        if let Some(username) = username {
            config.credentials = Some(Credentials {
                username,
                password: password.unwrap_or_default(),
            });
        }
        let server = block(
            py,
            Pending::spawn(async move {
                CoreServer::start(config)
                    .await
                    .map_err(|e| Error::Runtime(format!("cannot start the local state store: {e}")))
            }),
        )?;
        let addr = server.local_addr();
        Ok(Server {
            server: Mutex::new(Some(server)),
            addr,
        })
    }

    /// The address clients connect to.
    #[getter]
    fn host(&self) -> String {
        self.addr.ip().to_string()
    }

    /// The port clients connect to.
    #[getter]
    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Whether it has been stopped.
    #[getter]
    fn stopped(&self) -> bool {
        self.server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Stops the server (answers requests already received, then closes the broker);
    /// idempotent.
    fn stop(&self) -> Call {
        let server = self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        spawn(
            async move {
                if let Some(server) = server {
                    server.shutdown().await;
                }
                Ok(())
            },
            |py, ()| Ok(py.None()),
        )
    }
}
