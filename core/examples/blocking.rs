//! The blocking API, for code without an async runtime.
//!
//! Run: `cargo run -p statestore --example blocking [host:port]`

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use statestore::blocking::Client;
use statestore::{DeleteOptions, KeyEvent, SetOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Only the in-process server (when no broker is given) needs a runtime of its own.
    let host = tokio::runtime::Runtime::new()?;
    let target = host.block_on(common::target())?;
    let client = Client::connect(target.options)?;

    let mut changes = client.observe("counter")?;
    client.set("counter", "1", SetOptions::default())?;
    println!(
        "GET counter -> {:?}",
        client.get("counter")?.map(|v| v.value)
    );
    if let Some(KeyEvent::Set { value, .. }) = changes.next_timeout(Duration::from_secs(5))? {
        println!("notified: counter = {value:?}");
    }
    println!(
        "DEL counter -> {:?}",
        client.delete("counter", DeleteOptions::default())?.outcome
    );
    client.close()?;
    drop(target.server);
    Ok(())
}
