//! Black-box conformance suite: drives a running server over MQTT with a plain MQTT 5 client
//! and checks the statements of the protocol document (shared/spec/state-store-protocol.txt)
//! and of protocol-facts.md. Every test runs in both modes (embedded broker, and external
//! mode on Mosquitto); statements that only one mode can honour say so.

mod support;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::QoS;
use statestore::protocol::topics;
use statestore_server::EngineConfig;
use support::wire::{
    bulk, err, hlc, hlc_now, now_ms, resp, Ts, FT_LOWER, FT_REQUIRED, FT_SKEW, TS_SKEW,
};
use support::{unique, Env, Kind, Probe};

const OK: &[u8] = b"+OK\r\n";
const NIL: &[u8] = b"$-1\r\n";
const NOT_APPLIED: &[u8] = b":-1\r\n";
const ZERO: &[u8] = b":0\r\n";
const ONE: &[u8] = b":1\r\n";

fn set(key: &[u8], value: &[u8]) -> Vec<u8> {
    resp(&[b"SET", key, value])
}

fn get(key: &[u8]) -> Vec<u8> {
    resp(&[b"GET", key])
}

fn notify_set(value: &[u8]) -> Vec<u8> {
    resp(&[b"NOTIFY", b"SET", b"VALUE", value])
}

fn notify_delete() -> Vec<u8> {
    resp(&[b"NOTIFY", b"DELETE"])
}

/// Runs each named test body in both modes.
macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Env::start(super::Kind::Embedded).await).await;
                }
            )*
        }
        mod external_mosquitto {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Env::start(super::Kind::External).await).await;
                }
            )*
        }
    };
}

in_both_modes!(
    set_then_get_returns_the_value_and_its_version,
    responses_carry_status_protocol_version_and_correlation,
    a_past_timestamp_is_accepted_and_the_version_follows_the_server_clock,
    get_del_vdel_of_a_missing_key_are_not_errors,
    del_removes_and_returns_the_version,
    vdel_deletes_only_on_a_matching_value,
    nx_sets_only_an_absent_key,
    nex_sets_an_absent_or_equal_key,
    px_must_be_a_positive_number,
    keys_expire_without_requests_and_observers_hear_delete,
    set_timestamp_missing_malformed_or_too_far_ahead,
    fencing_tokens_guard_set_del_and_vdel,
    fencing_token_malformed_or_too_far_ahead,
    notifications_for_set_del_and_vdel,
    keynotify_stop_and_stop_of_an_unobserved_key,
    lower_case_verbs_and_options_are_accepted,
    binary_keys_and_values_round_trip,
    malformed_payloads_get_err_and_the_server_keeps_serving,
    quota_limits_the_number_of_keys,
    qos_0_and_2_requests_are_refused_with_400,
    missing_correlation_data_is_refused_with_400,
    missing_response_topic_gets_no_reply,
    forbidden_response_topic,
    source_id_handling,
    registrations_are_dropped_when_a_client_disconnects,
);

async fn set_then_get_returns_the_value_and_its_version(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let request_ts = hlc_now("client");
    let reply = c
        .request_props(&set(key.as_bytes(), b"value"), &[("__ts", &request_ts)])
        .await;
    reply.expect(OK);
    let version = reply.ts();
    assert!(
        version > Ts::parse(&request_ts),
        "{version:?} after {request_ts}"
    );
    assert_eq!(version.node, "StateStore");
    // The version GET returns is the one the SET returned.
    let reply = c.request(&get(key.as_bytes())).await;
    reply.expect(&bulk(b"value"));
    assert_eq!(reply.ts(), version);
    // A later SET gets a higher version.
    let reply = c.request(&set(key.as_bytes(), b"value2")).await;
    reply.expect(OK);
    assert!(reply.ts() > version);
}

async fn responses_carry_status_protocol_version_and_correlation(env: Env) {
    let mut c = env.client("c").await;
    let mut send = c.envelope();
    let correlation = Bytes::from_static(&[0, 0xff, b'\r', b'\n', 7]);
    send.correlation = Some(correlation.clone());
    let reply = c.request_with(&get(b"k"), send).await;
    assert_eq!(reply.correlation, Some(correlation));
    assert_eq!(reply.topic, topics::response_topic(&c.id));
    assert_eq!(reply.property("__stat"), Some("200"));
    assert_eq!(reply.property("__protVer"), Some("1.0"));
    // Any response topic works, not only the recommended one.
    let custom = format!("replies/{}", c.id);
    c.subscribe(&custom).await;
    let mut send = c.envelope();
    send.response_topic = Some(custom.clone());
    let reply = c.request_with(&get(b"k"), send).await;
    assert_eq!(reply.topic, custom);
}

