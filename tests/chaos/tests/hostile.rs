//! The Rust clients (async and blocking) against the malicious state store of
//! `statestore-chaos hostile`: every call of the shared catalogue (`hostile.json`) ends within
//! its bound with the expected error or value, the client stays usable, and an observation
//! flooded with broken and valid notifications delivers exactly the valid ones.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use statestore::{Client, ConnectOptions, DeleteOptions, KeyEvent, SetOptions};
use statestore_testkit::{rss_kib, Fixture, DEADLINE};

/// The malicious service; stopped (its stdin closed) on drop.
struct Hostile {
    _fixture: Fixture,
    port: u16,
}

impl Hostile {
    fn start() -> Hostile {
        let mut command = Command::new(env!("CARGO_BIN_EXE_statestore-chaos"));
        command.args(["hostile", "--for", "120s"]);
        let (fixture, line) = Fixture::start(command).expect("start statestore-chaos hostile");
        let port = line
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Hostile {
            _fixture: fixture,
            port,
        }
    }

    fn options(&self) -> ConnectOptions {
        ConnectOptions::new("127.0.0.1", self.port).default_timeout(Duration::from_millis(500))
    }
}

fn catalogue() -> Value {
    serde_json::from_str(include_str!("../hostile.json")).expect("hostile.json")
}

/// Checks one call's result against its catalogue entry.
fn judge(call: &Value, result: Result<Option<Vec<u8>>, statestore::Error>, took: Duration) {
    let what = format!("{} {}", call["op"], call["key"]);
    let timeout = Duration::from_millis(catalogue()["timeout_ms"].as_u64().unwrap());
    assert!(
        took < timeout + Duration::from_secs(5),
        "{what} took {took:?}"
    );
    let code = match &result {
        Ok(_) => "OK",
        Err(error) => error.code().name(),
    };
    let allowed: Vec<&str> = call["expect"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        allowed.contains(&code),
        "{what}: {code} ({result:?}), expected one of {allowed:?}"
    );
    if let Ok(Some(value)) = &result {
        if let Some(len) = call["value_len"].as_u64() {
            assert_eq!(value.len() as u64, len, "{what}");
        }
        if let Some(hex) = call["value_hex"].as_str() {
            assert_eq!(hex::encode(value), hex, "{what}");
        }
    }
}

async fn call_async(client: &Client, call: &Value) -> Result<Option<Vec<u8>>, statestore::Error> {
    let key = call["key"].as_str().unwrap().to_string();
    match call["op"].as_str().unwrap() {
        "get" => client.get(key).await.map(|v| v.map(|v| v.value.to_vec())),
        "set" => client
            .set(key, "v", SetOptions::default())
            .await
            .map(|_| None),
        "delete" => client
            .delete(key, DeleteOptions::default())
            .await
            .map(|_| None),
        other => panic!("unknown op {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_client_survives_the_malicious_service() {
    let hostile = Hostile::start();
    let client = Client::connect(hostile.options()).await.unwrap();
    let catalogue = catalogue();
    for call in catalogue["calls"].as_array().unwrap() {
        let start = Instant::now();
        let result = tokio::time::timeout(DEADLINE, call_async(&client, call))
            .await
            .unwrap_or_else(|_| panic!("{call} hangs"));
        judge(call, result, start.elapsed());
    }
    let after = &catalogue["after"];
    let start = Instant::now();
    judge(after, call_async(&client, after).await, start.elapsed());

    // The notification storm: only well-formed notifications of the observed key arrive, in
    // order, the last one being "final".
    let notify = &catalogue["notify"];
    let mut observation = client
        .observe(notify["key"].as_str().unwrap().to_string())
        .await
        .unwrap();
    let mut sets = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        while let Some(event) = observation.next().await {
            match event {
                KeyEvent::Set { value, .. } => {
                    let done = value == notify["final"].as_str().unwrap();
                    sets.push(value);
                    if done {
                        break;
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    })
    .await
    .expect("the final notification within the deadline");
    let storm = notify["storm"].as_u64().unwrap() as usize;
    assert_eq!(
        sets.len(),
        storm + 2,
        "the huge one, the storm, the final one"
    );
    assert_eq!(sets[0].len() as u64, notify["huge_len"].as_u64().unwrap());
    for (n, value) in sets[1..=storm].iter().enumerate() {
        assert_eq!(value, n.to_string().as_bytes());
    }
    client.close().await.unwrap();
}

#[test]
fn blocking_client_survives_the_malicious_service() {
    let hostile = Hostile::start();
    let client = statestore::blocking::Client::connect(hostile.options()).unwrap();
    let catalogue = catalogue();
    let calls = catalogue["calls"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&catalogue["after"]]);
    for call in calls {
        let key = call["key"].as_str().unwrap().to_string();
        let start = Instant::now();
        let result = match call["op"].as_str().unwrap() {
            "get" => client.get(key).map(|v| v.map(|v| v.value.to_vec())),
            "set" => client.set(key, "v", SetOptions::default()).map(|_| None),
            "delete" => client.delete(key, DeleteOptions::default()).map(|_| None),
            other => panic!("unknown op {other}"),
        };
        judge(call, result, start.elapsed());
    }
    let notify = &catalogue["notify"];
    let mut observation = client
        .observe(notify["key"].as_str().unwrap().to_string())
        .unwrap();
    let deadline = Instant::now() + DEADLINE;
    let mut count = 0;
    loop {
        assert!(Instant::now() < deadline, "no final notification");
        match observation.next_timeout(Duration::from_secs(1)).unwrap() {
            Some(KeyEvent::Set { value, .. }) => {
                count += 1;
                if value == notify["final"].as_str().unwrap() {
                    break;
                }
            }
            Some(other) => panic!("unexpected {other:?}"),
            None => {}
        }
    }
    assert_eq!(count, notify["storm"].as_u64().unwrap() + 2);
    client.close().unwrap();
}

/// Resident memory of this process, in KiB.
fn own_rss_kib() -> u64 {
    rss_kib(std::process::id()).expect("this process's resident memory")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_flood_to_an_unread_observation_stays_bounded() {
    let hostile = Hostile::start();
    let client = Client::connect(hostile.options()).await.unwrap();
    let before = own_rss_kib();
    // Observed, never read: the application is busy elsewhere. A second observation of
    // another client-side key, read, tells when the flood is over ("final" comes last).
    let _unread = client.observe("h/notify-flood").await.unwrap();
    // The watcher registers while 100 MiB of notifications are under way on the same broker:
    // on a loaded machine that takes longer than the catalogue's 500 ms timeout.
    let watcher = Client::connect(hostile.options().default_timeout(DEADLINE))
        .await
        .unwrap();
    let mut read = watcher.observe("h/notify-flood").await.unwrap();
    let mut peak = before;
    tokio::time::timeout(DEADLINE, async {
        while let Some(event) = read.next().await {
            peak = peak.max(own_rss_kib());
            if matches!(&event, KeyEvent::Set { value, .. } if value == "final") {
                break;
            }
        }
    })
    .await
    .expect("the flood ends within the deadline");
    peak = peak.max(own_rss_kib());
    let grown = peak.saturating_sub(before);
    assert!(
        grown < 64 * 1024,
        "an unread observation made the process grow by {} MiB (100 MiB of notifications)",
        grown / 1024
    );
}
