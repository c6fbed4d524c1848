//! The Rust side of `bindings/bench/latency.c`: median latency of blocking GETs
//! (`statestore::blocking::Client`) and throughput of async GETs with 64 in flight
//! (`statestore::Client`), against a running state store on `127.0.0.1:PORT`.
//!
//! `cargo run --release -p statestore-c --example latency_rust -- PORT [N]`

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use statestore_core::{ConnectOptions, SetOptions};

fn main() -> statestore_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).and_then(|p| p.parse().ok()).expect("PORT");
    let n: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let options = ConnectOptions::new("127.0.0.1", port);

    let client = statestore_core::blocking::Client::connect(options.clone())?;
    client.set("bench/k", "0123456789abcdef", SetOptions::default())?;
    for _ in 0..n / 10 {
        client.get("bench/k")?;
    }
    let mut latencies = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        client.get("bench/k")?;
        latencies.push(start.elapsed());
    }
    latencies.sort();
    println!(
        "rust blocking get: p50 {:.1} us, p99 {:.1} us",
        latencies[n / 2].as_secs_f64() * 1e6,
        latencies[n * 99 / 100].as_secs_f64() * 1e6
    );
    client.close()?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = statestore_core::Client::connect(options).await?;
        let remaining = Arc::new(AtomicI64::new((n * 2) as i64));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let (client, remaining) = (client.clone(), remaining.clone());
            tasks.push(tokio::spawn(async move {
                while remaining.fetch_sub(1, Ordering::Relaxed) > 0 {
                    client.get("bench/k").await?;
                }
                Ok::<_, statestore_core::Error>(())
            }));
        }
        for task in tasks {
            task.await.expect("task")?;
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "rust async get, 64 in flight: {:.0} ops/s",
            (n * 2) as f64 / secs
        );
        client.close().await
    })
}
