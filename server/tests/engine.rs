//! Engine rules, driven through payloads exactly as the service layer drives them.

#[path = "support/wire.rs"]
mod wire;

use bytes::Bytes;
use statestore::protocol::{Hlc, Notification, Response, ServiceError};
use statestore_server::engine::{Engine, EngineConfig, Notice, Outcome, RequestContext};

const NOW: u64 = 1_700_000_000_000;

/// An engine plus a settable wall clock.
struct Store {
    engine: Engine,
    now: u64,
}

/// One request: payload and user properties.
struct Req {
    payload: Bytes,
    client: &'static str,
    ts: Option<String>,
    ft: Option<String>,
}

impl Req {
    fn from_payload(payload: &[u8]) -> Self {
        Self {
            payload: Bytes::copy_from_slice(payload),
            client: "client-1",
            ts: None,
            ft: None,
        }
    }

    /// A request built from its arguments, with a `__ts` at `ts_ms`.
    fn new(args: &[&[u8]], ts_ms: u64) -> Self {
        Self::from_payload(&resp(args)).ts(&hlc(ts_ms, 0, "client"))
    }

    fn ts(mut self, ts: &str) -> Self {
        self.ts = Some(ts.to_owned());
        self
    }

    fn no_ts(mut self) -> Self {
        self.ts = None;
        self
    }

    fn ft(mut self, ft: &str) -> Self {
        self.ft = Some(ft.to_owned());
        self
    }

    fn client(mut self, client: &'static str) -> Self {
        self.client = client;
        self
    }
}

use wire::resp;

fn hlc(wall_ms: u64, counter: u64, node: &str) -> String {
    Hlc {
        wall_ms,
        counter,
        node: node.into(),
    }
    .to_string()
}

impl Store {
    fn new() -> Self {
        Self::with_config(EngineConfig::default())
    }

    fn with_config(config: EngineConfig) -> Self {
        Self {
            engine: Engine::new(config),
            now: NOW,
        }
    }

    fn send(&mut self, req: Req) -> Outcome {
        let ctx = RequestContext {
            client_id: req.client,
            timestamp: req.ts.as_deref(),
            fencing_token: req.ft.as_deref(),
            persist: false,
            now_ms: self.now,
        };
        self.engine.apply_payload(&req.payload, &ctx)
    }

