//! get, set, delete and vdel through the built binary: options, value sources, binary values,
//! JSON output and exit statuses.

mod support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use base64::Engine;
use statestore::Hlc;
use statestore_testkit as kit;
use support::{json, status, text, Tool};

async fn tool() -> (statestore_server::Server, Tool) {
    let server = kit::embedded().await;
    let tool = Tool::new(server.local_addr());
    (server, tool)
}

#[tokio::test]
async fn set_then_get_prints_the_raw_value_and_the_version() {
    let (_server, tool) = tool().await;
    let set = tool.expect(&["set", "color", "blue"], 0).await;
    let version: Hlc = text(&set).parse().expect("set prints the version");

    let get = tool.expect(&["get", "color"], 0).await;
    assert_eq!(get.stdout, b"blue", "exactly the bytes, no newline");

    let only = tool.expect(&["get", "color", "--version-only"], 0).await;
    assert_eq!(text(&only).parse::<Hlc>().unwrap(), version);

    let object = json(&tool.expect(&["get", "color", "--json"], 0).await);
    assert_eq!(object["value"], "blue");
    assert_eq!(object["encoding"], "utf8");
    assert_eq!(object["version"], version.to_string());
}

#[tokio::test]
async fn binary_values_round_trip_from_stdin_file_and_argument() {
    let (_server, tool) = tool().await;
    let bytes: &[u8] = b"\0a\r\nb\xff\x00\n";
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);

    // stdin with `-`
    tool.run(&["set", "stdin", "-"], bytes).await;
    let get = tool.expect(&["get", "stdin"], 0).await;
    assert_eq!(get.stdout, bytes);
    let object = json(&tool.expect(&["get", "stdin", "--json"], 0).await);
    assert_eq!(object["encoding"], "base64");
    assert_eq!(object["value"], encoded.as_str());

    // --file PATH and --file -
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("value.bin");
    std::fs::write(&path, bytes).unwrap();
    tool.expect(
        &[
            OsStr::new("set"),
            "file".as_ref(),
            "--file".as_ref(),
            path.as_os_str(),
        ],
        0,
    )
    .await;
    assert_eq!(tool.expect(&["get", "file"], 0).await.stdout, bytes);
    let piped = tool.run(&["set", "file-stdin", "--file", "-"], bytes).await;
    support::check(&piped, 0, "set --file -");
    assert_eq!(tool.expect(&["get", "file-stdin"], 0).await.stdout, bytes);

    // An argument that is not UTF-8, as key and as value.
    let key = OsStr::from_bytes(b"k\xfe");
    let value = OsStr::from_bytes(b"v\xff\x01");
    tool.expect(&[OsStr::new("set"), key, value], 0).await;
    let get = tool.expect(&[OsStr::new("get"), key], 0).await;
    assert_eq!(get.stdout, b"v\xff\x01");

    // vdel with the value from stdin
    let vdel = tool.run(&["vdel", "stdin", "-"], bytes).await;
    support::check(&vdel, 0, "vdel -");
    tool.expect(&["get", "stdin"], status::NOT_FOUND).await;

    // An unreadable file is a clear failure (status 1), nothing is sent.
    let missing = dir.path().join("missing");
    let output = tool
        .run(
            &[
                OsStr::new("set"),
                "k".as_ref(),
                "--file".as_ref(),
                missing.as_os_str(),
            ],
            b"",
        )
        .await;
    support::check(&output, 1, "unreadable file");
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing"));
}

#[tokio::test]
async fn nx_and_nex_conditions() {
    let (_server, tool) = tool().await;
    tool.expect(&["set", "lock", "me", "--nx"], 0).await;
    let refused = tool
        .expect(&["set", "lock", "you", "--nx"], status::CONDITION)
        .await;
    assert!(refused.stdout.is_empty());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--nx"));

    // NEX: the same value applies (a renewal), another does not.
    tool.expect(&["set", "lock", "me", "--nex"], 0).await;
    let object = json(
        &tool
            .expect(
                &["set", "lock", "you", "--nex", "--json"],
                status::CONDITION,
            )
            .await,
    );
    assert_eq!(object["applied"], false);
    assert_eq!(tool.expect(&["get", "lock"], 0).await.stdout, b"me");
    tool.expect(&["set", "other", "x", "--nex", "--json"], 0)
        .await;
}

