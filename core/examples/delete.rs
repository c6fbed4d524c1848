//! DEL and VDEL (delete only if the key holds a given value), and their outcomes.
//!
//! Run: `cargo run -p statestore --example delete [host:port]`

#[path = "common/mod.rs"]
mod common;

use statestore::{Client, DeleteOptions, DeleteOutcome, SetOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;
    let client = Client::connect(target.options).await?;

    client.set("job", "worker-7", SetOptions::default()).await?;
    let kept = client
        .vdel("job", "worker-9", DeleteOptions::default())
        .await?;
    println!("VDEL job worker-9 -> {:?}", kept.outcome);
    assert_eq!(kept.outcome, DeleteOutcome::ValueMismatch);

    let deleted = client
        .vdel("job", "worker-7", DeleteOptions::default())
        .await?;
    println!("VDEL job worker-7 -> {:?}", deleted.outcome);
    assert_eq!(deleted.outcome, DeleteOutcome::Deleted);

    client.set("temp", "x", SetOptions::default()).await?;
    println!(
        "DEL temp -> {:?}",
        client
            .delete("temp", DeleteOptions::default())
            .await?
            .outcome
    );
    let again = client.delete("temp", DeleteOptions::default()).await?;
    println!("DEL temp -> {:?}", again.outcome);
    assert_eq!(again.outcome, DeleteOutcome::NotFound);
    client.close().await?;
    Ok(())
}