    fn req(&self, args: &[&[u8]]) -> Req {
        Req::new(args, self.now)
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> Outcome {
        let req = self.req(&[b"SET", key, value]);
        self.send(req)
    }

    fn get(&mut self, key: &[u8]) -> Outcome {
        let req = self.req(&[b"GET", key]).no_ts();
        self.send(req)
    }

    fn del(&mut self, key: &[u8]) -> Outcome {
        let req = self.req(&[b"DEL", key]).no_ts();
        self.send(req)
    }

    fn vdel(&mut self, key: &[u8], value: &[u8]) -> Outcome {
        let req = self.req(&[b"VDEL", key, value]).no_ts();
        self.send(req)
    }

    fn observe(&mut self, client: &'static str, key: &[u8]) -> Outcome {
        let req = self.req(&[b"KEYNOTIFY", key]).no_ts().client(client);
        self.send(req)
    }

    fn value(&mut self, key: &[u8]) -> Option<Bytes> {
        match self.get(key).response {
            Response::Value(value) => Some(value),
            Response::Nil => None,
            other => panic!("GET answered {other:?}"),
        }
    }
}

fn error(outcome: &Outcome) -> Option<ServiceError> {
    match &outcome.response {
        Response::Error(e) => Some(e.clone()),
        _ => None,
    }
}

fn assert_err(outcome: Outcome, expected: ServiceError) {
    assert_eq!(outcome.response, Response::Error(expected.clone()));
    assert_eq!(outcome.version, None, "an error carries no version");
    assert!(outcome.notices.is_empty());
    let payload = outcome.response.encode();
    assert_eq!(
        payload,
        Bytes::from(format!("-ERR {}\r\n", expected.text()))
    );
}

fn version(outcome: &Outcome) -> Hlc {
    outcome.version.clone().expect("a version")
}

// ---- timestamps and versions ----

#[test]
fn set_without_timestamp_is_missing_timestamp() {
    let mut store = Store::new();
    let req = store.req(&[b"SET", b"k", b"v"]).no_ts();
    assert_err(store.send(req), ServiceError::MissingTimestamp);
    assert_eq!(store.value(b"k"), None);
}

#[test]
fn set_with_malformed_timestamp_is_rejected() {
    let mut store = Store::new();
    for bad in ["", "abc", "1:2", "x:0:c", "1:-1:c"] {
        let req = store.req(&[b"SET", b"k", b"v"]).ts(bad);
        assert_err(store.send(req), ServiceError::MalformedTimestamp);
    }
    assert_eq!(store.value(b"k"), None);
}

#[test]
fn set_with_timestamp_beyond_the_skew_is_rejected_and_at_the_skew_accepted() {
    let mut store = Store::new();
    let req = Req::new(&[b"SET", b"k", b"v"], NOW + 60_001);
    assert_err(store.send(req), ServiceError::TimestampSkew);
    assert_eq!(store.value(b"k"), None);
    let req = Req::new(&[b"SET", b"k", b"v"], NOW + 60_000);
    assert_eq!(store.send(req).response, Response::Ok);
}

#[test]
fn configured_skew_is_honoured() {
    let mut store = Store::with_config(EngineConfig {
        max_skew: std::time::Duration::from_secs(1),
        ..EngineConfig::default()
    });
    let req = Req::new(&[b"SET", b"k", b"v"], NOW + 1_001);
    assert_err(store.send(req), ServiceError::TimestampSkew);
}

#[test]
fn set_version_is_greater_than_the_request_timestamp_and_monotonic() {
    let mut store = Store::new();
    let ahead = Req::new(&[b"SET", b"k", b"v"], NOW + 30_000).ts(&hlc(NOW + 30_000, 7, "c"));
    let first = version(&store.send(ahead));
    assert_eq!(first.to_string(), hlc(NOW + 30_000, 8, "StateStore"));
    let behind = Req::new(&[b"SET", b"k", b"w"], NOW - 5_000);
    let second = version(&store.send(behind));
    assert!(second > first);
    // Once the wall clock passes, the version follows it (counter: the request's + 1).
    store.now += 40_000;
    let third = version(&store.set(b"k", b"x"));
    assert_eq!(third.to_string(), hlc(NOW + 40_000, 1, "StateStore"));
}

#[test]
fn a_maximal_request_counter_cannot_wedge_the_server_clock() {
    let mut store = Store::new();
    let req = store
        .req(&[b"SET", b"k", b"v"])
        .ts(&hlc(NOW, u64::MAX, "c"));
    let first = version(&store.send(req));
    assert_eq!(first.to_string(), hlc(NOW + 1, 0, "StateStore"));
    let second = version(&store.set(b"k", b"w"));
    assert!(second > first);
}

#[test]
fn set_version_uses_the_configured_node_id() {
    let mut store = Store::with_config(EngineConfig {
        node_id: "node-7".into(),
        ..EngineConfig::default()
    });
    assert_eq!(version(&store.set(b"k", b"v")).node, "node-7");
}

#[test]
fn get_returns_the_value_and_the_version_of_the_set() {
    let mut store = Store::new();
    let set = version(&store.set(b"k", b"v"));
    store.now += 10;
    let get = store.get(b"k");
    assert_eq!(get.response, Response::Value(Bytes::from_static(b"v")));
    assert_eq!(get.version, Some(set));
    let missing = store.get(b"nope");
    assert_eq!((missing.response, missing.version), (Response::Nil, None));
}

#[test]
fn timestamp_on_other_verbs_is_optional_but_validated_and_merged() {
    let mut store = Store::new();
    store.set(b"k", b"v");
    for args in [
        &[&b"GET"[..], b"k"][..],
        &[b"DEL", b"k"],
        &[b"VDEL", b"k", b"v"],
        &[b"KEYNOTIFY", b"k"],
    ] {
        let req = store.req(args).ts("garbage");
        assert_err(store.send(req), ServiceError::MalformedTimestamp);
        let req = Req::new(args, NOW + 60_001);
        assert_err(store.send(req), ServiceError::TimestampSkew);
    }
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v")));
    // A GET's __ts far ahead moves the server clock: the next SET's version is beyond it.
    let req = store.req(&[b"GET", b"k"]).ts(&hlc(NOW + 50_000, 3, "c"));
    store.send(req);
    let next = version(&store.set(b"k", b"w"));
    assert_eq!(next.to_string(), hlc(NOW + 50_000, 5, "StateStore"));
}

// ---- NX, NEX, PX ----

#[test]
fn nx_sets_an_absent_key_only() {
    let mut store = Store::new();
    let req = store.req(&[b"SET", b"k", b"1", b"NX"]);
    let first = store.send(req);
    assert_eq!(first.response, Response::Ok);
    let req = store.req(&[b"SET", b"k", b"2", b"NX"]);
    let second = store.send(req);
    assert_eq!(second.response, Response::Integer(-1));
    assert_eq!(second.version, first.version, "the key's unchanged version");
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"1")));
    assert_eq!(store.get(b"k").version, first.version);
}

