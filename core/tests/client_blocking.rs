//! The blocking client, called from plain threads; the servers run on a runtime of their own.

use std::time::Duration;

use statestore::blocking::Client;
use statestore::{DeleteOptions, DeleteOutcome, Error, KeyEvent, SetOptions};
use statestore_testkit as kit;
use statestore_testkit::scripted::Scripted;
use statestore_testkit::Mosquitto;

#[test]
fn every_operation_blocks_until_done() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = Client::connect(kit::options(server.local_addr())).unwrap();
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
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = Client::connect(kit::options(server.local_addr())).unwrap();
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
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let options = kit::options(server.local_addr());
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
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let client = Client::connect(kit::options(server.local_addr())).unwrap();
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
    let host = kit::host();
    let broker = Mosquitto::start().unwrap();
    let service = host.block_on(Scripted::start(broker.addr(), |_| None));
    let client = Client::connect(kit::options(broker.addr())).unwrap();
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
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let options = kit::options(server.local_addr());
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
