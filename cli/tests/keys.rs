//! `statestore keys` through the built binary: patterns, binary keys, JSON and NUL output,
//! more keys than one page, the service's pattern dialect, an invalid and an empty pattern.

mod support;

use std::collections::BTreeSet;

use base64::Engine;
use statestore::Client;
use statestore_server::{EngineConfig, Server, ServerConfig};
use statestore_testkit as kit;
use support::{status, Tool};

/// A server with pages of 3 keys, so that listings span several pages.
async fn tool() -> (Server, Tool, Client) {
    let server = kit::embedded_with_engine(EngineConfig {
        scan_page_keys: 3,
        ..EngineConfig::default()
    })
    .await;
    let client = kit::client(&server).await;
    let tool = Tool::new(server.local_addr());
    (server, tool, client)
}

fn lines(stdout: &[u8]) -> BTreeSet<Vec<u8>> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[tokio::test]
async fn lists_the_matching_keys_across_pages() {
    let (_server, tool, client) = tool().await;
    let keys: Vec<String> = (0..10).map(|i| format!("job:{i}")).collect();
    let refs: Vec<&[u8]> = keys.iter().map(String::as_bytes).collect();
    kit::set_all(&client, &refs).await;
    kit::set_all(&client, &[b"other"]).await;
    let out = tool.expect(&["keys", "job:*"], 0).await;
    let expected: BTreeSet<Vec<u8>> = refs.iter().map(|k| k.to_vec()).collect();
    assert_eq!(lines(&out.stdout), expected);
    let out = tool.expect(&["keys", "job:[0-2]"], 0).await;
    assert_eq!(lines(&out.stdout).len(), 3);
    let out = tool.expect(&["keys", "nothing:*"], 0).await;
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn binary_keys_in_json_and_nul_separated_output() {
    let (_server, tool, client) = tool().await;
    kit::set_all(
        &client,
        &[b"bin:\xff\x00", b"bin:line\nbreak", b"bin:plain"],
    )
    .await;
    let out = tool.expect(&["keys", "bin:*", "--json"], 0).await;
    let mut found = BTreeSet::new();
    for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let object: serde_json::Value = serde_json::from_slice(line).expect("a JSON line");
        let key = object["key"].as_str().expect("a key");
        let bytes = match object.get("key_encoding").and_then(|e| e.as_str()) {
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(key)
                .expect("base64"),
            _ => key.as_bytes().to_vec(),
        };
        found.insert(bytes);
    }
    let expected: BTreeSet<Vec<u8>> = [&b"bin:\xff\x00"[..], b"bin:line\nbreak", b"bin:plain"]
        .iter()
        .map(|k| k.to_vec())
        .collect();
    assert_eq!(found, expected);

    let out = tool.expect(&["keys", "bin:*", "-0"], 0).await;
    let nul: BTreeSet<Vec<u8>> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|k| !k.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    // `bin:\xff\x00` contains a NUL itself: split gives `bin:\xff`.
    assert!(nul.iter().any(|k| k == b"bin:line\nbreak"));
    assert!(nul.iter().any(|k| k == b"bin:plain"));
    assert!(out.stdout.ends_with(b"\0"));
}

#[tokio::test]
async fn patterns_follow_the_service_dialect() {
    let (_server, tool, client) = tool().await;
    kit::set_all(&client, &[b"job:1", b"job:a", b"job:*", b"job:\\x"]).await;
    let listed = |out: std::process::Output| {
        let mut keys: Vec<String> = lines(&out.stdout)
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap())
            .collect();
        keys.sort();
        keys
    };
    let out = tool.expect(&["keys", "job:[!0-9]"], 0).await;
    assert_eq!(listed(out), ["job:*", "job:a"]);
    let out = tool.expect(&["keys", "job:[^0-9]"], 0).await;
    assert_eq!(listed(out), ["job:1"], "`^` is a member, not a negation");
    let out = tool.expect(&["keys", "job:[*]"], 0).await;
    assert_eq!(listed(out), ["job:*"]);
    let out = tool.expect(&["keys", "job:\\*"], 0).await;
    assert_eq!(listed(out), ["job:\\x"], "a backslash is no escape");
}

#[tokio::test]
async fn an_invalid_pattern_is_a_service_error_naming_it() {
    let (_server, tool, _client) = tool().await;
    let out = tool.expect(&["keys", "job:[0-9"], status::SERVICE).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid pattern \"job:[0-9\""),
        "stderr: {stderr}"
    );
}

#[tokio::test]
async fn an_empty_pattern_is_a_usage_error() {
    let (_server, tool, _client) = tool().await;
    tool.expect(&["keys", ""], status::USAGE).await;
}

#[tokio::test]
async fn set_with_persist_sends_the_option() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = ServerConfig {
        persistence: Some(statestore_server::PersistenceConfig::new(dir.path())),
        ..ServerConfig::default()
    };
    let server = Server::start(config.clone()).await.expect("starts");
    let tool = Tool::new(server.local_addr());
    tool.expect(&["set", "kept", "v", "--persist"], 0).await;
    tool.expect(&["set", "dropped", "v"], 0).await;
    server.shutdown().await;
    let server = Server::start(config).await.expect("restarts");
    let tool = Tool::new(server.local_addr());
    let out = tool.expect(&["keys", "*"], 0).await;
    assert_eq!(out.stdout, b"kept\n");
    server.shutdown().await;
}
