//! Leader election: three candidates campaign; the leader resigns, then the next leader's
//! connection dies and a standby takes over when its term expires. An observer prints every
//! change of leadership.
//!
//! Run: `cargo run -p statestore --example election [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::lease::{Election, LeaderEvent};
use statestore::Client;
use tokio::sync::mpsc;

const TTL: Duration = Duration::from_millis(600);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = common::target().await?;

    let observer = Client::connect(target.options.clone()).await?;
    let mut changes = Election::new(&observer, "scheduler-leader", "observer", TTL)?
        .observe()
        .await?;
    tokio::spawn(async move {
        while let Some(event) = changes.next().await {
            match event {
                LeaderEvent::Elected { leader } => {
                    println!("observer: leader is {}", String::from_utf8_lossy(&leader))
                }
                LeaderEvent::Vacant => println!("observer: no leader"),
            }
        }
    });

    // Each candidate reports when elected; the main task decides its fate.
    let (elected, mut elected_rx) = mpsc::unbounded_channel();
    for name in ["node-a", "node-b", "node-c"] {
        let client = Client::connect(target.options.clone()).await?;
        let election = Election::new(&client, "scheduler-leader", name, TTL)?;
        let elected = elected.clone();
        tokio::spawn(async move {
            // Renewed in the background while leader.
            election.campaign().await?;
            println!("{name}: elected");
            let _ = elected.send((election.clone(), client));
            match election.lost().await {
                Some(loss) => println!("{name}: lost leadership: {loss}"),
                None => println!("{name}: resigned"),
            }
            Ok::<(), statestore::Error>(())
        });
    }
    drop(elected);

    let (first, _client) = elected_rx.recv().await.ok_or("nobody was elected")?;
    first.resign().await?;
    let (_second, second_client) = elected_rx.recv().await.ok_or("no second leader")?;
    // The second leader dies: the others take over once its term expires.
    second_client.close().await?;
    let (third, _client) = elected_rx.recv().await.ok_or("no third leader")?;
    println!(
        "final leader: {:?}",
        third
            .leader()
            .await?
            .map(|l| String::from_utf8_lossy(&l).into_owned())
    );
    third.resign().await?;
    Ok(())
}
