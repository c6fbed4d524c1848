//! `statestore_testing`: the local state store (`statestore-server`, an embedded MQTT 5 broker
//! with the state store inside) running in this process, for `statestore.testing`. A library of
//! its own, so that the client package ships no broker and no server.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use statestore::bindings::Pending;
use statestore_server::{Credentials, Mode, Server as CoreServer, ServerConfig, TlsFiles};

/// A running local state store.
#[pyclass(frozen, module = "statestore_testing")]
pub struct Server {
    server: Mutex<Option<CoreServer>>,
    addr: SocketAddr,
    url: String,
}

#[pymethods]
impl Server {
    /// Starts an embedded broker with the state store on `host:port` (port 0: a free port),
    /// optionally with a key quota, an account and TLS. Returns once it listens.
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
        config.tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => {
                return Err(PyValueError::new_err(
                    "arguments 'tls_cert' and 'tls_key' go together: give both or neither",
                ))
            }
        };
        if let Some(username) = username {
            config.credentials = Some(Credentials {
                username,
                password: password.unwrap_or_default(),
            });
        }
        let started = py.detach(|| {
            Pending::spawn(async move {
                CoreServer::start(config).await.map_err(|e| {
                    statestore::Error::Runtime(format!(
                        "cannot start the local state store on {ip}:{port}: {e}"
                    ))
                })
            })
            .wait()
        });
        let server = started.map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let addr = server.local_addr();
        let url = server.url().to_owned();
        Ok(Server {
            server: Mutex::new(Some(server)),
            addr,
            url,
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

    /// The connection URL clients use, with the account when it has one.
    #[getter]
    fn url(&self) -> &str {
        &self.url
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
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let server = self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(server) = server {
            py.detach(|| {
                Pending::spawn(async move {
                    server.shutdown().await;
                    Ok(())
                })
                .wait()
            })
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        }
        Ok(())
    }
}

#[pymodule]
fn statestore_testing(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Server>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
