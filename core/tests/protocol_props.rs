//! Property tests: round trips over arbitrary bytes, and decoders that never panic.

use bytes::Bytes;
use proptest::prelude::*;
use statestore::protocol::{
    Hlc, Notification, Request, Response, ScanPage, ServiceError, SetCondition, SetFlags,
};

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn key() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 1..64).prop_map(Bytes::from)
}

fn request() -> impl Strategy<Value = Request> {
    let condition = prop_oneof![
        Just(SetCondition::Always),
        Just(SetCondition::OnlyIfAbsent),
        Just(SetCondition::OnlyIfAbsentOrEqual)
    ];
    let options =
        (condition, prop::option::of(1..=i64::MAX as u64)).prop_map(|(condition, expiry_ms)| {
            SetFlags {
                condition,
                expiry_ms,
            }
        });
    prop_oneof![
        (key(), bytes(256), options).prop_map(|(key, value, flags)| Request::Set {
            key,
            value,
            flags
        }),
        key().prop_map(|key| Request::Get { key }),
        key().prop_map(|key| Request::Del { key }),
        (key(), bytes(64)).prop_map(|(key, value)| Request::VDel { key, value }),
        (key(), any::<bool>()).prop_map(|(key, stop)| Request::KeyNotify { key, stop }),
        (bytes(32), prop::option::of(bytes(32)))
            .prop_map(|(pattern, token)| Request::Scan { pattern, token }),
    ]
}

fn response() -> impl Strategy<Value = Response> {
    prop_oneof![
        Just(Response::Ok),
        Just(Response::Nil),
        any::<i64>().prop_map(Response::Integer),
        bytes(256).prop_map(Response::Value),
        "[a-z ]{1,40}"
            .prop_map(|t| Response::Error(ServiceError::from_text(t.trim())))
            .prop_filter(
                "non-empty text",
                |r| !matches!(r, Response::Error(ServiceError::Unknown(t)) if t.is_empty())
            ),
        (
            prop::collection::vec(bytes(16), 0..8),
            prop::option::of(bytes(16))
        )
            .prop_map(|(keys, token)| Response::Scan(ScanPage { keys, token })),
    ]
}

proptest! {
    #[test]
    fn requests_round_trip(request in request()) {
        let payload = request.encode();
        prop_assert_eq!(payload.len(), request.encoded_len());
        prop_assert_eq!(Request::decode(&payload), Ok(request));
    }

    #[test]
    fn responses_round_trip(response in response()) {
        prop_assert_eq!(Response::decode(&response.encode()), Ok(response));
    }

    #[test]
    fn notifications_round_trip(value in prop::option::of(bytes(256))) {
        let notification = match value {
            Some(value) => Notification::Set { value },
            None => Notification::Delete,
        };
        prop_assert_eq!(Notification::decode(&notification.encode()), Ok(notification));
    }

    #[test]
    fn hlc_round_trips_and_orders_like_its_fields(
        a in (any::<u64>(), any::<u64>(), "[ -~]{0,12}"),
        b in (any::<u64>(), any::<u64>(), "[ -~]{0,12}"),
    ) {
        let ha = Hlc { wall_ms: a.0, counter: a.1, node: a.2.clone() };
        let hb = Hlc { wall_ms: b.0, counter: b.1, node: b.2.clone() };
        prop_assert_eq!(ha.to_string().parse::<Hlc>(), Ok(ha.clone()));
        prop_assert_eq!(ha.cmp(&hb), a.cmp(&b));
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(data in bytes(512)) {
        let _ = Request::decode(&data);
        let _ = Response::decode(&data);
        let _ = Notification::decode(&data);
        let _ = String::from_utf8_lossy(&data).parse::<Hlc>();
    }

    #[test]
    fn decoders_never_panic_on_mutated_valid_payloads(
        request in request(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut payload = request.encode().to_vec();
        for (at, byte) in flips {
            let i = at.index(payload.len());
            payload[i] = byte;
        }
        let payload = Bytes::from(payload);
        let _ = Request::decode(&payload);
        let _ = Request::decode(&payload.slice(..cut.index(payload.len() + 1)));
        let _ = Response::decode(&payload);
    }
}
