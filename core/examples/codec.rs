//! Encodes and decodes the protocol document's examples with `statestore::protocol`.
//!
//! Run: `cargo run -p statestore --example codec`

use bytes::Bytes;
use statestore::protocol::{
    topics, Hlc, HybridClock, Notification, Request, Response, SetCondition, SetFlags,
    MAX_CLOCK_SKEW,
};

fn show(label: &str, payload: &[u8]) {
    println!(
        "{label:<28} {}",
        String::from_utf8_lossy(payload).escape_debug()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lock = Request::Set {
        key: Bytes::from_static(b"LockName"),
        value: Bytes::from_static(b"Client1"),
        flags: SetFlags {
            condition: SetCondition::OnlyIfAbsentOrEqual,
            expiry_ms: Some(10_000),
        },
    };
    show("SET LockName NEX PX 10000", &lock.encode());
    show(
        "GET SETKEY2",
        &Request::Get {
            key: Bytes::from_static(b"SETKEY2"),
        }
        .encode(),
    );
    show(
        "KEYNOTIFY SOMEKEY",
        &Request::KeyNotify {
            key: Bytes::from_static(b"SOMEKEY"),
            stop: false,
        }
        .encode(),
    );

    for payload in [
        &b"+OK\r\n"[..],
        b":-1\r\n",
        b"$4\r\n1234\r\n",
        b"-ERR syntax error\r\n",
    ] {
        let response = Response::decode(&Bytes::copy_from_slice(payload))?;
        println!(
            "{:<28} {response:?}",
            String::from_utf8_lossy(payload).escape_debug().to_string()
        );
    }
    let notify =
        Bytes::from_static(b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nabc\r\n");
    println!(
        "{:<28} {:?}",
        "NOTIFY SET VALUE abc",
        Notification::decode(&notify)?
    );

    let clock = HybridClock::new("CLIENT", MAX_CLOCK_SKEW);
    let ts = clock.next()?;
    let version: Hlc = "1696374425000:1:StateStore".parse()?;
    println!("{:<28} {ts}", "__ts of the next request");
    println!("{:<28} {version}", "a version, padded");
    println!(
        "{:<28} {}",
        "notification topic",
        topics::notification_topic("client-id1", b"SOMEKEY")
    );
    Ok(())
}