async fn a_past_timestamp_is_accepted_and_the_version_follows_the_server_clock(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let before = now_ms();
    let old = hlc(before - 3_600_000, 0, "client");
    let reply = c
        .request_props(&set(key.as_bytes(), b"v"), &[("__ts", &old)])
        .await;
    reply.expect(OK);
    assert!(reply.ts().wall_ms >= before, "{:?}", reply.ts());
    // Within the skew ahead is accepted, and the version is still greater than it.
    let ahead = hlc(now_ms() + 20_000, 3, "client");
    let reply = c
        .request_props(&set(key.as_bytes(), b"v"), &[("__ts", &ahead)])
        .await;
    reply.expect(OK);
    assert!(reply.ts() > Ts::parse(&ahead));
}

async fn get_del_vdel_of_a_missing_key_are_not_errors(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("missing");
    let reply = c.request(&get(key.as_bytes())).await;
    reply.expect(NIL);
    assert_eq!(reply.property("__stat"), Some("200"));
    c.request(&resp(&[b"DEL", key.as_bytes()]))
        .await
        .expect(ZERO);
    c.request(&resp(&[b"VDEL", key.as_bytes(), b"v"]))
        .await
        .expect(ZERO);
}

async fn del_removes_and_returns_the_version(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let version = c.request(&set(key.as_bytes(), b"v")).await.ts();
    let reply = c.request(&resp(&[b"DEL", key.as_bytes()])).await;
    reply.expect(ONE);
    assert_eq!(reply.ts(), version);
    c.request(&get(key.as_bytes())).await.expect(NIL);
    c.request(&resp(&[b"DEL", key.as_bytes()]))
        .await
        .expect(ZERO);
}

async fn vdel_deletes_only_on_a_matching_value(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let version = c.request(&set(key.as_bytes(), b"mine")).await.ts();
    let reply = c
        .request(&resp(&[b"VDEL", key.as_bytes(), b"theirs"]))
        .await;
    reply.expect(NOT_APPLIED);
    c.request(&get(key.as_bytes())).await.expect(&bulk(b"mine"));
    let reply = c.request(&resp(&[b"VDEL", key.as_bytes(), b"mine"])).await;
    reply.expect(ONE);
    assert_eq!(reply.ts(), version);
    c.request(&get(key.as_bytes())).await.expect(NIL);
}

async fn nx_sets_only_an_absent_key(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    c.request(&resp(&[b"SET", key.as_bytes(), b"first", b"NX"]))
        .await
        .expect(OK);
    c.request(&resp(&[b"SET", key.as_bytes(), b"second", b"NX"]))
        .await
        .expect(NOT_APPLIED);
    c.request(&get(key.as_bytes()))
        .await
        .expect(&bulk(b"first"));
}

async fn nex_sets_an_absent_or_equal_key(env: Env) {
    let mut c = env.client("c").await;
    let lock = unique("lock");
    // The lock pattern: acquire, renew, and a rival fails.
    c.request(&resp(&[
        b"SET",
        lock.as_bytes(),
        b"holder-1",
        b"NEX",
        b"PX",
        b"10000",
    ]))
    .await
    .expect(OK);
    c.request(&resp(&[
        b"SET",
        lock.as_bytes(),
        b"holder-1",
        b"NEX",
        b"PX",
        b"10000",
    ]))
    .await
    .expect(OK);
    c.request(&resp(&[b"SET", lock.as_bytes(), b"holder-2", b"NEX"]))
        .await
        .expect(NOT_APPLIED);
    c.request(&get(lock.as_bytes()))
        .await
        .expect(&bulk(b"holder-1"));
}

async fn px_must_be_a_positive_number(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    for bad in [&b"0"[..], b"-5", b"soon"] {
        c.request(&resp(&[b"SET", key.as_bytes(), b"v", b"PX", bad]))
            .await
            .expect(&err("syntax error"));
    }
    c.request(&get(key.as_bytes())).await.expect(NIL);
    // A deadline beyond any clock is just "never".
    c.request(&resp(&[
        b"SET",
        key.as_bytes(),
        b"v",
        b"PX",
        b"9223372036854775807",
    ]))
    .await
    .expect(OK);
    c.request(&get(key.as_bytes())).await.expect(&bulk(b"v"));
}

