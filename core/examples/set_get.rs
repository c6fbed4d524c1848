//! SET and GET, with conditions, expiry and versions.
//!
//! Run: `cargo run -p statestore --example set_get [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::{Client, SetCondition, SetOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let client = Client::connect(target.options).await?;

    let written = client
        .set("greeting", "hello", SetOptions::default())
        .await?;
    println!(
        "SET greeting hello -> applied={} version={:?}",
        written.applied, written.version
    );

    let read = client.get("greeting").await?.ok_or("greeting vanished")?;
    println!(
        "GET greeting -> {:?} (version {:?})",
        read.value, read.version
    );
    assert_eq!(read.value, "hello");

    // NX: only if absent. The key exists, so nothing changes.
    let nx = SetOptions::default().condition(SetCondition::OnlyIfAbsent);
    let refused = client.set("greeting", "bonjour", nx).await?;
    println!("SET greeting bonjour NX -> applied={}", refused.applied);
    assert!(!refused.applied);

    // PX: the key expires by itself.
    let expiring = SetOptions::default().expiry(Duration::from_secs(30));
    client.set("session", "token-123", expiring).await?;
    println!("SET session token-123 PX 30000 -> stored for 30 s");

    println!("GET missing -> {:?}", client.get("missing").await?);
    client.close().await?;
    Ok(())
}
