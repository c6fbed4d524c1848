//! Connection security through the Rust clients, on the fixtures of
//! `statestore-chaos secure` and the shared cases of `tests/chaos/secure.json`: TLS with a CA
//! and with a client certificate, passwords inline and from a file work; a wrong CA, an
//! expired certificate, a missing client certificate, a wrong password, TLS against a
//! plaintext listener fail with a connection error (no fallback); no error message or log
//! record contains a password.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use statestore::bindings::logs::{set_log_sink, LogLevel};
use statestore::bindings::OptionValue;
use statestore::{Client, ConnectOptions, SetOptions};
use statestore_testkit::Fixture;

/// The library's log sink is one per process, and `cargo test` runs this file's tests in one
/// process at once: the tests that set a sink take turns, or one would replace the other's.
static LOG_SINK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The fixtures; stopped (stdin closed) on drop.
struct Secure {
    _process: Fixture,
    fixture: Value,
}

impl Secure {
    fn start() -> Secure {
        let mut command = Command::new(env!("CARGO_BIN_EXE_statestore-chaos"));
        command.arg("secure");
        let (process, line) = Fixture::start(command).expect("start statestore-chaos secure");
        let fixture = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        Secure {
            _process: process,
            fixture,
        }
    }

    /// The options of `case`, with `$name` values taken from the fixture.
    fn options(&self, case: &Value, timeout: Duration) -> ConnectOptions {
        let port = self.fixture["ports"][case["port"].as_str().unwrap()]
            .as_u64()
            .unwrap() as u16;
        let mut options = ConnectOptions::new("127.0.0.1", port).default_timeout(timeout);
        for (name, value) in case["options"].as_object().unwrap() {
            let value = value.as_str().unwrap();
            let value = match value.strip_prefix('$') {
                Some(field) => self.fixture[field].as_str().unwrap().to_string(),
                None => value.to_string(),
            };
            options
                .set_option(name, OptionValue::Str(value))
                .unwrap_or_else(|e| panic!("{}: option {name}: {e}", case["name"]));
        }
        options
    }
}

fn cases() -> Value {
    serde_json::from_str(include_str!("../secure.json")).expect("secure.json")
}

/// Every password a case mentions, and the fixture's.
fn secrets(secure: &Secure, case: &Value) -> Vec<String> {
    let mut secrets = vec![
        secure.fixture["password"].as_str().unwrap().to_string(),
        secure.fixture["sat_token"].as_str().unwrap().to_string(),
    ];
    if let Some(password) = case["options"]["password"].as_str() {
        if !password.starts_with('$') {
            secrets.push(password.to_string());
        }
    }
    secrets
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_connects_or_fails_clearly_and_no_secret_leaks() {
    let _sink = LOG_SINK.lock().await;
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    set_log_sink(LogLevel::Trace, {
        let logs = logs.clone();
        move |record| {
            logs.lock()
                .unwrap()
                .push(format!("{} {}", record.target, record.message))
        }
    })
    .expect("log sink");
    let secure = Secure::start();
    let cases = cases();
    let timeout = Duration::from_millis(cases["timeout_ms"].as_u64().unwrap());
    for case in cases["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let connected = tokio::time::timeout(
            Duration::from_secs(60),
            Client::connect(secure.options(case, timeout)),
        )
        .await
        .unwrap_or_else(|_| panic!("{name}: connect hangs"));
        let code = match &connected {
            Ok(_) => "OK",
            Err(error) => error.code().name(),
        };
        assert_eq!(
            code,
            case["expect"].as_str().unwrap(),
            "{name}: {connected:?}"
        );
        match connected {
            Ok(client) => {
                assert!(
                    client
                        .set("secure", name.to_string(), SetOptions::default())
                        .await
                        .unwrap()
                        .applied
                );
                assert_eq!(client.get("secure").await.unwrap().unwrap().value, name);
                client.close().await.unwrap();
            }
            Err(error) => {
                for secret in secrets(&secure, case) {
                    assert!(
                        !error.to_string().contains(&secret),
                        "{name}: the error shows a password: {error}"
                    );
                    assert!(
                        !format!("{error:?}").contains(&secret),
                        "{name}: the error's Debug shows a password"
                    );
                }
            }
        }
    }
    // (A connect that fails returns its error without logging; whatever was logged at any
    // level must not show a password either.)
    let logs = logs.lock().unwrap();
    for case in cases["cases"].as_array().unwrap() {
        for secret in secrets(&secure, case) {
            for line in logs.iter() {
                assert!(
                    !line.contains(&secret),
                    "a log record shows a password: {line}"
                );
            }
        }
    }
}

#[test]
fn debug_formatting_hides_secrets() {
    let mut options = ConnectOptions::new("127.0.0.1", 1883);
    options
        .set_option("username", OptionValue::Str("me".into()))
        .unwrap();
    options
        .set_option("password", OptionValue::Str("Do-Not-Print-Me-42".into()))
        .unwrap();
    let shown = format!("{options:?}");
    assert!(!shown.contains("Do-Not-Print-Me-42"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_file_readable_by_others_gets_a_warning() {
    let _sink = LOG_SINK.lock().await;
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    set_log_sink(LogLevel::Warn, {
        let warnings = warnings.clone();
        move |record| warnings.lock().unwrap().push(record.message.clone())
    })
    .expect("log sink");
    let secure = Secure::start();
    let cases = cases();
    let case = cases["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["warning"].is_string())
        .unwrap();
    let client = Client::connect(secure.options(case, Duration::from_secs(3)))
        .await
        .unwrap();
    client.close().await.unwrap();
    let warnings = warnings.lock().unwrap();
    assert!(
        warnings.iter().any(|w| w.contains("permission")),
        "no warning about the password file's permissions: {warnings:?}"
    );
}
