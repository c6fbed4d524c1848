//! A lock with a fencing token: take it with SET NEX PX, write a protected key with the
//! token, release it with VDEL. A writer holding an older token is refused.
//!
//! Run: `cargo run -p statestore --example lock [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::{Client, DeleteOptions, Error, ServiceError, SetCondition, SetOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let client = Client::connect(target.options).await?;

    let take = |holder: &'static str| {
        let client = client.clone();
        async move {
            client
                .set(
                    "printer-lock",
                    holder,
                    SetOptions::default()
                        .condition(SetCondition::OnlyIfAbsentOrEqual)
                        .expiry(Duration::from_secs(10)),
                )
                .await
        }
    };

    let first = take("alice").await?;
    let alice_token = first.version.ok_or("no fencing token")?;
    println!("alice took the lock: token {alice_token}");
    client
        .set(
            "printer-queue",
            "alice's job",
            SetOptions::default().fencing_token(alice_token.clone()),
        )
        .await?;
    assert!(!take("bob").await?.applied, "bob must wait");
    client
        .vdel("printer-lock", "alice", DeleteOptions::default())
        .await?;
    println!("alice released the lock");

    let bob_token = take("bob").await?.version.ok_or("no fencing token")?;
    println!("bob took the lock: token {bob_token}");
    client
        .set(
            "printer-queue",
            "bob's job",
            SetOptions::default().fencing_token(bob_token),
        )
        .await?;

    // Alice, late, still holds her old token: the store refuses it.
    let late = client
        .set(
            "printer-queue",
            "alice again",
            SetOptions::default().fencing_token(alice_token),
        )
        .await;
    println!("alice with her old token -> {late:?}");
    assert!(matches!(
        late,
        Err(Error::Service(ServiceError::FencingTokenLowerVersion))
    ));
    client.close().await?;
    Ok(())
}
