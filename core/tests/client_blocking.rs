//! The blocking client, called from plain threads; the servers run on a runtime of their own.

mod support;

use std::time::Duration;

use statestore::blocking::Client;
use statestore::{DeleteOptions, DeleteOutcome, Error, KeyEvent, SetOptions};
use statestore_server::testing::{self, Mosquitto};
use statestore_server::Server;
use support::scripted::Scripted;

/// A runtime for the servers: the blocking client must be called outside any runtime.
fn host() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn embedded(host: &tokio::runtime::Runtime) -> Server {
    host.block_on(testing::embedded())
}

#[test]
fn every_operation_blocks_until_done() {
    let host = host();
    let server = embedded(&host);
    let client = Client::connect(support::options(server.local_addr())).unwrap();
    assert!(client.client_id().starts_with("statestore-"));
    assert!(client.set("k", "v", SetOptions::default()).unwrap().applied);
    assert_eq!(client.get("k").unwrap().unwrap().value, "v");
    assert_eq!(
        client
            .get_with_timeout("k", Some(Duration::from_secs(1)))
            .unwrap()
            .unwrap()
            .value,
        "v"
    );
    assert_eq!(
        client
            .vdel("k", "other", DeleteOptions::default())
            .unwrap()
            .outcome,
        DeleteOutcome::ValueMismatch
    );
    assert_eq!(
        client
            .vdel("k", "v", DeleteOptions::default())
            .unwrap()
            .outcome,
        DeleteOutcome::Deleted
    );
    client.set("k", "v", SetOptions::default()).unwrap();
    assert!(client
        .delete("k", DeleteOptions::default())
        .unwrap()
        .deleted());
    assert_eq!(client.get("k").unwrap(), None);
    assert!(matches!(
        client.set("", "v", SetOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    client.close().unwrap();
    assert!(client.is_closed());
    assert_eq!(client.get("k"), Err(Error::Closed));
}

#[test]
fn observations_are_consumed_with_next_timeout() {
    let host = host();
    let server = embedded(&host);
    let client = Client::connect(support::options(server.local_addr())).unwrap();
    let mut changes = client.observe("k").unwrap();
    assert_eq!(
        changes.next_timeout(Duration::from_millis(20)).unwrap(),
        None
    );
    client.set("k", "v", SetOptions::default()).unwrap();
    match changes.next_timeout(Duration::from_secs(10)).unwrap() {
        Some(KeyEvent::Set { value, .. }) => assert_eq!(value, "v"),
        other => panic!("{other:?}"),
    }
    client.delete("k", DeleteOptions::default()).unwrap();
    assert!(matches!(
        changes.next_timeout(Duration::from_secs(10)).unwrap(),
        Some(KeyEvent::Delete { .. })
    ));
    client.unobserve("k").unwrap();
    assert_eq!(
        changes.next_timeout(Duration::from_secs(10)),
        Err(Error::Closed)
    );
}

#[test]
fn blocking_inside_a_runtime_is_an_error_not_a_panic() {
    let host = host();
    let server = embedded(&host);
    let options = support::options(server.local_addr());
    let client = Client::connect(options.clone()).unwrap();
    let mut changes = client.observe("k").unwrap();
    host.block_on(async {
        assert!(matches!(Client::connect(options), Err(Error::Runtime(_))));
        assert!(matches!(client.get("k"), Err(Error::Runtime(_))));
        assert!(matches!(
            client.set("k", "v", SetOptions::default()),
            Err(Error::Runtime(_))
        ));
        assert!(matches!(
            changes.next_timeout(Duration::from_millis(1)),
            Err(Error::Runtime(_))
        ));
    });
    // Outside the runtime the same client still works.
    client.set("k", "v", SetOptions::default()).unwrap();
    assert!(matches!(
        changes.next_timeout(Duration::from_secs(10)).unwrap(),
        Some(KeyEvent::Set { .. })
    ));
}

#[test]
fn clones_are_shared_across_threads() {
    let host = host();
    let server = embedded(&host);
    let client = Client::connect(support::options(server.local_addr())).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let client = client.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let key = format!("t{t}-{i}");
                    client.set(key.clone(), "v", SetOptions::default()).unwrap();
                    assert_eq!(client.get(key).unwrap().unwrap().value, "v");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn close_fails_calls_blocked_in_other_threads() {
    let host = host();
    let broker = Mosquitto::start().unwrap();
    let service = host.block_on(Scripted::start(broker.addr(), |_| None));
    let client = Client::connect(support::options(broker.addr())).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || client.get(format!("k{i}")))
        })
        .collect();
    host.block_on(service.wait_received(4));
    client.close().unwrap();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), Err(Error::Closed));
    }
}

#[test]
fn blocking_calls_work_on_a_spawn_blocking_thread() {
    let host = host();
    let server = embedded(&host);
    let options = support::options(server.local_addr());
    // What the Runtime error's message recommends must work.
    let value = host
        .block_on(host.spawn_blocking(move || {
            let client = Client::connect(options)?;
            client.set("k", "from spawn_blocking", SetOptions::default())?;
            let value = client.get("k")?.map(|v| v.value);
            client.close()?;
            Ok::<_, Error>(value)
        }))
        .unwrap()
        .unwrap();
    assert_eq!(value, Some("from spawn_blocking".into()));
}
