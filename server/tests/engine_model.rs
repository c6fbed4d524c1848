//! Random request sequences against the engine and against a deliberately naive model of the
//! state store (linear scans, no indexes): responses, notices and versions must agree.

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::prelude::*;
use statestore::protocol::{Hlc, Notification, Request, Response, SetCondition, SetFlags};
use statestore_server::engine::{Engine, EngineConfig, Notice, RequestContext};

const START: u64 = 1_700_000_000_000;
const KEYS: [&[u8]; 4] = [b"a", b"b", b"\r\n", b"\0"];
const VALUES: [&[u8]; 3] = [b"", b"x", b"y\r\n"];
const CLIENTS: [&str; 3] = ["c0", "c1", "c2"];
const MAX_KEYS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Set {
        key: usize,
        value: usize,
        condition: SetCondition,
        px: Option<u64>,
        token: Option<u64>,
    },
    Get(usize),
    Del {
        key: usize,
        token: Option<u64>,
    },
    VDel {
        key: usize,
        value: usize,
        token: Option<u64>,
    },
    Observe(usize, usize),
    Stop(usize, usize),
    DropClient(usize),
    Advance(u64),
    Expire,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let value = 0..VALUES.len();
    let client = 0..CLIENTS.len();
    let token = proptest::option::of(0..4u64);
    let condition = prop_oneof![
        Just(SetCondition::Always),
        Just(SetCondition::OnlyIfAbsent),
        Just(SetCondition::OnlyIfAbsentOrEqual),
    ];
    prop_oneof![
        4 => (key.clone(), value.clone(), condition, proptest::option::of(1..30u64), token.clone())
            .prop_map(|(key, value, condition, px, token)| Op::Set { key, value, condition, px, token }),
        2 => key.clone().prop_map(Op::Get),
        2 => (key.clone(), token.clone()).prop_map(|(key, token)| Op::Del { key, token }),
        2 => (key.clone(), value, token).prop_map(|(key, value, token)| Op::VDel { key, value, token }),
        2 => (client.clone(), key.clone()).prop_map(|(c, k)| Op::Observe(c, k)),
        1 => (client.clone(), key).prop_map(|(c, k)| Op::Stop(c, k)),
        1 => client.prop_map(Op::DropClient),
        2 => (0..20u64).prop_map(Op::Advance),
        1 => Just(Op::Expire),
    ]
}

/// One key in the model.
#[derive(Debug, Clone)]
struct Entry {
    value: usize,
    /// Deadline, and the order in which deadlines were set (ties expire in that order).
    deadline: Option<(u64, u64)>,
    token: Option<u64>,
    version: Hlc,
}

/// What the model predicts for one request; `None` fields are not predicted.
#[derive(Debug, Default)]
struct Model {
    now: u64,
    keys: BTreeMap<usize, Entry>,
    /// (client, key) registrations in order.
    observers: Vec<(usize, usize)>,
    deadlines_set: u64,
}

/// A notice without its version: (client, key, value for SET).
type Event = (String, Bytes, Option<Bytes>);

impl Model {
    fn expire(&mut self) -> Vec<Event> {
        let now = self.now;
        let mut due: Vec<((u64, u64), usize)> = self
            .keys
            .iter()
            .filter_map(|(&k, e)| e.deadline.filter(|&(d, _)| d <= now).map(|d| (d, k)))
            .collect();
        due.sort();
        let mut events = Vec::new();
        for (_, key) in due {
            self.keys.remove(&key);
            events.extend(self.events(key, None));
        }
        events
    }

    fn events(&self, key: usize, value: Option<usize>) -> Vec<Event> {
        self.observers
            .iter()
            .filter(|(_, k)| *k == key)
            .map(|&(c, k)| {
                (
                    CLIENTS[c].to_owned(),
                    Bytes::from_static(KEYS[k]),
                    value.map(|v| Bytes::from_static(VALUES[v])),
                )
            })
            .collect()
    }

