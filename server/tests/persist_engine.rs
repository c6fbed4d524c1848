//! The engine's side of persistence: which requests produce which durable changes, and what
//! a restored key is.

#[path = "support/wire.rs"]
mod wire;

use bytes::Bytes;
use statestore::protocol::{Hlc, Response, ServiceError};
use statestore_server::engine::{
    DurableChange, Engine, EngineConfig, PersistedKey, RequestContext,
};

const NOW: u64 = 1_700_000_000_000;

fn resp(args: &[&[u8]]) -> Bytes {
    Bytes::from(wire::resp(args))
}

fn hlc(wall_ms: u64, counter: u64, node: &str) -> Hlc {
    Hlc {
        wall_ms,
        counter,
        node: node.into(),
    }
}

struct Store {
    engine: Engine,
    now: u64,
}

impl Store {
    fn new(persistence: bool) -> Self {
        Self {
            engine: Engine::new(EngineConfig {
                persistence,
                ..EngineConfig::default()
            }),
            now: NOW,
        }
    }

    fn send(&mut self, args: &[&[u8]], persist: bool, ft: Option<&Hlc>) -> (Response, Option<Hlc>) {
        let ts = hlc(self.now, 0, "c").to_string();
        let ft = ft.map(Hlc::to_string);
        let ctx = RequestContext {
            client_id: "c",
            timestamp: Some(&ts),
            fencing_token: ft.as_deref(),
            persist,
            now_ms: self.now,
        };
        let outcome = self.engine.apply_payload(&resp(args), &ctx);
        (outcome.response, outcome.version)
    }

    fn changes(&mut self) -> Vec<DurableChange> {
        self.engine.take_durable_changes()
    }
}

fn removed(key: &'static [u8]) -> DurableChange {
    DurableChange::Remove(Bytes::from_static(key))
}

#[test]
fn a_persisted_set_is_a_put_with_everything_needed_to_restore_it() {
    let mut store = Store::new(true);
    let token = hlc(NOW - 5, 0, "holder");
    let (response, version) = store.send(&[b"SET", b"k", b"v", b"PX", b"5000"], true, Some(&token));
    assert_eq!(response, Response::Ok);
    assert_eq!(
        store.changes(),
        [DurableChange::Put(PersistedKey {
            key: Bytes::from_static(b"k"),
            value: Bytes::from_static(b"v"),
            version: version.expect("a version"),
            fencing_token: Some(token),
            deadline_ms: Some(NOW + 5_000),
        })]
    );
    assert!(store.changes().is_empty(), "changes are taken once");
}

#[test]
fn a_key_that_stops_being_persisted_is_removed() {
    let mut store = Store::new(true);
    for key in [&b"overwritten"[..], b"deleted", b"vdeleted", b"expires"] {
        store.send(&[b"SET", key, b"v"], true, None);
    }
    store.send(&[b"SET", b"expires", b"v", b"PX", b"10"], true, None);
    store.changes();
    store.send(&[b"SET", b"overwritten", b"v2"], false, None);
    assert_eq!(store.changes(), [removed(b"overwritten")]);
    store.send(&[b"DEL", b"deleted"], false, None);
    assert_eq!(store.changes(), [removed(b"deleted")]);
    store.send(&[b"VDEL", b"vdeleted", b"other"], false, None);
    assert!(
        store.changes().is_empty(),
        "a VDEL that did not apply changes nothing"
    );
    store.send(&[b"VDEL", b"vdeleted", b"v"], false, None);
    assert_eq!(store.changes(), [removed(b"vdeleted")]);
    store.engine.expire(NOW + 10);
    assert_eq!(store.changes(), [removed(b"expires")]);
}

#[test]
fn keys_never_persisted_and_failed_writes_change_nothing() {
    let mut store = Store::new(true);
    store.send(&[b"SET", b"plain", b"v"], false, None);
    store.send(&[b"SET", b"plain", b"v2", b"PX", b"1"], false, None);
    store.send(&[b"DEL", b"plain"], false, None);
    store.send(&[b"SET", b"k", b"v"], true, None);
    store.changes();
    let (response, _) = store.send(&[b"SET", b"k", b"v2", b"NX"], true, None);
    assert_eq!(response, Response::Integer(-1));
    store.send(&[b"GET", b"k"], true, None);
    store.send(&[b"SCAN", b"*"], true, None);
    assert!(store.changes().is_empty());
}

#[test]
fn without_persistence_the_option_is_ignored() {
    let mut store = Store::new(false);
    store.send(&[b"SET", b"k", b"v"], true, None);
    store.send(&[b"DEL", b"k"], true, None);
    assert!(store.changes().is_empty());
}

fn restored(
    key: &'static [u8],
    version: Hlc,
    token: Option<Hlc>,
    deadline_ms: Option<u64>,
) -> PersistedKey {
    PersistedKey {
        key: Bytes::from_static(key),
        value: Bytes::from_static(b"v"),
        version,
        fencing_token: token,
        deadline_ms,
    }
}

#[test]
fn a_restored_key_keeps_its_version_token_and_deadline() {
    let mut store = Store::new(true);
    let version = hlc(NOW - 30_000, 7, "StateStore");
    let token = hlc(NOW - 40_000, 1, "holder");
    store.engine.restore(restored(
        b"k",
        version.clone(),
        Some(token),
        Some(NOW + 1_000),
    ));
    assert!(store.changes().is_empty(), "restoring records nothing");
    assert_eq!(
        store.send(&[b"GET", b"k"], false, None),
        (Response::Value(Bytes::from_static(b"v")), Some(version))
    );
    assert_eq!(
        store.send(&[b"SET", b"k", b"v2"], true, None).0,
        Response::Error(ServiceError::FencingTokenRequired)
    );
    store.now = NOW + 1_000;
    assert_eq!(
        store.send(&[b"GET", b"k"], false, None),
        (Response::Nil, None)
    );
    assert_eq!(
        store.changes(),
        [removed(b"k")],
        "the restored key expires like any other, and leaves the disk"
    );
}

#[test]
fn after_a_restore_versions_pass_every_persisted_version_and_token() {
    let mut store = Store::new(true);
    let version = hlc(NOW + 30_000, 7, "StateStore");
    store
        .engine
        .restore(restored(b"a", version.clone(), None, None));
    let (_, newer) = store.send(&[b"SET", b"other", b"v"], false, None);
    assert!(newer.expect("a version") > version);

    // A token from further ahead than any version: a new lock's version passes it too, so
    // the new lock holder can write the key it guards.
    let far_token = hlc(NOW + 50_000, 0, "holder");
    store.engine.restore(restored(
        b"guarded",
        hlc(NOW, 0, "StateStore"),
        Some(far_token.clone()),
        None,
    ));
    let (_, lock) = store.send(&[b"SET", b"lock", b"me"], false, None);
    let lock = lock.expect("a version");
    assert!(lock > far_token);
    let (response, _) = store.send(&[b"SET", b"guarded", b"v2"], true, Some(&lock));
    assert_eq!(response, Response::Ok);
}
