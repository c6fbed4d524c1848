//! Connection settings end to end: TLS, username/password (inline and from a file),
//! settings from the environment, and Kubernetes service-account tokens with rotation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use statestore::{Authentication, Client, ConnectOptions, Error, SetOptions, TlsOptions};
use statestore_server::{Credentials, Server, ServerConfig};
use statestore_testkit as kit;
use statestore_testkit::scripted::{Reply, Scripted};
use statestore_testkit::tls::{embedded_over_tls, self_signed, write_file};
use statestore_testkit::SatBroker;

async fn works(client: &Client) {
    assert!(
        client
            .set("k", "v", SetOptions::default())
            .await
            .unwrap()
            .applied
    );
    assert_eq!(client.get("k").await.unwrap().unwrap().value, "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_file_and_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (server, cert) = embedded_over_tls(dir.path()).await;
    let port = server.local_addr().port();
    let tls = TlsOptions::new().ca_file(write_file(dir.path(), "ca.pem", &cert));
    for host in ["127.0.0.1", "localhost"] {
        let client = Client::connect(ConnectOptions::new(host, port).tls(tls.clone()))
            .await
            .unwrap();
        works(&client).await;
    }
    // A client certificate is loaded and offered (this broker does not ask for one).
    let (client_cert, client_key) = self_signed();
    let mutual = tls.clone().client_certificate(
        write_file(dir.path(), "client.pem", client_cert),
        write_file(dir.path(), "client.key", client_key),
    );
    works(
        &Client::connect(ConnectOptions::new("127.0.0.1", port).tls(mutual))
            .await
            .unwrap(),
    )
    .await;

    // A broker whose certificate the CA does not vouch for is refused.
    let (other_ca, _) = self_signed();
    let wrong = TlsOptions::new().ca_file(write_file(dir.path(), "other.pem", other_ca));
    let err = Client::connect(ConnectOptions::new("127.0.0.1", port).tls(wrong))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
    // So is plain TCP to a TLS listener.
    assert!(Client::connect(ConnectOptions::new("127.0.0.1", port))
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn username_and_password_inline_or_from_a_file() {
    let server = Server::start(ServerConfig {
        credentials: Some(Credentials {
            username: "alice".into(),
            password: "s3cret".into(),
        }),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let options = kit::options(server.local_addr());
    let password = |password: &str| {
        options.clone().auth(Authentication::Password {
            username: "alice".into(),
            password: password.into(),
        })
    };
    works(&Client::connect(password("s3cret")).await.unwrap()).await;
    let err = Client::connect(password("guess")).await.unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(Client::connect(options.clone()).await.is_err(), "anonymous");

    let dir = tempfile::tempdir().unwrap();
    let from_file = options.clone().auth(Authentication::PasswordFile {
        username: "alice".into(),
        password_file: write_file(dir.path(), "password", "s3cret\n"),
    });
    works(&Client::connect(from_file).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_from_the_environment_variables() {
    let server = Server::start(ServerConfig {
        credentials: Some(Credentials {
            username: "pod".into(),
            password: "from-a-secret".into(),
        }),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let password_file = write_file(dir.path(), "password", "from-a-secret");
    let port = server.local_addr().port().to_string();
    let vars = [
        ("AIO_BROKER_HOSTNAME", "127.0.0.1"),
        ("AIO_BROKER_TCP_PORT", port.as_str()),
        ("AIO_MQTT_USE_TLS", "false"),
        ("AIO_MQTT_CLIENT_ID", "pod-client"),
        ("AIO_MQTT_USERNAME", "pod"),
        ("AIO_MQTT_PASSWORD_FILE", password_file.to_str().unwrap()),
        ("AIO_MQTT_KEEP_ALIVE", "10"),
        ("AIO_MQTT_SESSION_EXPIRY", "30"),
        ("AIO_MQTT_CLEAN_START", "true"),
    ];
    let options = ConnectOptions::from_lookup(|name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    })
    .unwrap();
    let client = Client::connect(options).await.unwrap();
    assert_eq!(client.client_id(), "pod-client");
    works(&client).await;
}

/// A scripted service on the SAT broker, so that requests can be answered there.
async fn sat_setup() -> (SatBroker, Scripted, tempfile::TempDir, PathBuf) {
    let broker = SatBroker::start().await.expect("SAT broker");
    let service = Scripted::start(broker.addr(), |_| Some(Reply::ok(b"$-1\r\n"))).await;
    let dir = tempfile::tempdir().unwrap();
    let token = write_file(dir.path(), "token", "token-1");
    (broker, service, dir, token)
}

fn sat_options(broker: &SatBroker, token: &Path) -> ConnectOptions {
    kit::options(broker.addr()).auth(Authentication::ServiceAccountToken {
        token_file: token.to_owned(),
        check_interval: Duration::from_millis(20),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_token_is_sent_and_a_rotated_one_is_used() {
    let (broker, _service, _dir, token) = sat_setup().await;
    let client = Client::connect(sat_options(&broker, &token)).await.unwrap();
    assert_eq!(broker.tokens(), [b"token-1".to_vec()]);
    assert_eq!(client.get("k").await.unwrap(), None);

    std::fs::write(&token, "token-2").unwrap();
    broker.presented(b"token-2").await;
    // The client reconnected with the new token and serves requests again.
    assert_eq!(client.get("k").await.unwrap(), None);
    assert_eq!(broker.tokens().last().unwrap(), b"token-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_fails_connect() {
    let (broker, _service, _dir, token) = sat_setup().await;
    broker.refuse(b"token-1");
    let err = Client::connect(sat_options(&broker, &token))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");
    let missing = sat_options(&broker, &token.with_file_name("missing"));
    assert!(matches!(
        Client::connect(missing).await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_subscription_fails_connect() {
    let broker = SatBroker::start().await.expect("SAT broker");
    broker.deny_subscriptions();
    let err = Client::connect(kit::options(broker.addr()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Connection(text) if text.contains("refused the subscription")),
        "{err:?}"
    );
}

/// `connect` reads its files (here the password file) on the blocking pool,
/// not on the runtime's thread. The file is a FIFO whose writer waits for a task of the same
/// single-threaded runtime: a read on the runtime's thread would block that task for good,
/// and the writer then gives up and writes a wrong password.
#[tokio::test]
async fn connect_reads_its_files_off_the_runtime_thread() {
    use std::os::unix::ffi::OsStrExt;

    let server = Server::start(ServerConfig {
        credentials: Some(Credentials {
            username: "alice".into(),
            password: "s3cret".into(),
        }),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("password");
    let path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);

    let (go, runtime_ran) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            let password = match runtime_ran.recv_timeout(kit::DEADLINE / 2) {
                Ok(()) => "s3cret\n",
                Err(_) => "the runtime's thread was blocked\n",
            };
            std::fs::write(&fifo, password).unwrap();
        }
    });
    tokio::spawn(async move { go.send(()) });

    let options = kit::options(server.local_addr()).auth(Authentication::PasswordFile {
        username: "alice".into(),
        password_file: fifo,
    });
    let client = Client::connect(options).await;
    writer.join().unwrap();
    works(&client.expect("connected with the password the runtime's task let through")).await;
}