async fn keys_expire_without_requests_and_observers_hear_delete(env: Env) {
    let mut observer = env.client("observer").await;
    let mut writer = env.client("writer").await;
    let key = unique("ttl");
    observer
        .request(&resp(&[b"KEYNOTIFY", key.as_bytes()]))
        .await
        .expect(OK);
    let version = writer
        .request(&resp(&[b"SET", key.as_bytes(), b"v", b"PX", b"300"]))
        .await
        .ts();
    let set_notice = observer.next_notification().await;
    set_notice.expect(&notify_set(b"v"));
    // No request is sent from here on: the server's timer must expire the key.
    let delete_notice = observer.next_notification().await;
    delete_notice.expect(&notify_delete());
    assert_eq!(
        delete_notice.topic,
        topics::notification_topic(&observer.id, key.as_bytes())
    );
    assert!(delete_notice.ts() >= version);
    writer.request(&get(key.as_bytes())).await.expect(NIL);
}

async fn set_timestamp_missing_malformed_or_too_far_ahead(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let payload = set(key.as_bytes(), b"v");
    let mut send = c.envelope();
    send.properties.retain(|(name, _)| name != "__ts");
    c.request_with(&payload, send)
        .await
        .expect(&err("missing timestamp"));
    for malformed in ["garbage", "1:2", "x:0:node", "1:y:node", ""] {
        c.request_props(&payload, &[("__ts", malformed)])
            .await
            .expect(&err("malformed timestamp"));
    }
    let future = hlc(now_ms() + 120_000, 0, "client");
    let reply = c.request_props(&payload, &[("__ts", &future)]).await;
    reply.expect(&err(TS_SKEW));
    assert_eq!(reply.property("__stat"), Some("200"));
    // None of these changed anything.
    c.request(&get(key.as_bytes())).await.expect(NIL);
    // Unpadded numbers are a valid HLC.
    let unpadded = format!("{}:0:client", now_ms());
    c.request_props(&payload, &[("__ts", &unpadded)])
        .await
        .expect(OK);
}

async fn fencing_tokens_guard_set_del_and_vdel(env: Env) {
    let mut c = env.client("c").await;
    let lock = unique("lock");
    let key = unique("protected");
    let token = c
        .request(&resp(&[
            b"SET",
            lock.as_bytes(),
            b"me",
            b"NEX",
            b"PX",
            b"60000",
        ]))
        .await
        .ts();
    let token_text = hlc(token.wall_ms, token.counter, &token.node);
    let older = hlc(token.wall_ms - 1000, 0, &token.node);
    let newer = hlc(token.wall_ms + 1, 0, &token.node);
    let payload = set(key.as_bytes(), b"v1");
    // The first SET with __ft fences the key.
    c.request_props(&payload, &[("__ft", &token_text)])
        .await
        .expect(OK);
    c.request(&payload).await.expect(&err(FT_REQUIRED));
    c.request_props(&payload, &[("__ft", &older)])
        .await
        .expect(&err(FT_LOWER));
    c.request_props(&payload, &[("__ft", &token_text)])
        .await
        .expect(OK);
    // A newer token replaces the stored one: the previous one is now too old.
    c.request_props(&payload, &[("__ft", &newer)])
        .await
        .expect(OK);
    c.request_props(&payload, &[("__ft", &token_text)])
        .await
        .expect(&err(FT_LOWER));
    // GET never needs a token.
    c.request(&get(key.as_bytes())).await.expect(&bulk(b"v1"));
    // DEL and VDEL follow the same rules.
    let del = resp(&[b"DEL", key.as_bytes()]);
    let vdel = resp(&[b"VDEL", key.as_bytes(), b"v1"]);
    c.request(&del).await.expect(&err(FT_REQUIRED));
    c.request(&vdel).await.expect(&err(FT_REQUIRED));
    c.request_props(&del, &[("__ft", &older)])
        .await
        .expect(&err(FT_LOWER));
    c.request_props(&vdel, &[("__ft", &newer)])
        .await
        .expect(ONE);
    c.request(&get(key.as_bytes())).await.expect(NIL);
}

async fn fencing_token_malformed_or_too_far_ahead(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let payload = set(key.as_bytes(), b"v");
    c.request_props(&payload, &[("__ft", "not-a-clock")])
        .await
        .expect(&err("malformed timestamp"));
    let future = hlc(now_ms() + 120_000, 0, "lock");
    c.request_props(&payload, &[("__ft", &future)])
        .await
        .expect(&err(FT_SKEW));
    c.request(&get(key.as_bytes())).await.expect(NIL);
}