#[tokio::test]
async fn px_and_expiry_set_a_time_to_live() {
    let (_server, tool) = tool().await;
    let watcher = kit::connect(tool.addr).await;
    for (key, flag, ttl) in [("ms", "--px", "150"), ("human", "--expiry", "150ms")] {
        let mut changes = watcher.observe(key).await.unwrap();
        let object = json(
            &tool
                .expect(&["set", key, "v", flag, ttl, "--json"], 0)
                .await,
        );
        assert_eq!(object["applied"], true);
        // The key expires: set, then delete, without anyone deleting it.
        assert!(matches!(
            changes.next().await,
            Some(statestore::KeyEvent::Set { .. })
        ));
        assert!(matches!(
            changes.next().await,
            Some(statestore::KeyEvent::Delete { .. })
        ));
        tool.expect(&["get", key], status::NOT_FOUND).await;
    }
    tool.expect(&["set", "k", "v", "--px", "0"], status::USAGE)
        .await;
    tool.expect(
        &["set", "k", "v", "--px", "5", "--expiry", "1s"],
        status::USAGE,
    )
    .await;
    tool.expect(&["set", "k", "v", "--expiry", "10"], status::USAGE)
        .await;
}

#[tokio::test]
async fn fencing_tokens_protect_keys() {
    let (_server, tool) = tool().await;
    let token = text(&tool.expect(&["set", "lock", "me", "--nx"], 0).await);
    tool.expect(&["set", "data", "v1", "--fencing-token", &token], 0)
        .await;

    // Without a token, or with an older one: service errors.
    let refused = tool.expect(&["set", "data", "v2"], status::SERVICE).await;
    assert!(String::from_utf8_lossy(&refused.stderr).contains("fencing token"));
    let old: Hlc = token.parse().unwrap();
    let older = Hlc::new(old.wall_ms - 1000, old.node.clone()).to_string();
    tool.expect(
        &["set", "data", "v3", "--fencing-token", &older],
        status::SERVICE,
    )
    .await;
    tool.expect(&["delete", "data"], status::SERVICE).await;
    tool.expect(&["vdel", "data", "v1"], status::SERVICE).await;

    tool.expect(&["vdel", "data", "v1", "--fencing-token", &token], 0)
        .await;
    tool.expect(&["set", "data", "v4", "--fencing-token", &token], 0)
        .await;
    tool.expect(&["delete", "data", "--fencing-token", &token], 0)
        .await;
    tool.expect(
        &["set", "x", "v", "--fencing-token", "not-an-hlc"],
        status::USAGE,
    )
    .await;
}

#[tokio::test]
async fn a_key_left_fenced_by_a_gone_lock_is_cleaned_up_as_the_error_says() {
    let (_server, tool) = tool().await;
    // A holder writes under its lock, then the lock goes away: the key stays fenced.
    let token = text(
        &tool
            .expect(&["set", "locks/job", "worker", "--nx"], 0)
            .await,
    );
    tool.expect(&["set", "job", "half-done", "--fencing-token", &token], 0)
        .await;
    tool.expect(&["delete", "locks/job"], 0).await;

    // A plain delete is refused; the message names the key and says how to clean it up.
    let refused = tool.expect(&["delete", "job"], status::SERVICE).await;
    let message = String::from_utf8_lossy(&refused.stderr);
    for expected in [
        "key \"job\"",
        "a fencing token is required",
        "current version",
        "statestore get \"job\" --version-only",
        "statestore delete \"job\" --fencing-token",
    ] {
        assert!(message.contains(expected), "{expected:?} in {message:?}");
    }
    let refused = tool.expect(&["set", "job", "fresh"], status::SERVICE).await;
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--version-only"));

    // What it says works: the key's version as the token deletes it, and the key is then
    // an ordinary one again.
    let version = text(&tool.expect(&["get", "job", "--version-only"], 0).await);
    tool.expect(&["delete", "job", "--fencing-token", &version], 0)
        .await;
    tool.expect(&["get", "job"], status::NOT_FOUND).await;
    tool.expect(&["set", "job", "fresh"], 0).await;
    tool.expect(&["delete", "job"], 0).await;
}

