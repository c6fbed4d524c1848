//! A distributed lock: workers on separate connections take turns, each writing a protected
//! key with its guard's fencing token; a guard releases the lock when dropped.
//!
//! Run: `cargo run -p statestore --example lock [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::lease::Lock;
use statestore::{Client, SetOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let mut workers = Vec::new();
    for worker in 0..3 {
        let client = Client::connect(target.options.clone()).await?;
        workers.push(tokio::spawn(async move {
            let lock = Lock::new(&client, "printer-lock", Duration::from_secs(5))?
                .timeout(Duration::from_secs(30));
            for job in 0..2 {
                // Waits (observing the lock's key) until the lock is free.
                let guard = lock.lock().await?;
                println!(
                    "worker {worker} holds the lock (token {}): printing job {job}",
                    guard.fencing_token()
                );
                let fenced = SetOptions::default().fencing_token(guard.fencing_token().clone());
                client
                    .set("printer", format!("worker {worker}, job {job}"), fenced)
                    .await?;
                if job == 0 {
                    // Dropping the guard releases the lock in the background...
                    drop(guard);
                } else {
                    // ...releasing it explicitly waits for the answer: do that before
                    // closing the client, which would cut a background release off.
                    guard.release().await?;
                }
            }
            client.close().await?;
            Ok::<(), statestore::Error>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(())
}
