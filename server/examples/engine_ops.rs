//! Rough engine throughput per operation (release mode):
//! `cargo run --release -p statestore-server --no-default-features --example engine_ops [KEYS]`
//! (default 1 000 000 keys).
//! Creating and deleting keys pay for the ordered SCAN index; GET and overwrites do not.
//! The full scans page through every key, so they measure the pattern matcher on each one.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use statestore::protocol::{Hlc, Response};
use statestore_server::engine::{Engine, EngineConfig, RequestContext};

fn resp(args: &[&[u8]]) -> Bytes {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    Bytes::from(out)
}

/// The request context of every timed request: one client, a timestamp, no fencing.
fn context(ts: &str, now: u64) -> RequestContext<'_> {
    RequestContext {
        client_id: "bench",
        timestamp: Some(ts),
        fencing_token: None,
        persist: false,
        now_ms: now,
    }
}

fn run(label: &str, engine: &mut Engine, payloads: &[Bytes], now: u64) {
    let ts = Hlc::new(now, "bench").to_string();
    let ctx = context(&ts, now);
    let started = Instant::now();
    for payload in payloads {
        black_box(engine.apply_payload(payload, &ctx).response.encode());
    }
    let elapsed = started.elapsed();
    println!(
        "{label:<22} {:>6.0} ns/op  {:>5.2} M ops/s",
        elapsed.as_nanos() as f64 / payloads.len() as f64,
        payloads.len() as f64 / elapsed.as_secs_f64() / 1e6
    );
}

/// Every page of `SCAN pattern` from the first to the last, timed as a whole; returns the
/// number of keys listed.
fn full_scan(label: &str, engine: &mut Engine, pattern: &[u8], now: u64) -> usize {
    let ts = Hlc::new(now, "bench").to_string();
    let ctx = context(&ts, now);
    let started = Instant::now();
    let (mut listed, mut pages) = (0, 0);
    let mut token: Option<Bytes> = None;
    loop {
        let payload = match &token {
            Some(token) => resp(&[b"SCAN", pattern, token]),
            None => resp(&[b"SCAN", pattern]),
        };
        let response = engine.apply_payload(&payload, &ctx).response;
        black_box(response.encode());
        let Response::Scan(page) = response else {
            panic!("SCAN answered {response:?}");
        };
        pages += 1;
        listed += page.keys.len();
        match page.token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    let elapsed = started.elapsed();
    println!(
        "{label:<22} {:>6.1} ms  ({listed} keys, {pages} pages)",
        elapsed.as_secs_f64() * 1e3
    );
    listed
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1_000_000);
    let now = statestore::protocol::hlc::unix_ms_now();
    let keys: Vec<Bytes> = (0..n)
        .map(|i| Bytes::from(format!("sensor:{:08}", (i * 7_919) % n)))
        .collect();
    let set: Vec<Bytes> = keys
        .iter()
        .map(|k| resp(&[b"SET", k, b"0123456789abcdef"]))
        .collect();
    let get: Vec<Bytes> = keys.iter().map(|k| resp(&[b"GET", k])).collect();
    let del: Vec<Bytes> = keys.iter().map(|k| resp(&[b"DEL", k])).collect();
    let mut engine = Engine::new(EngineConfig::default());
    run("SET (new keys)", &mut engine, &set, now);
    run("SET (overwrite)", &mut engine, &set, now);
    run("GET", &mut engine, &get, now);
    let scan = resp(&[b"SCAN", b"sensor:0000*"]);
    run(
        "SCAN prefix (1000 hits)",
        &mut engine,
        std::slice::from_ref(&scan),
        now,
    );
    // Over every key: `*` lists them all, `*7?` examines them all and lists a tenth.
    for _ in 0..3 {
        assert_eq!(full_scan("SCAN * (all pages)", &mut engine, b"*", now), n);
        full_scan("SCAN *7? (all pages)", &mut engine, b"*7?", now);
    }
    run("DEL", &mut engine, &del, now);

    // The index alone, on the same keys.
    let mut index = BTreeSet::new();
    let started = Instant::now();
    for key in &keys {
        index.insert(key.clone());
    }
    let insert = started.elapsed().as_nanos() as f64 / n as f64;
    let started = Instant::now();
    for key in &keys {
        index.remove(&key[..]);
    }
    let remove = started.elapsed().as_nanos() as f64 / n as f64;
    println!("ordered index alone: insert {insert:.0} ns, remove {remove:.0} ns");
}