async fn notifications_for_set_del_and_vdel(env: Env) {
    let mut observer = env.client("observer").await;
    let mut writer = env.client("writer").await;
    let key = unique("watched");
    let reply = observer
        .request(&resp(&[b"KEYNOTIFY", key.as_bytes()]))
        .await;
    reply.expect(OK);
    let version = writer.request(&set(key.as_bytes(), b"abc")).await.ts();
    let notice = observer.next_notification().await;
    notice.expect(&notify_set(b"abc"));
    assert_eq!(
        notice.topic,
        topics::notification_topic(&observer.id, key.as_bytes())
    );
    assert_eq!(notice.ts(), version);
    writer
        .request(&resp(&[b"DEL", key.as_bytes()]))
        .await
        .expect(ONE);
    observer.next_notification().await.expect(&notify_delete());
    writer.request(&set(key.as_bytes(), b"x")).await.expect(OK);
    observer.next_notification().await.expect(&notify_set(b"x"));
    writer
        .request(&resp(&[b"VDEL", key.as_bytes(), b"x"]))
        .await
        .expect(ONE);
    let notice = observer.next_notification().await;
    notice.expect(&notify_delete());
    assert!(notice.property("__ts").is_some());
}

async fn keynotify_stop_and_stop_of_an_unobserved_key(env: Env) {
    let mut observer = env.client("observer").await;
    let mut writer = env.client("writer").await;
    let stopped = unique("stopped");
    let still = unique("still");
    let observe = |key: &str| resp(&[b"KEYNOTIFY", key.as_bytes()]);
    let stop = |key: &str| resp(&[b"KEYNOTIFY", key.as_bytes(), b"STOP"]);
    observer.request(&observe(&stopped)).await.expect(OK);
    observer.request(&stop(&stopped)).await.expect(OK);
    observer.request(&stop(&stopped)).await.expect(ZERO);
    observer.request(&observe(&still)).await.expect(OK);
    writer
        .request(&set(stopped.as_bytes(), b"1"))
        .await
        .expect(OK);
    writer
        .request(&set(still.as_bytes(), b"2"))
        .await
        .expect(OK);
    // Notifications keep the server's order: the first one is about the key still observed.
    let notice = observer.next_notification().await;
    assert_eq!(
        notice.topic,
        topics::notification_topic(&observer.id, still.as_bytes())
    );
}

async fn lower_case_verbs_and_options_are_accepted(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let k = key.as_bytes();
    c.request(&resp(&[b"set", k, b"v", b"nx", b"px", b"60000"]))
        .await
        .expect(OK);
    c.request(&resp(&[b"get", k])).await.expect(&bulk(b"v"));
    c.request(&resp(&[b"Set", k, b"v", b"nex"]))
        .await
        .expect(OK);
    c.request(&resp(&[b"keynotify", k])).await.expect(OK);
    c.request(&resp(&[b"keynotify", k, b"stop"]))
        .await
        .expect(OK);
    c.request(&resp(&[b"vdel", k, b"other"]))
        .await
        .expect(NOT_APPLIED);
    c.request(&resp(&[b"del", k])).await.expect(ONE);
}

async fn binary_keys_and_values_round_trip(env: Env) {
    let mut observer = env.client("observer").await;
    let mut c = env.client("c").await;
    let mut key = b"\0\r\n\xff key ".to_vec();
    key.extend_from_slice(unique("bin").as_bytes());
    let value = b"\r\n\0\xfe$-1\r\n*2\r\n".to_vec();
    observer
        .request(&resp(&[b"KEYNOTIFY", &key]))
        .await
        .expect(OK);
    c.request(&set(&key, &value)).await.expect(OK);
    c.request(&get(&key)).await.expect(&bulk(&value));
    let notice = observer.next_notification().await;
    notice.expect(&notify_set(&value));
    assert_eq!(notice.topic, topics::notification_topic(&observer.id, &key));
    // Empty values are values; large ones (65 KB) and long keys (6.5 KB) work.
    c.request(&set(&key, b"")).await.expect(OK);
    c.request(&get(&key)).await.expect(&bulk(b""));
    let long_key: Vec<u8> = (0..6_500u32).map(|i| (i % 251) as u8).collect();
    let big: Vec<u8> = (0..65_000u32).map(|i| (i % 253) as u8).collect();
    c.request(&set(&long_key, &big)).await.expect(OK);
    c.request(&get(&long_key)).await.expect(&bulk(&big));
}

