//! SCAN over MQTT, black box: the wire format of protocol-facts.md, paging by token, a scan
//! of thousands of keys while another client adds and deletes keys, and malformed tokens.

mod support;

use std::collections::{BTreeSet, VecDeque};

use bytes::Bytes;
use statestore::protocol::{Response, ScanPage};
use statestore_server::EngineConfig;
use support::wire::{err, resp};
use support::{unique, Env, Kind, Probe};

const OK: &[u8] = b"+OK\r\n";

fn page_of(payload: &Bytes) -> ScanPage {
    match Response::decode(payload) {
        Ok(Response::Scan(page)) => page,
        other => panic!(
            "not a SCAN page: {other:?} ({:?})",
            String::from_utf8_lossy(payload)
        ),
    }
}

/// Every page of a scan; `between` runs after each page that has a successor.
async fn scan_all(
    probe: &mut Probe,
    pattern: &[u8],
    mut between: impl AsyncFnMut(usize),
) -> Vec<Bytes> {
    let mut keys = Vec::new();
    let mut token: Option<Bytes> = None;
    for pages in 0.. {
        let payload = match &token {
            Some(token) => resp(&[b"SCAN", pattern, token]),
            None => resp(&[b"SCAN", pattern]),
        };
        let reply = probe.request(&payload).await;
        assert_eq!(reply.property("__stat"), Some("200"));
        assert_eq!(reply.property("__ts"), None, "a SCAN page has no version");
        let page = page_of(&reply.payload);
        keys.extend(page.keys);
        match page.token {
            Some(next) => token = Some(next),
            None => break,
        }
        between(pages).await;
    }
    keys
}

/// Sends every SET before reading the replies (much faster than one round trip each).
async fn set_many(probe: &mut Probe, keys: &[Bytes]) {
    for key in keys {
        probe
            .publish(&resp(&[b"SET", key, b"v"]), probe.envelope())
            .await;
    }
    for _ in keys {
        probe.next_reply().await.expect(OK);
    }
}