#[test]
fn nex_sets_an_absent_key_or_renews_an_equal_one() {
    let mut store = Store::new();
    let req = store.req(&[b"SET", b"lock", b"me", b"NEX", b"PX", b"1000"]);
    let first = store.send(req);
    assert_eq!(first.response, Response::Ok);
    store.now += 500;
    let req = store.req(&[b"SET", b"lock", b"me", b"NEX", b"PX", b"1000"]);
    let renewed = store.send(req);
    assert_eq!(renewed.response, Response::Ok);
    assert!(version(&renewed) > version(&first));
    assert_eq!(store.engine.next_expiry(), Some(NOW + 1_500));
    let req = store.req(&[b"SET", b"lock", b"you", b"NEX"]);
    let stolen = store.send(req);
    assert_eq!(stolen.response, Response::Integer(-1));
    assert_eq!(stolen.version, renewed.version);
    assert_eq!(store.value(b"lock"), Some(Bytes::from_static(b"me")));
    assert_eq!(store.engine.next_expiry(), Some(NOW + 1_500));
}

#[test]
fn px_expires_the_key_at_its_deadline_even_without_the_timer() {
    let mut store = Store::new();
    let req = store.req(&[b"SET", b"k", b"v", b"PX", b"100"]);
    store.send(req);
    assert_eq!(store.engine.next_expiry(), Some(NOW + 100));
    store.now += 99;
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v")));
    store.now += 1;
    assert_eq!(store.value(b"k"), None);
    assert_eq!(store.engine.len(), 0);
    assert_eq!(store.engine.next_expiry(), None);
}

#[test]
fn expired_keys_are_not_seen_by_nx_nex_del_or_vdel() {
    let mut store = Store::new();
    for key in [&b"a"[..], b"b", b"c", b"d"] {
        let req = store.req(&[b"SET", key, b"old", b"PX", b"10"]);
        store.send(req);
    }
    store.now += 10;
    let req = store.req(&[b"SET", b"a", b"new", b"NX"]);
    assert_eq!(store.send(req).response, Response::Ok);
    let req = store.req(&[b"SET", b"b", b"new", b"NEX"]);
    assert_eq!(store.send(req).response, Response::Ok);
    assert_eq!(store.del(b"c").response, Response::Integer(0));
    assert_eq!(store.vdel(b"d", b"old").response, Response::Integer(0));
}

#[test]
fn expire_removes_due_keys_and_notifies_observers() {
    let mut store = Store::new();
    store.observe("watcher", b"a");
    let set = store.req(&[b"SET", b"a", b"1", b"PX", b"50"]);
    let set_version = version(&store.send(set));
    let req = store.req(&[b"SET", b"b", b"2", b"PX", b"80"]);
    store.send(req);
    assert_eq!(store.engine.next_expiry(), Some(NOW + 50));
    assert!(store.engine.expire(NOW + 49).is_empty());
    assert_eq!(store.engine.len(), 2);
    let notices = store.engine.expire(NOW + 50);
    assert_eq!(notices.len(), 1);
    let notice = &notices[0];
    assert_eq!(&*notice.client_id, "watcher");
    assert_eq!(&notice.key[..], b"a");
    assert_eq!(notice.notification, Notification::Delete);
    assert!(notice.version > set_version);
    assert_eq!(store.engine.len(), 1);
    assert_eq!(store.engine.next_expiry(), Some(NOW + 80));
    assert!(
        store.engine.expire(NOW + 1_000).is_empty(),
        "b is unobserved"
    );
    assert!(store.engine.is_empty());
}

