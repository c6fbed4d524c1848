//! A lease: acquire it, protect writes with its fencing token, let it renew itself, release
//! it, and see a holder that stops renewing lose it.
//!
//! Run: `cargo run -p statestore --example lease [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::lease::{AcquireOutcome, Lease};
use statestore::{Client, Error, SetOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let client = Client::connect(target.options).await?;
    let ttl = Duration::from_secs(1);

    // Alice holds the lease and renews it in the background every third of the TTL.
    let alice = Lease::new(&client, "printer-lease", "alice")?.auto_renew(true);
    let alice_token = alice.acquire(ttl).await?;
    println!("alice holds the lease, fencing token {alice_token}");
    client
        .set(
            "printer-queue",
            "alice's job",
            SetOptions::default().fencing_token(alice_token.clone()),
        )
        .await?;

    // Bob (renewing by hand) finds it taken, then waits for it.
    let bob = Lease::new(&client, "printer-lease", "bob")?;
    if let AcquireOutcome::HeldBy {
        holder: Some(holder),
    } = bob.try_acquire(ttl).await?
    {
        println!("bob: held by {}", String::from_utf8_lossy(&holder));
    }
    let waiting = tokio::spawn({
        let bob = bob.clone();
        async move { bob.acquire(ttl).await }
    });
    alice.release().await?;
    println!("alice released the lease");
    let bob_token = waiting.await??;
    println!("bob holds the lease, fencing token {bob_token}");

    // Bob does not renew: at the end of the TTL he is told he lost it.
    if let Some(loss) = bob.lost().await {
        println!("bob lost the lease: {loss}");
    }
    // Bob wrote with his (newer) token...
    client
        .set(
            "printer-queue",
            "bob's job",
            SetOptions::default().fencing_token(bob_token),
        )
        .await?;
    // ...so Alice's old token is refused from now on.
    let late = client
        .set(
            "printer-queue",
            "alice's late job",
            SetOptions::default().fencing_token(alice_token),
        )
        .await;
    println!("alice's old token -> {late:?}");
    assert!(matches!(late, Err(Error::Service(_))));
    client.close().await?;
    Ok(())
}
