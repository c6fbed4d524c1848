//! Key notifications: observe a key, see its changes (including expiry), stop observing.
//!
//! Run: `cargo run -p statestore --example observe [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::{Client, DeleteOptions, KeyEvent, SetOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let watcher = Client::connect(target.options.clone()).await?;
    let writer = Client::connect(target.options).await?;

    let mut changes = watcher.observe("thermostat").await?;
    writer
        .set("thermostat", "21", SetOptions::default())
        .await?;
    writer
        .delete("thermostat", DeleteOptions::default())
        .await?;
    writer
        .set(
            "thermostat",
            "19",
            SetOptions::default().expiry(Duration::from_millis(200)),
        )
        .await?;

    // SET 21, DELETE, SET 19, then DELETE when the key expires.
    for _ in 0..4 {
        match changes.next().await.ok_or("observation ended")? {
            KeyEvent::Set { value, version } => {
                println!("set to {:?} (version {version:?})", value)
            }
            KeyEvent::Delete { version } => println!("deleted (version {version:?})"),
            KeyEvent::Resynced { value } => println!("reconnected; now {value:?}"),
        }
    }

    watcher.unobserve("thermostat").await?;
    assert!(changes.next().await.is_none(), "unobserve ends the stream");
    println!("unobserved");
    watcher.close().await?;
    writer.close().await?;
    Ok(())
}