async fn malformed_payloads_get_err_and_the_server_keeps_serving(env: Env) {
    let mut c = env.client("c").await;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"garbage".to_vec(), "syntax error"),
        (Vec::new(), "syntax error"),
        (b"*2\r\n$3\r\nGET\r\n$100\r\nk\r\n".to_vec(), "syntax error"),
        (b"*99999999999999999999999\r\n".to_vec(), "syntax error"),
        (
            b"*2\r\n$99999999999999999999999\r\nGET\r\n".to_vec(),
            "syntax error",
        ),
        (b"*1\r\n:5\r\n".to_vec(), "syntax error"),
        (resp(&[b"FROB", b"k"]), "unknown command"),
        (resp(&[b"GET"]), "wrong number of arguments"),
        (resp(&[b"GET", b"a", b"b"]), "wrong number of arguments"),
        (resp(&[b"SET", b"k"]), "wrong number of arguments"),
        (resp(&[b"VDEL", b"k"]), "wrong number of arguments"),
        (resp(&[b"GET", b""]), "the key length is zero"),
        (resp(&[b"SET", b"", b"v"]), "the key length is zero"),
        (resp(&[b"SET", b"k", b"v", b"XX"]), "syntax error"),
    ];
    for (payload, text) in cases {
        let reply = c.request(&payload).await;
        assert_eq!(
            String::from_utf8_lossy(&reply.payload),
            String::from_utf8_lossy(&err(text)),
            "payload {:?}",
            String::from_utf8_lossy(&payload)
        );
        assert_eq!(reply.property("__stat"), Some("200"));
    }
    let key = unique("after");
    c.request(&set(key.as_bytes(), b"fine")).await.expect(OK);
}

async fn quota_limits_the_number_of_keys(env: Env) {
    let kind = env.kind;
    drop(env);
    let env = Env::with_engine(
        kind,
        EngineConfig {
            max_keys: Some(2),
            ..EngineConfig::default()
        },
    )
    .await;
    let mut c = env.client("c").await;
    c.request(&set(b"a", b"1")).await.expect(OK);
    c.request(&set(b"b", b"1")).await.expect(OK);
    let reply = c.request(&set(b"c", b"1")).await;
    reply.expect(&err("the quota has been exceeded"));
    assert_eq!(reply.property("__stat"), Some("200"));
    // Overwriting an existing key is not a new key.
    c.request(&set(b"a", b"2")).await.expect(OK);
    c.request(&resp(&[b"DEL", b"a"])).await.expect(ONE);
    c.request(&set(b"c", b"1")).await.expect(OK);
}

async fn qos_0_and_2_requests_are_refused_with_400(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    for qos in [QoS::AtMostOnce, QoS::ExactlyOnce] {
        let mut send = c.envelope();
        send.qos = qos;
        let reply = c.request_with(&set(key.as_bytes(), b"v"), send).await;
        assert_eq!(reply.property("__stat"), Some("400"), "{qos:?}: {reply:?}");
        assert!(reply
            .property("__stMsg")
            .is_some_and(|m| m.contains("QoS 1")));
    }
    c.request(&get(key.as_bytes())).await.expect(NIL);
}

async fn missing_correlation_data_is_refused_with_400(env: Env) {
    let mut c = env.client("c").await;
    let mut send = c.envelope();
    send.correlation = None;
    let reply = c.request_with(&get(b"k"), send).await;
    assert_eq!(reply.property("__stat"), Some("400"));
    assert_eq!(reply.property("__propName"), Some("Correlation Data"));
    assert!(reply.property("__stMsg").is_some());
}

async fn missing_response_topic_gets_no_reply(env: Env) {
    let mut c = env.client("c").await;
    let key = unique("key");
    let mut send = c.envelope();
    send.response_topic = None;
    c.publish(&set(key.as_bytes(), b"v"), send).await;
    // The next reply is the GET's (replies keep request order), and the SET was not applied.
    c.request(&get(key.as_bytes())).await.expect(NIL);
}