#[test]
fn expiry_found_by_a_request_is_notified_before_the_request_s_own_notices() {
    let mut store = Store::new();
    store.observe("w", b"a");
    store.observe("w", b"b");
    let req = store.req(&[b"SET", b"a", b"1", b"PX", b"5"]);
    store.send(req);
    store.now += 5;
    let outcome = store.set(b"b", b"2");
    let kinds: Vec<_> = outcome
        .notices
        .iter()
        .map(|n| (n.key.clone(), n.notification.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Bytes::from_static(b"a"), Notification::Delete),
            (
                Bytes::from_static(b"b"),
                Notification::Set {
                    value: Bytes::from_static(b"2")
                }
            ),
        ]
    );
    assert!(outcome.notices[0].version < outcome.notices[1].version);
}

#[test]
fn set_without_px_clears_the_expiry_and_a_new_px_replaces_it() {
    let mut store = Store::new();
    let req = store.req(&[b"SET", b"k", b"v", b"PX", b"100"]);
    store.send(req);
    store.set(b"k", b"w");
    assert_eq!(store.engine.next_expiry(), None);
    store.now += 1_000;
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"w")));
    let req = store.req(&[b"SET", b"k", b"x", b"PX", b"10"]);
    store.send(req);
    let req = store.req(&[b"SET", b"k", b"y", b"PX", b"20"]);
    store.send(req);
    assert_eq!(store.engine.next_expiry(), Some(store.now + 20));
}

#[test]
fn px_zero_negative_or_not_a_number_is_a_syntax_error() {
    let mut store = Store::new();
    for px in [&b"0"[..], b"-5", b"soon", b"", b"99999999999999999999"] {
        let req = store.req(&[b"SET", b"k", b"v", b"PX", px]);
        assert_err(store.send(req), ServiceError::SyntaxError);
    }
    for options in [
        &[&b"PX"[..]][..],
        &[b"NX", b"NEX"],
        &[b"NX", b"NX"],
        &[b"PX", b"1", b"PX", b"2"],
        &[b"XX"],
    ] {
        let mut args: Vec<&[u8]> = vec![b"SET", b"k", b"v"];
        args.extend_from_slice(options);
        let req = store.req(&args);
        assert_err(store.send(req), ServiceError::SyntaxError);
    }
    assert_eq!(store.value(b"k"), None);
}

// ---- quota ----

#[test]
fn quota_limits_new_keys_but_not_overwrites() {
    let mut store = Store::with_config(EngineConfig {
        max_keys: Some(2),
        ..EngineConfig::default()
    });
    store.set(b"a", b"1");
    store.set(b"b", b"1");
    assert_err(store.set(b"c", b"1"), ServiceError::QuotaExceeded);
    assert_eq!(store.value(b"c"), None);
    assert_eq!(store.set(b"a", b"2").response, Response::Ok);
    let req = store.req(&[b"SET", b"a", b"3", b"NX"]);
    assert_eq!(store.send(req).response, Response::Integer(-1));
    store.del(b"b");
    assert_eq!(store.set(b"c", b"1").response, Response::Ok);
}

#[test]
fn expired_keys_do_not_count_against_the_quota() {
    let mut store = Store::with_config(EngineConfig {
        max_keys: Some(1),
        ..EngineConfig::default()
    });
    let req = store.req(&[b"SET", b"a", b"1", b"PX", b"10"]);
    store.send(req);
    assert_err(store.set(b"b", b"1"), ServiceError::QuotaExceeded);
    store.now += 10;
    assert_eq!(store.set(b"b", b"1").response, Response::Ok);
}

// ---- DEL and VDEL ----

#[test]
fn del_answers_the_count_and_the_deleted_version() {
    let mut store = Store::new();
    let set = version(&store.set(b"k", b"v"));
    let del = store.del(b"k");
    assert_eq!(
        (del.response, del.version),
        (Response::Integer(1), Some(set))
    );
    let again = store.del(b"k");
    assert_eq!(
        (again.response, again.version),
        (Response::Integer(0), None)
    );
    assert_eq!(store.value(b"k"), None);
}