#[tokio::test]
async fn del_is_delete_with_its_fencing_token_option() {
    let (_server, tool) = tool().await;
    let token = text(&tool.expect(&["set", "job", "v", "--nx"], 0).await);
    tool.expect(&["set", "job", "v", "--fencing-token", &token], 0)
        .await;
    tool.expect(&["del", "job"], status::SERVICE).await;
    tool.expect(&["del", "job", "--fencing-token", &token], 0)
        .await;
    tool.expect(&["del", "job"], status::NOT_FOUND).await;
}

#[tokio::test]
async fn delete_and_vdel_outcomes() {
    let (_server, tool) = tool().await;
    tool.expect(&["set", "k", "v"], 0).await;
    let deleted = tool.expect(&["delete", "k"], 0).await;
    assert!(deleted.stdout.is_empty(), "a plain delete is silent");
    let object = json(
        &tool
            .expect(&["delete", "k", "--json"], status::NOT_FOUND)
            .await,
    );
    assert_eq!(object["outcome"], "not_found");
    tool.expect(&["get", "k"], status::NOT_FOUND).await;
    tool.expect(&["get", "k", "--json"], status::NOT_FOUND)
        .await;

    tool.expect(&["set", "k", "v"], 0).await;
    let object = json(
        &tool
            .expect(&["vdel", "k", "other", "--json"], status::CONDITION)
            .await,
    );
    assert_eq!(object["outcome"], "value_mismatch");
    tool.expect(&["vdel", "missing", "v"], status::NOT_FOUND)
        .await;
    let object = json(&tool.expect(&["vdel", "k", "v", "--json"], 0).await);
    assert_eq!(object["outcome"], "deleted");
    assert!(object["version"].is_string());
}

#[tokio::test]
async fn usage_errors_exit_with_2() {
    let (_server, tool) = tool().await;
    for args in [
        &["set", "k"][..],                    // no value
        &["set", "k", "v", "--nx", "--nex"],  // exclusive conditions
        &["set", "k", "v", "--file", "f"],    // two values
        &["get"],                             // no key
        &["get", "", "--json"],               // empty key (checked by the library)
        &["get", "k", "--timeout", "soon"],   // bad duration
        &["get", "k", "--client-id", "a+b"],  // bad client id
        &["get", "k", "--tls-cert", "c.pem"], // cert without key
        &["frobnicate"],                      // unknown subcommand
    ] {
        let output = tool.run(args, b"").await;
        assert_eq!(output.status.code(), Some(status::USAGE), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?} explains itself");
    }
}

#[tokio::test]
async fn connection_failures_and_timeouts_have_their_own_status() {
    // Nothing listens on a port that was just free.
    let port = kit::free_port().unwrap();
    let nowhere = Tool::new(([127, 0, 0, 1], port).into());
    let output = nowhere
        .expect(&["get", "k", "--timeout", "2s"], status::CONNECTION)
        .await;
    assert!(String::from_utf8_lossy(&output.stderr).contains("connect"));

    // A broker without a state store: the request is never answered.
    let broker = kit::Mosquitto::start().expect("mosquitto (scripts/setup.sh)");
    let silent = Tool::new(broker.addr());
    let output = silent
        .expect(&["get", "k", "--timeout", "500ms"], status::TIMEOUT)
        .await;
    assert!(String::from_utf8_lossy(&output.stderr).contains("no response"));
    silent
        .expect(&["set", "k", "v", "--timeout", "500ms"], status::TIMEOUT)
        .await;
}