async fn scan_wire_format(env: Env) {
    let mut c = env.client("scan").await;
    let prefix = unique("wire");
    let k1 = format!("{prefix}:1");
    let k2 = format!("{prefix}:2");
    for key in [&k1, &k2] {
        c.request(&resp(&[b"SET", key.as_bytes(), b"v"]))
            .await
            .expect(OK);
    }
    let pattern = format!("{prefix}:*");
    let mut expected = b"*1\r\n*2\r\n".to_vec();
    for key in [&k1, &k2] {
        expected.extend_from_slice(format!("${}\r\n{key}\r\n", key.len()).as_bytes());
    }
    c.request(&resp(&[b"SCAN", pattern.as_bytes()]))
        .await
        .expect(&expected);
    c.request(&resp(&[b"SCAN", b"no-such-prefix:*"]))
        .await
        .expect(b"*1\r\n*0\r\n");
    c.request(&resp(&[b"SCAN", pattern.as_bytes(), b"not a token"]))
        .await
        .expect(&err("invalid continuation token"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_format_embedded() {
    scan_wire_format(Env::start(Kind::Embedded).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_format_external_mosquitto() {
    scan_wire_format(Env::start(Kind::External).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_carry_a_token_until_the_last() {
    let env = Env::with_engine(
        Kind::Embedded,
        EngineConfig {
            scan_page_keys: 2,
            ..EngineConfig::default()
        },
    )
    .await;
    let mut c = env.client("pages").await;
    let keys: Vec<Bytes> = (0..5).map(|i| Bytes::from(format!("p:{i}"))).collect();
    set_many(&mut c, &keys).await;
    let first = c.request(&resp(&[b"SCAN", b"p:*"])).await;
    assert!(first
        .payload
        .starts_with(b"*2\r\n*2\r\n$3\r\np:0\r\n$3\r\np:1\r\n$"));
    let mut pages = 0;
    let listed = scan_all(&mut c, b"p:*", async |_| pages += 1).await;
    assert_eq!(pages, 2, "5 keys by 2 are 3 pages");
    assert_eq!(listed, keys);
}

/// 10 000 keys, pages of 250, and between pages a second client deletes some keys and
/// creates others: every key present for the whole scan is listed exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_under_churn_lists_every_stable_key_exactly_once() {
    let env = Env::with_engine(
        Kind::Embedded,
        EngineConfig {
            scan_page_keys: 250,
            ..EngineConfig::default()
        },
    )
    .await;
    let mut scanner = env.client("scanner").await;
    let mut writer = env.client("writer").await;
    let key = |i: usize| Bytes::from(format!("churn:{i:05}"));
    let all: Vec<Bytes> = (0..10_000).map(key).collect();
    set_many(&mut writer, &all).await;
    let deleted_before: Vec<Bytes> = (0..10_000).step_by(10).map(key).collect();
    for k in &deleted_before {
        writer.request(&resp(&[b"DEL", k])).await.expect(b":1\r\n");
    }
    // Keys ending in 5 are deleted during the scan, a few at a time, from both ends.
    let mut doomed: VecDeque<Bytes> = (5..10_000).step_by(10).map(key).collect();
    let mut created = Vec::new();
    let listed = scan_all(&mut scanner, b"churn:*", async |page| {
        for n in 0..25 {
            let fresh = Bytes::from(format!(
                "churn:{:05}+{page}-{n}",
                (page * 397 + n * 41) % 10_000
            ));
            writer
                .request(&resp(&[b"SET", &fresh, b"v"]))
                .await
                .expect(OK);
            created.push(fresh);
            let victim = if n % 2 == 0 {
                doomed.pop_back()
            } else {
                doomed.pop_front()
            };
            if let Some(victim) = victim {
                writer
                    .request(&resp(&[b"DEL", &victim]))
                    .await
                    .expect(b":1\r\n");
            }
        }
    })
    .await;
    // 9 000 keys by 250 are 36 pages at least.
    assert!(
        created.len() >= 35 * 25,
        "only {} keys created",
        created.len()
    );
    let count = listed.len();
    let listed: BTreeSet<Bytes> = listed.into_iter().collect();
    assert_eq!(listed.len(), count, "a key was listed twice");
    let stable: BTreeSet<Bytes> = (0..10_000)
        .filter(|i| i % 10 != 0 && i % 10 != 5)
        .map(key)
        .collect();
    let missing: Vec<_> = stable.difference(&listed).take(5).collect();
    assert!(missing.is_empty(), "stable keys not listed: {missing:?}...");
    assert!(
        deleted_before.iter().all(|k| !listed.contains(k)),
        "a key deleted before the scan was listed"
    );
}

/// With a small maximum packet size, pages shrink to fit it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_fit_a_small_maximum_packet_size() {
    let server = statestore_server::Server::start(statestore_server::ServerConfig {
        max_packet_size: 4_096,
        ..statestore_server::ServerConfig::default()
    })
    .await
    .expect("server starts");
    let mut c = Probe::connect(server.local_addr(), &unique("small")).await;
    let keys: Vec<Bytes> = (0..100)
        .map(|i| Bytes::from(format!("{i:03}{}", "k".repeat(60))))
        .collect();
    set_many(&mut c, &keys).await;
    let mut pages = 0;
    let mut largest = 0;
    let mut token: Option<Bytes> = None;
    let mut listed = Vec::new();
    loop {
        let payload = match &token {
            Some(token) => resp(&[b"SCAN", b"*", token]),
            None => resp(&[b"SCAN", b"*"]),
        };
        let reply = c.request(&payload).await;
        largest = largest.max(reply.payload.len());
        pages += 1;
        let page = page_of(&reply.payload);
        listed.extend(page.keys);
        match page.token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert!(largest <= 1_024, "a page of {largest} bytes");
    assert!(pages >= 7, "{pages} pages");
    assert_eq!(listed, keys);
}