#[test]
fn vdel_deletes_only_a_matching_value() {
    let mut store = Store::new();
    let set = version(&store.set(b"k", b"v"));
    let mismatch = store.vdel(b"k", b"other");
    assert_eq!(
        (mismatch.response, mismatch.version),
        (Response::Integer(-1), Some(set.clone()))
    );
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v")));
    let hit = store.vdel(b"k", b"v");
    assert_eq!(
        (hit.response, hit.version),
        (Response::Integer(1), Some(set))
    );
    let missing = store.vdel(b"k", b"v");
    assert_eq!(
        (missing.response, missing.version),
        (Response::Integer(0), None)
    );
}

// ---- fencing ----

/// A store with `k` fenced by token `NOW:5:lock`.
fn fenced() -> (Store, String) {
    let mut store = Store::new();
    let token = hlc(NOW, 5, "lock");
    let req = store.req(&[b"SET", b"k", b"v0"]).ft(&token);
    assert_eq!(store.send(req).response, Response::Ok);
    (store, token)
}

#[test]
fn first_fencing_token_is_stored_and_then_required_for_set() {
    let (mut store, _) = fenced();
    assert_err(store.set(b"k", b"v1"), ServiceError::FencingTokenRequired);
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v0")));
}

#[test]
fn set_with_an_older_token_is_rejected_and_an_equal_one_accepted() {
    let (mut store, token) = fenced();
    for older in [
        hlc(NOW, 4, "lock"),
        hlc(NOW - 1, 99, "z"),
        hlc(NOW, 5, "lo"),
    ] {
        let req = store.req(&[b"SET", b"k", b"v1"]).ft(&older);
        assert_err(store.send(req), ServiceError::FencingTokenLowerVersion);
    }
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v0")));
    let req = store.req(&[b"SET", b"k", b"v1"]).ft(&token);
    assert_eq!(store.send(req).response, Response::Ok);
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v1")));
}

#[test]
fn set_with_a_newer_token_replaces_the_stored_token() {
    let (mut store, token) = fenced();
    let newer = hlc(NOW + 1, 0, "lock");
    let req = store.req(&[b"SET", b"k", b"v1"]).ft(&newer);
    assert_eq!(store.send(req).response, Response::Ok);
    let req = store.req(&[b"SET", b"k", b"v2"]).ft(&token);
    assert_err(store.send(req), ServiceError::FencingTokenLowerVersion);
    let req = store.req(&[b"SET", b"k", b"v2"]).ft(&newer);
    assert_eq!(store.send(req).response, Response::Ok);
}

#[test]
fn malformed_or_future_fencing_tokens_are_rejected_on_every_writing_verb() {
    let (mut store, _) = fenced();
    store.set(b"free", b"v");
    for args in [
        &[&b"SET"[..], b"free", b"v1"][..],
        &[b"DEL", b"free"],
        &[b"VDEL", b"free", b"v"],
        &[b"DEL", b"missing"],
    ] {
        let req = store.req(args).ft("1:2");
        assert_err(store.send(req), ServiceError::MalformedTimestamp);
        let req = store.req(args).ft(&hlc(NOW + 60_001, 0, "lock"));
        assert_err(store.send(req), ServiceError::FencingTokenSkew);
    }
    assert_eq!(store.value(b"free"), Some(Bytes::from_static(b"v")));
}

#[test]
fn get_never_needs_a_fencing_token() {
    let (mut store, _) = fenced();
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v0")));
}

#[test]
fn del_and_vdel_on_a_fenced_key_need_an_equal_or_newer_token() {
    for vdel in [false, true] {
        let (mut store, token) = fenced();
        let args: &[&[u8]] = if vdel {
            &[b"VDEL", b"k", b"v0"]
        } else {
            &[b"DEL", b"k"]
        };
        let req = store.req(args);
        assert_err(store.send(req), ServiceError::FencingTokenRequired);
        let req = store.req(args).ft(&hlc(NOW, 4, "lock"));
        assert_err(store.send(req), ServiceError::FencingTokenLowerVersion);
        assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v0")));
        let req = store.req(args).ft(&token);
        assert_eq!(store.send(req).response, Response::Integer(1));
        // The key and its token are gone: a plain SET works again.
        assert_eq!(store.set(b"k", b"free").response, Response::Ok);
        assert_eq!(store.del(b"k").response, Response::Integer(1));
    }
}