#[tokio::test]
async fn connection_settings_come_from_aio_variables_and_flags_win() {
    let (server, tool) = tool().await;
    tool.expect(&["set", "k", "from-flags"], 0).await;
    let addr = server.local_addr();

    // Only the environment: host, port, plain TCP.
    let mut command = support::bare_command();
    command
        .args(["get", "k"])
        .env("AIO_BROKER_HOSTNAME", addr.ip().to_string())
        .env("AIO_BROKER_TCP_PORT", addr.port().to_string())
        .env("AIO_MQTT_USE_TLS", "false")
        .env("AIO_MQTT_CLIENT_ID", "from-env");
    let output = support::finish(command, b"").await;
    support::check(&output, 0, "AIO_* only");
    assert_eq!(output.stdout, b"from-flags");

    // A wrong port in the environment, the right one as a flag.
    let mut command = support::bare_command();
    command
        .args(["get", "--port", &addr.port().to_string(), "k"])
        .env("AIO_BROKER_HOSTNAME", addr.ip().to_string())
        .env("AIO_BROKER_TCP_PORT", "1")
        .env("AIO_MQTT_USE_TLS", "false");
    support::check(&support::finish(command, b"").await, 0, "--port wins");

    // A malformed variable is a usage error naming it.
    let mut command = support::bare_command();
    command
        .args(["get", "k"])
        .env("AIO_BROKER_HOSTNAME", addr.ip().to_string())
        .env("AIO_MQTT_USE_TLS", "perhaps");
    let output = support::finish(command, b"").await;
    support::check(&output, status::USAGE, "bad AIO_MQTT_USE_TLS");
    assert!(String::from_utf8_lossy(&output.stderr).contains("AIO_MQTT_USE_TLS"));
}

#[tokio::test]
async fn help_documents_every_subcommand_with_examples_and_exit_statuses() {
    let root = support::finish(
        {
            let mut command = support::bare_command();
            command.arg("--help");
            command
        },
        b"",
    )
    .await;
    let root = String::from_utf8_lossy(&root.stdout).into_owned();
    assert!(root.contains("Exit status:") && root.contains("condition not met"));
    for subcommand in ["get", "set", "delete", "vdel", "watch", "lock", "serve"] {
        let mut command = support::bare_command();
        command.args([subcommand, "--help"]);
        let output = support::finish(command, b"").await;
        let help = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0));
        assert!(
            help.contains("Examples:") && help.contains(&format!("statestore {subcommand}")),
            "{subcommand}: {help}"
        );
        assert!(root.contains(subcommand));
    }
}

#[tokio::test]
async fn verbose_logs_each_request_to_stderr_but_never_a_value() {
    let (_server, tool) = tool().await;
    let quiet = tool.expect(&["set", "color", "blue-secret"], 0).await;
    assert!(quiet.stderr.is_empty(), "nothing logged without -v");

    let traced = tool
        .run(&["set", "color", "green-secret", "-vvv"], b"")
        .await;
    assert_eq!(traced.status.code(), Some(0));
    let log = String::from_utf8_lossy(&traced.stderr);
    assert!(log.contains("connected to the broker"), "{log}");
    assert!(
        log.contains("request sent") && log.contains("verb=\"SET\" key=color"),
        "{log}"
    );
    assert!(
        log.contains("response received") && log.contains("response=OK"),
        "{log}"
    );
    assert!(!log.contains("green-secret"), "a value in the log: {log}");

    let connections = tool.run(&["get", "color", "-v"], b"").await;
    let log = String::from_utf8_lossy(&connections.stderr);
    assert!(log.contains("connected to the broker"), "{log}");
    assert!(
        !log.contains("request sent"),
        "-v logs connections only: {log}"
    );

    let mut serve = support::bare_command();
    serve.args(["serve", "-v"]);
    let serve = kit::within("serve -v", serve.output()).await.expect("runs");
    assert_eq!(serve.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&serve.stderr).contains("--log-level"));
}
