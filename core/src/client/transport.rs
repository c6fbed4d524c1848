//! rumqttc options from [`ConnectOptions`]: TCP without Nagle, packet size limits both ways,
//! no topic aliases, automatic acks, TLS with rustls, and the credentials.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rumqttc::tokio_rustls::rustls::{
    self,
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    ClientConfig, RootCertStore,
};
use rumqttc::v5::MqttOptions;
use rumqttc::{NetworkOptions, TlsConfiguration, Transport};

use super::envelope::expiry_seconds;
use super::options::{Authentication, ConnectOptions, TlsOptions};
use crate::{Error, Result};

/// The authentication method of Kubernetes service-account tokens.
pub(crate) const K8S_SAT: &str = "K8S-SAT";

/// The rumqttc options for `options` under `client_id`.
pub(crate) fn mqtt_options(options: &ConnectOptions, client_id: &str) -> Result<MqttOptions> {
    let mut mqtt = MqttOptions::new(client_id, options.host.clone(), options.port);
    mqtt.set_keep_alive(options.keep_alive)
        .set_clean_start(options.clean_start)
        .set_session_expiry_interval(Some(
            u32::try_from(options.session_expiry.as_secs()).unwrap_or(u32::MAX),
        ))
        // Advertised to the broker: without it rumqttc silently drops packets over 10 KiB.
        .set_max_packet_size(Some(options.max_packet_size))
        // Aliases negotiated on one connection leak into the next in rumqttc.
        .set_topic_alias_max(None)
        .set_manual_acks(false)
        .set_connection_timeout(expiry_seconds(options.default_timeout).into());
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    network.set_connection_timeout(expiry_seconds(options.default_timeout).into());
    mqtt.set_network_options(network);
    if let Some(tls) = &options.tls {
        mqtt.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(
            Arc::new(tls_config(tls)?),
        )));
    }
    match &options.auth {
        Authentication::None => {}
        Authentication::Password { username, password } => {
            mqtt.set_credentials(username.clone(), password.clone());
        }
        Authentication::PasswordFile {
            username,
            password_file,
        } => {
            warn_if_readable_by_others(password_file);
            let password = String::from_utf8(read(password_file, "password file")?.to_vec())
                .map_err(|_| {
                    Error::InvalidArgument(format!(
                        "the password file {} is not UTF-8 text",
                        password_file.display()
                    ))
                })?;
            let password = password
                .strip_suffix('\n')
                .map(|p| p.strip_suffix('\r').unwrap_or(p))
                .unwrap_or(&password);
            mqtt.set_credentials(username.clone(), password);
        }
        Authentication::ServiceAccountToken { token_file, .. } => {
            mqtt.set_authentication_method(Some(K8S_SAT.to_owned()))
                .set_authentication_data(Some(read_token(token_file)?));
        }
    }
    Ok(mqtt)
}

/// A secret file that others may read is worth a warning (as ssh does for keys), not a refusal:
/// mounted secrets are often group-readable by design.
fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = std::fs::metadata(path) {
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    file = %path.display(),
                    mode = format_args!("{mode:o}"),
                    "the password file's permissions let others than its owner read it: restrict them (chmod 600)"
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// The service-account token: the file's bytes.
pub(crate) fn read_token(path: &Path) -> Result<Bytes> {
    read(path, "service-account token file")
}

fn read(path: &Path, what: &str) -> Result<Bytes> {
    std::fs::read(path).map(Bytes::from).map_err(|e| {
        Error::InvalidArgument(format!("cannot read the {what} {}: {e}", path.display()))
    })
}

/// A rustls configuration with the ring provider (chosen explicitly, so that no process-wide
/// default provider is needed).
fn tls_config(tls: &TlsOptions) -> Result<ClientConfig> {
    if let Some(file) = &tls.key_password_file {
        return Err(Error::InvalidArgument(format!(
            "encrypted private keys are not supported (key password file {}): provide an \
             unencrypted PEM key",
            file.display()
        )));
    }
    let mut roots = RootCertStore::empty();
    match &tls.ca_file {
        Some(ca_file) => {
            let pem = read(ca_file, "CA file")?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| pem_error(ca_file, e))?;
                roots.add(cert).map_err(|e| {
                    Error::InvalidArgument(format!("CA file {}: {e}", ca_file.display()))
                })?;
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    if roots.is_empty() {
        return Err(Error::InvalidArgument(
            "no CA certificate to validate the broker with: set the TLS ca_file".into(),
        ));
    }
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::InvalidArgument(format!("TLS: {e}")))?
            .with_root_certificates(roots);
    match (&tls.cert_file, &tls.key_file) {
        (Some(cert_file), Some(key_file)) => {
            let pem = read(cert_file, "client certificate file")?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| pem_error(cert_file, e))?;
            if certs.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "no certificate in {}",
                    cert_file.display()
                )));
            }
            let key = PrivateKeyDer::from_pem_slice(&read(key_file, "client key file")?)
                .map_err(|e| pem_error(key_file, e))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| Error::InvalidArgument(format!("TLS client certificate: {e}")))
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