#[test]
fn vdel_checks_the_fence_before_the_value() {
    let (mut store, _) = fenced();
    let req = store.req(&[b"VDEL", b"k", b"wrong"]);
    assert_err(store.send(req), ServiceError::FencingTokenRequired);
    let req = store
        .req(&[b"VDEL", b"k", b"wrong"])
        .ft(&hlc(NOW + 1, 0, "x"));
    assert_eq!(store.send(req).response, Response::Integer(-1));
    // The newer token of a DEL/VDEL is never stored.
    let req = store.req(&[b"SET", b"k", b"v1"]).ft(&hlc(NOW, 5, "lock"));
    assert_eq!(store.send(req).response, Response::Ok);
}

#[test]
fn token_of_a_set_whose_condition_failed_is_not_stored() {
    let mut store = Store::new();
    store.set(b"k", b"v");
    let req = store
        .req(&[b"SET", b"k", b"w", b"NX"])
        .ft(&hlc(NOW, 0, "lock"));
    assert_eq!(store.send(req).response, Response::Integer(-1));
    assert_eq!(store.set(b"k", b"unfenced").response, Response::Ok);
    let (mut store, _) = fenced();
    let req = store
        .req(&[b"SET", b"k", b"other", b"NEX"])
        .ft(&hlc(NOW + 9, 0, "lock"));
    assert_eq!(store.send(req).response, Response::Integer(-1));
    let req = store.req(&[b"SET", b"k", b"v1"]).ft(&hlc(NOW, 5, "lock"));
    assert_eq!(store.send(req).response, Response::Ok, "token unchanged");
}

#[test]
fn expired_fenced_key_is_unfenced() {
    let mut store = Store::new();
    let req = store
        .req(&[b"SET", b"k", b"v", b"PX", b"10"])
        .ft(&hlc(NOW, 0, "lock"));
    store.send(req);
    store.now += 10;
    assert_eq!(store.set(b"k", b"w").response, Response::Ok);
}

// ---- KEYNOTIFY ----

#[test]
fn keynotify_registers_idempotently_and_stop_answers_ok_then_zero() {
    let mut store = Store::new();
    assert_eq!(store.observe("c", b"k").response, Response::Ok);
    assert_eq!(store.observe("c", b"k").response, Response::Ok);
    assert_eq!(store.set(b"k", b"v").notices.len(), 1, "registered once");
    let stop = store
        .req(&[b"KEYNOTIFY", b"k", b"STOP"])
        .client("c")
        .no_ts();
    assert_eq!(store.send(stop).response, Response::Ok);
    let stop = store
        .req(&[b"KEYNOTIFY", b"k", b"STOP"])
        .client("c")
        .no_ts();
    assert_eq!(store.send(stop).response, Response::Integer(0));
    assert!(store.set(b"k", b"w").notices.is_empty());
    let never = store
        .req(&[b"KEYNOTIFY", b"x", b"STOP"])
        .client("c")
        .no_ts();
    assert_eq!(store.send(never).response, Response::Integer(0));
}

#[test]
fn keynotify_with_another_option_is_a_syntax_error() {
    let mut store = Store::new();
    let req = store.req(&[b"KEYNOTIFY", b"k", b"GO"]);
    assert_err(store.send(req), ServiceError::SyntaxError);
}

#[test]
fn keynotify_answers_with_the_key_s_version_when_it_exists() {
    let mut store = Store::new();
    assert_eq!(store.observe("c", b"k").version, None);
    let set = version(&store.set(b"k", b"v"));
    assert_eq!(store.observe("c", b"k").version, Some(set));
}

#[test]
fn set_notifies_every_observer_of_the_key_with_the_new_version() {
    let mut store = Store::new();
    store.observe("a", b"k");
    store.observe("b", b"k");
    store.observe("c", b"other");
    let outcome = store.set(b"k", b"v\r\n");
    let version = version(&outcome);
    let expected: Vec<Notice> = ["a", "b"]
        .into_iter()
        .map(|client| Notice {
            client_id: client.into(),
            key: Bytes::from_static(b"k"),
            notification: Notification::Set {
                value: Bytes::from_static(b"v\r\n"),
            },
            version: version.clone(),
        })
        .collect();
    assert_eq!(outcome.notices, expected);
}

