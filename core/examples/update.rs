//! Acquire-and-update: workers on separate connections increment one counter under a lock;
//! every increment counts.
//!
//! Run: `cargo run -p statestore --example update [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use bytes::Bytes;
use statestore::lease::Lock;
use statestore::Client;

const WORKERS: usize = 4;
const INCREMENTS: usize = 5;

fn increment(old: Option<Bytes>) -> Option<Bytes> {
    let n: u64 = old
        .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
        .unwrap_or(0);
    Some((n + 1).to_string().into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let client = Client::connect(target.options.clone()).await?;
        workers.push(tokio::spawn(async move {
            let lock = Lock::new(&client, "counter-lock", Duration::from_secs(5))?;
            for _ in 0..INCREMENTS {
                // Lock, GET, SET with the fencing token, release.
                lock.update("counter", increment).await?;
            }
            client.close().await?;
            Ok::<(), statestore::Error>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let client = Client::connect(target.options).await?;
    let counter = client.get("counter").await?.map(|v| v.value);
    println!("counter = {counter:?} after {WORKERS} workers x {INCREMENTS} increments");
    assert_eq!(counter, Some((WORKERS * INCREMENTS).to_string().into()));
    client.close().await?;
    Ok(())
}