fn pem_error(path: &Path, e: rustls::pki_types::pem::Error) -> Error {
    Error::InvalidArgument(format!("{}: not a usable PEM file: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn mqtt_options_carry_the_settings() {
        let mut options = ConnectOptions::new("broker", 1884);
        options.keep_alive = Duration::from_secs(30);
        options.session_expiry = Duration::from_secs(100);
        options.clean_start = false;
        options.max_packet_size = 65_536;
        options.auth = Authentication::Password {
            username: "u".into(),
            password: "p".into(),
        };
        let mqtt = mqtt_options(&options, "client-1").unwrap();
        assert_eq!(mqtt.client_id(), "client-1");
        assert_eq!(mqtt.broker_address(), ("broker".to_owned(), 1884));
        assert_eq!(mqtt.keep_alive(), Duration::from_secs(30));
        assert!(!mqtt.clean_start());
        assert_eq!(mqtt.session_expiry_interval(), Some(100));
        assert_eq!(mqtt.max_packet_size(), Some(65_536));
        assert_eq!(mqtt.topic_alias_max(), None);
        assert!(!mqtt.manual_acks());
        assert_eq!(mqtt.credentials().map(|c| c.username), Some("u".to_owned()));
    }

    #[test]
    fn token_and_password_files_are_read() {
        let dir = std::env::temp_dir().join(format!("statestore-transport-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, b"tok\0en").unwrap();
        let password = dir.join("password");
        std::fs::write(&password, b"secret\n").unwrap();

        let mut options = ConnectOptions::new("b", 1);
        options.auth = Authentication::ServiceAccountToken {
            token_file: token.clone(),
            check_interval: Duration::from_secs(1),
        };
        let mqtt = mqtt_options(&options, "c").unwrap();
        assert_eq!(mqtt.authentication_method().as_deref(), Some("K8S-SAT"));
        assert_eq!(
            mqtt.authentication_data(),
            Some(Bytes::from_static(b"tok\0en"))
        );

        options.auth = Authentication::PasswordFile {
            username: "u".into(),
            password_file: password,
        };
        let mqtt = mqtt_options(&options, "c").unwrap();
        assert_eq!(
            mqtt.credentials().map(|c| c.password),
            Some("secret".to_owned())
        );

        options.auth = Authentication::ServiceAccountToken {
            token_file: dir.join("missing"),
            check_interval: Duration::from_secs(1),
        };
        let err = mqtt_options(&options, "c").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tls_problems_are_reported_before_connecting() {
        let mut options = ConnectOptions::new("b", 1);
        options.tls = Some(TlsOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        });
        assert!(matches!(
            mqtt_options(&options, "c"),
            Err(Error::InvalidArgument(_))
        ));
        options.tls = Some(TlsOptions {
            key_password_file: Some("/kp".into()),
            ..TlsOptions::default()
        });
        let err = mqtt_options(&options, "c").unwrap_err();
        assert!(err.to_string().contains("encrypted"), "{err}");
    }
}