#[test]
fn failed_requests_notify_nobody() {
    let (mut store, _) = fenced();
    store.observe("a", b"k");
    let req = store
        .req(&[b"SET", b"k", b"x", b"NX"])
        .ft(&hlc(NOW, 5, "lock"));
    assert!(store.send(req).notices.is_empty());
    assert!(store.set(b"k", b"x").notices.is_empty());
    assert!(store.del(b"k").notices.is_empty());
    let req = store.req(&[b"VDEL", b"k", b"no"]).ft(&hlc(NOW, 5, "lock"));
    assert!(store.send(req).notices.is_empty());
    assert!(store.get(b"k").notices.is_empty());
}

#[test]
fn del_and_vdel_notify_delete_with_a_new_version() {
    let mut store = Store::new();
    store.observe("a", b"k");
    for vdel in [false, true] {
        let set = version(&store.set(b"k", b"v"));
        let outcome = if vdel {
            store.vdel(b"k", b"v")
        } else {
            store.del(b"k")
        };
        assert_eq!(outcome.notices.len(), 1);
        let notice = &outcome.notices[0];
        assert_eq!(
            (&*notice.client_id, &notice.key[..], &notice.notification),
            ("a", &b"k"[..], &Notification::Delete)
        );
        assert!(notice.version > set);
        assert_eq!(notice.version.node, "StateStore");
    }
    assert!(store.del(b"k").notices.is_empty(), "nothing was deleted");
}

#[test]
fn drop_client_removes_all_its_registrations_only() {
    let mut store = Store::new();
    store.observe("gone", b"a");
    store.observe("gone", b"b");
    store.observe("stays", b"b");
    store.engine.drop_client("gone");
    store.engine.drop_client("never-seen");
    assert!(store.set(b"a", b"1").notices.is_empty());
    let notices = store.set(b"b", b"1").notices;
    assert_eq!(notices.len(), 1);
    assert_eq!(&*notices[0].client_id, "stays");
    // It may register again after reconnecting.
    store.observe("gone", b"a");
    assert_eq!(store.set(b"a", b"2").notices.len(), 1);
}

#[test]
fn registrations_are_per_client_and_key() {
    let mut store = Store::new();
    store.observe("a", b"k");
    let stop = store
        .req(&[b"KEYNOTIFY", b"k", b"STOP"])
        .client("b")
        .no_ts();
    assert_eq!(store.send(stop).response, Response::Integer(0));
    assert_eq!(store.set(b"k", b"v").notices.len(), 1);
}

// ---- payloads ----

#[test]
fn binary_keys_and_values_round_trip_byte_for_byte() {
    let mut store = Store::new();
    let key = b"k\r\n\0\xff*$3\r\n";
    for value in [&b""[..], b"\r\n", b"\0\0", b"$-1\r\n", &[0xff; 300]] {
        assert_eq!(store.set(key, value).response, Response::Ok);
        assert_eq!(store.value(key).as_deref(), Some(value));
        assert_eq!(
            store.get(key).response.encode(),
            Bytes::from([format!("${}\r\n", value.len()).as_bytes(), value, b"\r\n"].concat())
        );
    }
    assert_eq!(store.vdel(key, &[0xff; 300]).response, Response::Integer(1));
}

#[test]
fn verbs_and_options_are_accepted_in_any_case() {
    let mut store = Store::new();
    let req = store.req(&[b"set", b"k", b"v", b"nEx", b"px", b"100"]);
    assert_eq!(store.send(req).response, Response::Ok);
    let req = store.req(&[b"Get", b"k"]);
    assert_eq!(
        store.send(req).response,
        Response::Value(Bytes::from_static(b"v"))
    );
    let req = store.req(&[b"keynotify", b"k"]);
    assert_eq!(store.send(req).response, Response::Ok);
    let req = store.req(&[b"KeyNotify", b"k", b"stop"]);
    assert_eq!(store.send(req).response, Response::Ok);
    let req = store.req(&[b"vdel", b"k", b"v"]);
    assert_eq!(store.send(req).response, Response::Integer(1));
    let req = store.req(&[b"SeT", b"k", b"v", b"nx"]);
    assert_eq!(store.send(req).response, Response::Ok);
    let req = store.req(&[b"dEl", b"k"]);
    assert_eq!(store.send(req).response, Response::Integer(1));
}