    /// The fencing check: Err(()) if rejected, Ok(store the token?).
    fn fence(stored: Option<u64>, presented: Option<u64>) -> Result<bool, ()> {
        match (stored, presented) {
            (None, p) => Ok(p.is_some()),
            (Some(_), None) => Err(()),
            (Some(s), Some(p)) if p < s => Err(()),
            (Some(s), Some(p)) => Ok(p > s),
        }
    }
}

fn token_text(token: u64) -> String {
    Hlc::new(START + token, "lock").to_string()
}

fn events(notices: &[Notice]) -> Vec<Event> {
    notices
        .iter()
        .map(|n| {
            let value = match &n.notification {
                Notification::Set { value } => Some(value.clone()),
                Notification::Delete => None,
            };
            (n.client_id.to_string(), n.key.clone(), value)
        })
        .collect()
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut engine = Engine::new(EngineConfig {
        max_keys: Some(MAX_KEYS),
        ..EngineConfig::default()
    });
    let mut model = Model {
        now: START,
        ..Model::default()
    };
    let mut last_version: Option<Hlc> = None;
    for op in ops {
        let (request, client, token) = match &op {
            Op::Advance(ms) => {
                model.now += ms;
                continue;
            }
            Op::Expire => {
                let notices = engine.expire(model.now);
                prop_assert_eq!(events(&notices), model.expire());
                // Observers of one key share the deletion's version.
                for n in &notices {
                    prop_assert!(last_version.as_ref() <= Some(&n.version));
                    last_version = Some(n.version.clone());
                }
                prop_assert_eq!(engine.len(), model.keys.len());
                let next = model
                    .keys
                    .values()
                    .filter_map(|e| e.deadline.map(|(d, _)| d))
                    .min();
                prop_assert_eq!(engine.next_expiry(), next);
                continue;
            }
            Op::DropClient(c) => {
                engine.drop_client(CLIENTS[*c]);
                model.observers.retain(|(oc, _)| oc != c);
                continue;
            }
            Op::Set {
                key,
                value,
                condition,
                px,
                token,
            } => (
                Request::Set {
                    key: Bytes::from_static(KEYS[*key]),
                    value: Bytes::from_static(VALUES[*value]),
                    flags: SetFlags {
                        condition: *condition,
                        expiry_ms: *px,
                    },
                },
                0,
                *token,
            ),
            Op::Get(key) => (
                Request::Get {
                    key: Bytes::from_static(KEYS[*key]),
                },
                0,
                None,
            ),
            Op::Del { key, token } => (
                Request::Del {
                    key: Bytes::from_static(KEYS[*key]),
                },
                0,
                *token,
            ),
            Op::VDel { key, value, token } => (
                Request::VDel {
                    key: Bytes::from_static(KEYS[*key]),
                    value: Bytes::from_static(VALUES[*value]),
                },
                0,
                *token,
            ),
            Op::Observe(c, key) | Op::Stop(c, key) => (
                Request::KeyNotify {
                    key: Bytes::from_static(KEYS[*key]),
                    stop: matches!(op, Op::Stop(..)),
                },
                *c,
                None,
            ),
        };
        let ts = Hlc::new(model.now, "client").to_string();
        let ft = token.map(token_text);
        let ctx = RequestContext {
            client_id: CLIENTS[client],
            timestamp: Some(&ts),
            fencing_token: ft.as_deref(),
            persist: false,
            now_ms: model.now,
        };
        // Through the wire format, as the service does.
        let outcome = engine.apply_payload(&request.encode(), &ctx);
        let mut expected_events = model.expire();

        let (response, version_is_new) = match op {
            Op::Set {
                key,
                value,
                condition,
                px,
                token,
            } => {
                let existing = model.keys.get(&key).cloned();
                match Model::fence(existing.as_ref().and_then(|e| e.token), token) {
                    Err(()) => (None, false),
                    Ok(store_token) => {
                        let allowed = match condition {
                            SetCondition::Always => true,
                            SetCondition::OnlyIfAbsent => existing.is_none(),
                            SetCondition::OnlyIfAbsentOrEqual => {
                                existing.as_ref().is_none_or(|e| e.value == value)
                            }
                        };
                        if !allowed {
                            prop_assert_eq!(
                                &outcome.version,
                                &existing.as_ref().map(|e| e.version.clone())
                            );
                            (Some(Response::Integer(-1)), false)
                        } else if existing.is_none() && model.keys.len() >= MAX_KEYS {
                            (None, false)
                        } else {
                            let version = outcome.version.clone().unwrap_or(Hlc::new(0, ""));
                            model.deadlines_set += 1;
                            let seq = model.deadlines_set;
                            model.keys.insert(
                                key,
                                Entry {
                                    value,
                                    deadline: px.map(|ms| (model.now + ms, seq)),
                                    token: if store_token {
                                        token
                                    } else {
                                        existing.and_then(|e| e.token)
                                    },
                                    version,
                                },
                            );
                            expected_events.extend(model.events(key, Some(value)));
                            (Some(Response::Ok), true)
                        }
                    }
                }
            }
            Op::Get(key) => {
                let entry = model.keys.get(&key);
                prop_assert_eq!(&outcome.version, &entry.map(|e| e.version.clone()));
                (
                    Some(entry.map_or(Response::Nil, |e| {
                        Response::Value(Bytes::from_static(VALUES[e.value]))
                    })),
                    false,
                )
            }
            Op::Del { key, token } | Op::VDel { key, token, .. } => {
                let expected_value = match op {
                    Op::VDel { value, .. } => Some(value),
                    _ => None,
                };
                match model.keys.get(&key).cloned() {
                    None => (Some(Response::Integer(0)), false),
                    Some(entry) => match Model::fence(entry.token, token) {
                        Err(()) => (None, false),
                        Ok(_) if expected_value.is_some_and(|v| v != entry.value) => {
                            (Some(Response::Integer(-1)), false)
                        }
                        Ok(_) => {
                            prop_assert_eq!(&outcome.version, &Some(entry.version));
                            model.keys.remove(&key);
                            expected_events.extend(model.events(key, None));
                            (Some(Response::Integer(1)), false)
                        }
                    },
                }
            }
            Op::Observe(c, key) => {
                if !model.observers.contains(&(c, key)) {
                    model.observers.push((c, key));
                }
                (Some(Response::Ok), false)
            }
            Op::Stop(c, key) => {
                let before = model.observers.len();
                model.observers.retain(|&o| o != (c, key));
                let stopped = model.observers.len() < before;
                (
                    Some(if stopped {
                        Response::Ok
                    } else {
                        Response::Integer(0)
                    }),
                    false,
                )
            }
            Op::Advance(_) | Op::Expire | Op::DropClient(_) => unreachable!(),
        };
        match response {
            Some(response) => prop_assert_eq!(&outcome.response, &response, "{:?}", op),
            // Rejections (fencing, quota) are checked for being errors; which one is
            // covered by the rule tests.
            None => prop_assert!(
                matches!(outcome.response, Response::Error(_)),
                "{:?} gave {:?}",
                op,
                outcome.response
            ),
        }
        prop_assert_eq!(events(&outcome.notices), expected_events, "{:?}", op);
        // Versions grow: a SET's version is above every earlier one, and notices (expiry
        // DELETEs first, then the SET's own, sharing its version) never go back.
        if version_is_new {
            prop_assert!(last_version < outcome.version, "versions must grow");
        }
        for n in &outcome.notices {
            prop_assert!(last_version.as_ref() <= Some(&n.version));
            last_version = Some(n.version.clone());
        }
        if version_is_new {
            prop_assert!(last_version <= outcome.version);
            last_version = outcome.version.clone();
        }
        prop_assert_eq!(engine.len(), model.keys.len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn engine_agrees_with_a_naive_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}
