//! TLS for tests: a self-signed certificate, the files that carry it, and a server that speaks
//! only TLS.

use std::path::{Path, PathBuf};

use statestore_server::{Server, ServerConfig, TlsFiles};

/// A fresh self-signed certificate for `localhost` and `127.0.0.1`, as (certificate, key) PEM.
///
/// # Panics
/// If it cannot be generated.
pub fn self_signed() -> (String, String) {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    match rcgen::generate_simple_self_signed(names) {
        Ok(certified) => (certified.cert.pem(), certified.signing_key.serialize_pem()),
        Err(error) => panic!("cannot generate a self-signed certificate: {error}"),
    }
}

/// Writes `contents` to `dir/name`; returns its path.
///
/// # Panics
/// If the file cannot be written.
pub fn write_file(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    if let Err(error) = std::fs::write(&path, contents) {
        panic!("cannot write {}: {error}", path.display());
    }
    path
}

/// An embedded server whose broker speaks only TLS, with a fresh [`self_signed`] certificate
/// (its files in `dir`); returns it with the certificate's PEM, which clients trust as their
/// CA.
///
/// # Panics
/// If the server cannot start.
pub async fn embedded_over_tls(dir: &Path) -> (Server, String) {
    let (cert, key) = self_signed();
    let config = ServerConfig {
        tls: Some(TlsFiles {
            cert: write_file(dir, "server.pem", &cert),
            key: write_file(dir, "server.key", &key),
        }),
        ..ServerConfig::default()
    };
    match Server::start(config).await {
        Ok(server) => (server, cert),
        Err(error) => panic!("cannot start the state store with TLS: {error}"),
    }
}