#[test]
fn malformed_payloads_get_the_matching_error() {
    let cases: &[(&[u8], ServiceError)] = &[
        (b"", ServiceError::SyntaxError),
        (b"GET k\r\n", ServiceError::SyntaxError),
        (b"*2\r\n$3\r\nGET\r\n$1\r\nk", ServiceError::SyntaxError),
        (
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nextra",
            ServiceError::SyntaxError,
        ),
        (b"*2\r\n$3\r\nGET\r\n:1\r\n", ServiceError::SyntaxError),
        (b"*-1\r\n", ServiceError::SyntaxError),
        (b"*0\r\n", ServiceError::SyntaxError),
        // Integer overflow in a count and in a length.
        (b"*99999999999999999999\r\n", ServiceError::SyntaxError),
        (
            b"*1\r\n$99999999999999999999\r\nGET\r\n",
            ServiceError::SyntaxError,
        ),
        // Declared lengths beyond the payload.
        (b"*1000000\r\n$3\r\nGET\r\n", ServiceError::SyntaxError),
        (
            b"*2\r\n$3\r\nGET\r\n$4000000000\r\nk\r\n",
            ServiceError::SyntaxError,
        ),
        (
            b"*2\r\n$4\r\nPING\r\n$1\r\nk\r\n",
            ServiceError::UnknownCommand,
        ),
        (b"*1\r\n$3\r\nGET\r\n", ServiceError::WrongNumberOfArguments),
        (
            b"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n",
            ServiceError::WrongNumberOfArguments,
        ),
        (
            b"*3\r\n$3\r\nGET\r\n$1\r\nk\r\n$1\r\nx\r\n",
            ServiceError::WrongNumberOfArguments,
        ),
        (
            b"*2\r\n$4\r\nVDEL\r\n$1\r\nk\r\n",
            ServiceError::WrongNumberOfArguments,
        ),
        (
            b"*1\r\n$9\r\nKEYNOTIFY\r\n",
            ServiceError::WrongNumberOfArguments,
        ),
        (
            b"*2\r\n$3\r\nDEL\r\n$0\r\n\r\n",
            ServiceError::KeyLengthZero,
        ),
        (
            b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$1\r\nv\r\n",
            ServiceError::KeyLengthZero,
        ),
    ];
    let mut store = Store::new();
    store.observe("w", b"k");
    for (payload, expected) in cases {
        let outcome = store.send(Req::from_payload(payload).ts(&hlc(NOW, 0, "c")));
        assert_eq!(
            error(&outcome).as_ref(),
            Some(expected),
            "payload {:?}",
            String::from_utf8_lossy(payload)
        );
        assert_err(outcome, expected.clone());
    }
    assert!(store.engine.is_empty());
}

#[test]
fn scan_lists_keys_in_one_page() {
    let mut store = Store::new();
    store.set(b"k", b"v");
    let req = store.req(&[b"SCAN", b"*"]);
    let outcome = store.send(req);
    assert_eq!(
        outcome.response,
        Response::Scan(statestore::protocol::ScanPage {
            keys: vec![Bytes::from_static(b"k")],
            token: None,
        })
    );
    assert_eq!(outcome.version, None);
}

#[test]
fn persist_is_accepted_and_changes_nothing() {
    let mut store = Store::new();
    let payload = Bytes::from(resp(&[b"SET", b"k", b"v"]));
    let ts = hlc(NOW, 0, "c");
    let ctx = RequestContext {
        client_id: "c",
        timestamp: Some(&ts),
        fencing_token: None,
        persist: true,
        now_ms: NOW,
    };
    assert_eq!(
        store.engine.apply_payload(&payload, &ctx).response,
        Response::Ok
    );
    assert_eq!(store.value(b"k"), Some(Bytes::from_static(b"v")));
}