async fn forbidden_response_topic(env: Env) {
    for forbidden in [
        topics::INVOKE_TOPIC.to_owned(),
        format!("{}/x/command/notify/00", topics::NOTIFY_PREFIX),
    ] {
        let mut c = env.client("c").await;
        let key = unique("key");
        let mut send = c.envelope();
        send.response_topic = Some(forbidden.clone());
        c.publish(&set(key.as_bytes(), b"v"), send).await;
        match env.kind {
            // Like the real service: the client is disconnected.
            Kind::Embedded => {
                let why = c.lost().await;
                assert!(!why.is_empty());
            }
            // An external broker cannot be told to disconnect anyone: the request is
            // dropped (and logged) and the client keeps working.
            Kind::External => {}
        }
        let mut other = env.client("other").await;
        other.request(&get(key.as_bytes())).await.expect(NIL);
    }
}

async fn source_id_handling(env: Env) {
    let mut c = env.client("c").await;
    let mut observer = env.client("observer").await;
    let key = unique("key");
    match env.kind {
        Kind::Embedded => {
            // The broker says who the sender is: __srcId is neither needed nor believed.
            let mut send = c.envelope();
            send.properties.retain(|(name, _)| name != "__srcId");
            c.request_with(&get(key.as_bytes()), send).await.expect(NIL);
            let reply = c
                .request_props(
                    &resp(&[b"KEYNOTIFY", key.as_bytes()]),
                    &[("__srcId", &observer.id)],
                )
                .await;
            reply.expect(OK);
            observer
                .request(&set(key.as_bytes(), b"v"))
                .await
                .expect(OK);
            // The registration is the real sender's.
            let notice = c.next_notification().await;
            assert_eq!(
                notice.topic,
                topics::notification_topic(&c.id, key.as_bytes())
            );
        }
        Kind::External => {
            // __srcId is the only identity there: it is required...
            let mut send = c.envelope();
            send.properties.retain(|(name, _)| name != "__srcId");
            let reply = c.request_with(&get(key.as_bytes()), send).await;
            assert_eq!(reply.property("__stat"), Some("400"));
            assert_eq!(reply.property("__propName"), Some("__srcId"));
            // ...and must match a clients/{id}/... response topic.
            let reply = c
                .request_props(&get(key.as_bytes()), &[("__srcId", &observer.id)])
                .await;
            assert_eq!(reply.property("__stat"), Some("400"));
            assert_eq!(reply.property("__propName"), Some("__srcId"));
        }
    }
}

async fn registrations_are_dropped_when_a_client_disconnects(env: Env) {
    if env.kind == Kind::External {
        // An external broker does not report disconnects: registrations live until
        // KEYNOTIFY STOP (documented limitation).
        return;
    }
    let mut writer = env.client("writer").await;
    let id = unique("leaver");
    let key = unique("key");
    let mut leaver = env.client_with_id(&id).await;
    leaver
        .request(&resp(&[b"KEYNOTIFY", key.as_bytes()]))
        .await
        .expect(OK);
    leaver.disconnect().await;
    // A witness listens on the leaver's notification topics and observes a marker key of
    // its own; each round sets the key then the marker. The broker reports the disconnect
    // asynchronously, so rounds repeat (bounded) until the leaver's registration is gone.
    let mut witness = env.client("witness").await;
    witness.subscribe(&topics::notification_filter(&id)).await;
    let marker = unique("marker");
    witness
        .request(&resp(&[b"KEYNOTIFY", marker.as_bytes()]))
        .await
        .expect(OK);
    for round in 0..200 {
        writer.request(&set(key.as_bytes(), b"v")).await.expect(OK);
        writer
            .request(&set(marker.as_bytes(), b"m"))
            .await
            .expect(OK);
        let first = witness.next_notification().await;
        if first.topic == topics::notification_topic(&witness.id, marker.as_bytes()) {
            return;
        }
        assert_eq!(first.topic, topics::notification_topic(&id, key.as_bytes()));
        // The leaver was still registered: consume the marker's notice, try again.
        witness.next_notification().await;
        assert!(round < 199, "the registration outlived the disconnect");
    }
}

/// A probe can reconnect under the same id after the server dropped its registrations,
/// and register again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_reconnect_can_register_again() {
    let env = Env::start(Kind::Embedded).await;
    let id = unique("again");
    let key = unique("key");
    let first = env.client_with_id(&id).await;
    first.disconnect().await;
    let mut second: Probe = env.client_with_id(&id).await;
    second
        .request(&resp(&[b"KEYNOTIFY", key.as_bytes()]))
        .await
        .expect(OK);
    let mut writer = env.client("writer").await;
    writer.request(&set(key.as_bytes(), b"v")).await.expect(OK);
    second.next_notification().await.expect(&notify_set(b"v"));
}
